// Interposition: probes from the package alone. The call sites and the
// kernels' signatures come from the package's wrapper.cpp, the extern
// shims' from the installed C-shim headers; the hook library is compiled
// once per content (cached) and bound by the runner into the model's GOT.
// For wrong values, the graph nodes come from the exported program's build,
// matched by call site. Before trusting it, every call site must be reachable: the model library
// must not bind its own symbols, must have a GOT slot for every function a
// call site calls, and (where objdump can tell) as many PLT calls to each as
// the wrapper makes. A CUDA model's Triton launches are seen through the
// CUDA driver calls it makes through its PLT (cuModuleGetFunction,
// cuLaunchKernel); its cuBLAS and other extern calls are C-shim calls
// (generated/c_shim_cuda.h) like the CPU ones.

#include "search/source_interpose.hpp"

#include <unistd.h>

#include <chrono>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "archive/elf.hpp"
#include "archive/zip_stored.hpp"
#include "codegen/hooks.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "evidence/wrapper_layout.hpp"
#include "inductor/build.hpp"
#include "package/package.hpp"
#include "process/process.hpp"

#ifndef AOTI_BISECT_TORCH_INCLUDE
#define AOTI_BISECT_TORCH_INCLUDE ""
#endif

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// The C-shim headers of the torch the runner was built with.
// `runner_torch_dir`: the torch of a runner picked for the package
// (harness/runner_choice.hpp); empty: the one this tool was built against.
std::string shim_header_text(const fs::path& runner_torch_dir) {
  const char* env = std::getenv("AOTI_BISECT_TORCH_INCLUDE");
  fs::path include = env != nullptr && *env      ? fs::path(env)
                     : !runner_torch_dir.empty() ? runner_torch_dir / "include"
                                                 : fs::path(AOTI_BISECT_TORCH_INCLUDE);
  std::string text;
  fs::path base = include / "torch" / "csrc" / "inductor" / "aoti_torch";
  for (const char* h : {"c/shim.h", "c/shim_cpu.h", "c/shim_deprecated.h", "generated/c_shim_cpu.h",
                        "generated/c_shim_aten.h", "generated/c_shim_cuda.h"}) {
    std::error_code ec;
    if (fs::is_regular_file(base / h, ec)) {
      text += read_file(base / h, "C-shim header") + "\n";
    }
  }
  return text;
}

// Where the PLT calls of a model library stored in the package are kept
// once counted: by the entry's name (Inductor's hash of the wrapper's
// source), size and CRC-32, as the archive records them. objdump takes
// half a second on a 17 MB library; "" when the entry is not stored.
fs::path plt_cache_file(const Package& pkg, const std::string& entry, const fs::path& cache_dir) {
  auto stored = stored_entry(pkg.path(), entry);
  if (!stored) {
    return {};
  }
  std::string key = sha256_hex(fmt::format("{}\n{}\n{:08x}", entry, stored->size, stored->crc)).substr(0, 24);
  return fs::absolute(cache_dir.empty() ? default_cache_dir() : cache_dir) / "plt-calls" / (key + ".txt");
}

std::optional<std::map<std::string, int>> read_plt_cache(const fs::path& file) {
  std::error_code ec;
  if (file.empty() || !fs::is_regular_file(file, ec)) {
    return std::nullopt;
  }
  std::map<std::string, int> calls;
  std::istringstream in(read_file(file, "PLT call counts"));
  std::string symbol;
  int n = 0;
  while (in >> symbol >> n) {
    calls[symbol] = n;
  }
  return calls;
}

// PLT calls per function in the model library's code, or nothing when
// objdump is not there to tell. Counted once per library (`cache`: where
// they are kept, "" for none).
std::optional<std::map<std::string, int>> plt_calls(const fs::path& so, const fs::path& work, const fs::path& cache) {
  if (auto cached = read_plt_cache(cache)) {
    return cached;
  }
  auto objdump = find_program("objdump");
  if (!objdump) {
    return std::nullopt;
  }
  SpawnSpec spec;
  spec.argv = {objdump->string(), "-d", "--no-show-raw-insn", so.string()};
  spec.env = current_environment();
  spec.stdout_path = work / "objdump.txt";
  spec.timeout_s = 120;
  if (!run_process(spec).ok()) {
    return std::nullopt;
  }
  std::map<std::string, int> calls;
  std::string text = read_file(spec.stdout_path, "disassembly");
  for (size_t p = text.find("@plt>"); p != std::string::npos; p = text.find("@plt>", p + 1)) {
    size_t line = text.rfind('\n', p);
    line = line == std::string::npos ? 0 : line;
    std::string_view l(text.data() + line, p - line);
    if (l.find("call") == std::string_view::npos) {
      continue;
    }
    size_t lt = l.rfind('<');
    if (lt != std::string_view::npos) {
      ++calls[std::string(l.substr(lt + 1))];
    }
  }
  if (!cache.empty()) {
    std::string out;
    for (const auto& [symbol, n] : calls) {
      out += fmt::format("{} {}\n", symbol, n);
    }
    try {
      fs::create_directories(cache.parent_path());
      write_file_atomic(cache, out);
    } catch (const std::exception&) {
      // an unwritable cache: counted again next time
    }
  }
  return calls;
}

// Why the hooks cannot see every call site, or "".
std::string unreachable(const WrapperInfo& wrapper, const fs::path& so, const fs::path& work, const fs::path& cache) {
  ElfFacts elf = read_elf_facts(so);
  if (elf.symbolic) {
    return "the model library binds its own symbols (DT_SYMBOLIC, as with -Bsymbolic): its calls to its kernels "
           "bypass the PLT";
  }
  // What each call site calls through the model's GOT: its kernel or
  // shim; for a Triton launch, the CUDA driver (its call_triton_<kernel> is
  // a static function of the wrapper, whose launchKernel calls
  // cuLaunchKernel, and whose loadKernel calls cuModuleGetFunction).
  std::map<std::string, int> wrapper_calls;
  for (const auto& site : wrapper.call_sites) {
    if (site.kind == KernelKind::triton) {
      ++wrapper_calls["cuLaunchKernel"];
      ++wrapper_calls["cuModuleGetFunction"];
    } else {
      ++wrapper_calls[called_symbol(site)];
    }
  }
  std::map<std::string, bool> has_slot;
  for (const auto& slot : elf.slots) {
    has_slot[slot.symbol] = true;
  }
  for (const auto& [kernel, n] : wrapper_calls) {
    if (!has_slot.count(kernel)) {
      return fmt::format("the model library calls {} without a PLT or GOT slot (a direct call the hooks cannot see)",
                         kernel);
    }
  }
  if (auto calls = plt_calls(so, work, cache)) {
    for (const auto& [kernel, n] : wrapper_calls) {
      auto it = calls->find(kernel);
      int seen = it == calls->end() ? 0 : it->second;
      // More PLT calls than the wrapper's are fine (inlined copies of the
      // call in unrolled code); fewer mean some calls are direct.
      if (seen < n && elf.defined.count(kernel)) {
        return fmt::format(
            "the model library makes {} PLT calls to {}, the wrapper {}: some calls are direct and "
            "the hooks would not see them",
            seen, kernel, n);
      }
    }
  }
  return "";
}

// Compiles the hook source once per content; returns the library and
// whether it came from the cache.
std::pair<fs::path, bool> compile_hooks(const std::string& source, const fs::path& cache_dir, double timeout_s) {
  std::string cxx = std::getenv("CXX") != nullptr && *std::getenv("CXX") ? std::getenv("CXX") : "c++";
  auto compiler = find_program(cxx);
  if (!compiler) {
    compiler = find_program("g++");
  }
  if (!compiler) {
    throw Error(ErrorKind::cannot_test, "interposition needs a C++ compiler (c++ or g++ on PATH, or CXX)");
  }
  std::string key = sha256_hex(source + "\n" + compiler->string()).substr(0, 24);
  fs::path dir = fs::absolute(cache_dir.empty() ? default_cache_dir() : cache_dir) / "hooks" / key;
  fs::path lib = dir / "hooks.so";
  std::error_code ec;
  if (fs::is_regular_file(lib, ec)) {
    return {lib, true};
  }
  fs::create_directories(dir, ec);
  fs::path src = dir / "hooks.cpp";
  write_file_atomic(src, source);
  fs::path tmp = dir / fmt::format("hooks.so.tmp.{}", ::getpid());
  SpawnSpec spec;
  spec.argv = {compiler->string(), "-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-o", tmp.string(), src.string()};
  spec.env = current_environment();
  spec.stderr_path = dir / "compile.log";
  spec.timeout_s = timeout_s;
  ExitStatus st = run_process(spec);
  if (!st.ok()) {
    fs::remove(tmp, ec);
    std::string tail = trim(st.stderr_tail).empty() ? st.describe() : std::string(trim(st.stderr_tail));
    throw Error(ErrorKind::internal, "the hook library did not compile: " + tail.substr(0, tail.find('\n')));
  }
  fs::rename(tmp, lib, ec);
  if (ec) {
    throw Error(ErrorKind::internal, "the hook library cannot be stored in the cache: " + ec.message());
  }
  return {lib, false};
}

}  // namespace

std::variant<ProbedModel, std::string> InterposeSource::prepare(JobContext& job, const BisectSetup& s, Predicate pred) {
  if (s.original.dir.empty() || !s.wrapper.found || s.wrapper.call_sites.empty()) {
    return std::string("the package has no wrapper source listing its call sites");
  }
  if (s.model.shared_object.empty()) {
    return std::string("the package has no model library (.so) to bind hooks into");
  }
  auto base = package_model_base(job, s, pred);
  if (auto* why = std::get_if<std::string>(&base)) {
    return *why;
  }
  if (!s.first_trace_model.hooks.empty() && s.first_trace_model.dir == s.original.dir) {
    // The hooks the job's first run bound (search.hpp's first_run_probes): built and recorded then.
    ProbedModel m = std::move(std::get<ProbedModel>(base));
    m.model = s.first_trace_model;
    m.wrapper = s.wrapper;
    m.fidelity = ProbedModel::Fidelity::noted;
    return m;
  }
  Recorder& rec = job.recorder;
  rec.begin_phase("build", "interposition hooks (from the package's own wrapper and kernel source)");
  auto start = Clock::now();
  fs::path so = s.original.dir / "data" / "aotinductor" / s.model.name / fs::path(s.model.shared_object).filename();
  try {
    fs::path cache = plt_cache_file(s.pkg, s.model.shared_object, job.settings.cache_dir);
    if (std::string why = unreachable(s.wrapper, so, job.work_dir, cache); !why.empty()) {
      return why;
    }
    std::string wrapper_text = s.pkg.read_entry(s.model.wrapper_cpp);
    auto kernels = kernel_declarations(wrapper_text);
    if (!s.model.kernel_cpp.empty()) {
      kernels.merge(kernel_declarations(s.pkg.read_entry(s.model.kernel_cpp)));
    }
    HookLibrary hooks =
        generate_hooks(s.wrapper, kernels, shim_declarations(shim_header_text(job.settings.runner_torch_dir)),
                       triton_launches(wrapper_text));
    if (!hooks.problems.empty()) {
      return "no hook for every call site: " + hooks.problems.front();
    }
    auto [lib, hit] = compile_hooks(hooks.source, job.settings.cache_dir, job.settings.build_timeout_s);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    BuildRecord record;
    record.purpose = "hooks";
    record.source = std::string(probe_source_name(ProbeSource::interpose));
    record.fidelity = "the package's own library runs unchanged; hooks forward every call";
    record.key = lib.parent_path().filename().string();
    record.cache_hit = hit;
    record.seconds = seconds;
    record.torch_version = s.runner_torch_version;
    rec.build(record, true);
    // One hook per function the call sites call, however many call it, and
    // the hooks the probes need to follow the model's buffers.
    size_t sites = s.wrapper.call_sites.size();
    size_t others = hooks.hooked.size() - static_cast<size_t>(hooks.site_functions);
    rec.progress().note(
        fmt::format("probes: interposition, {} hook{} ({} on the functions the {} call site{} call{}, "
                    "one per function{}) {} in {:.2f} s",
                    hooks.hooked.size(), hooks.hooked.size() == 1 ? "" : "s", hooks.site_functions, sites,
                    sites == 1 ? "" : "s", sites == 1 ? "s" : "",
                    others == 0 ? std::string()
                                : fmt::format("; {} on the C-shim or driver calls the probes follow "
                                              "buffers through",
                                              others),
                    hit ? "found in the cache" : "compiled", seconds));
    ProbedModel m = std::move(std::get<ProbedModel>(base));
    m.model = s.original;
    m.model.hooks = lib;
    m.wrapper = s.wrapper;
    m.fidelity = ProbedModel::Fidelity::noted;
    return m;
  } catch (const Error& e) {
    return redact_paths(e.what());
  }
}

}  // namespace aoti_bisect
