// The wrapper rewrite: the package's wrapper.cpp with probe calls inserted
// (package/rewrite.hpp), compiled with the command the package recorded, its
// kernel.cpp compiled as recorded (in parallel), its weights cut out of its
// library and relinked as the same blob. Cached by content. The instrumented
// package is a copy of the extracted one (hard links) with the new library
// and wrapper; a run of it must return the package's outputs bit for bit.

#include <chrono>
#include <fstream>

#include <fmt/format.h>

#include "build/build.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "package/elf.hpp"
#include "package/facts.hpp"
#include "package/rewrite.hpp"
#include "process/process.hpp"
#include "search/instrumentation.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

struct Rebuilt {
  fs::path library;
  std::string wrapper_text;
  bool cache_hit = false;
};

std::vector<std::string> resolved(std::vector<std::string> argv) {
  if (auto p = find_program(argv.at(0))) {
    argv[0] = p->string();
  }
  return argv;
}

std::string tail_line(const fs::path& log) {
  std::string text = read_file(log, "compiler output");
  size_t e = text.find("error");
  std::string from = e == std::string::npos ? text : text.substr(text.rfind('\n', e) + 1);
  return std::string(trim(from.substr(0, from.find('\n'))));
}

// Runs the commands at once; throws Error(cannot_test) naming the first
// that failed.
void run_all(const std::vector<std::pair<std::string, std::vector<std::string>>>& jobs, const fs::path& dir,
             double timeout_s) {
  ProcessSet set;
  std::map<int, std::string> names;
  for (const auto& [name, argv] : jobs) {
    SpawnSpec spec;
    spec.argv = resolved(argv);
    spec.env = current_environment();
    spec.cwd = dir;
    spec.stderr_path = dir / (name + ".log");
    spec.stdout_path = dir / (name + ".out");
    spec.timeout_s = timeout_s;
    names[set.start(spec)] = name;
  }
  std::string failed;
  while (set.running() > 0) {
    auto [token, st] = set.wait_any();
    if (!st.ok() && failed.empty()) {
      failed = fmt::format("{} ({}): {}", names[token], st.describe(), tail_line(dir / (names[token] + ".log")));
    }
  }
  if (!failed.empty()) {
    throw Error(ErrorKind::cannot_test, "the rewritten package did not build: " + failed);
  }
}

Rebuilt rebuild(JobEnv& env, const BisectSetup& s, const fs::path& so) {
  std::string wrapper = s.pkg.read_entry(s.model.wrapper_cpp);
  std::string kernel = s.pkg.read_entry(s.model.kernel_cpp);
  auto wrapper_cmd = recorded_command(wrapper, "Compile cmd");
  auto link_cmd = recorded_command(wrapper, "Link cmd");
  auto kernel_cmd = recorded_command(kernel, "Compile cmd");
  if (!wrapper_cmd || !link_cmd || !kernel_cmd) {
    throw Error(ErrorKind::cannot_test, "the package's sources do not record their compile and link commands");
  }
  ElfFacts elf = read_elf_facts(so);
  auto start = elf.blobs.find("_binary_constants_bin_start");
  auto end = elf.blobs.find("_binary_constants_bin_end");
  if (start == elf.blobs.end() || end == elf.blobs.end() || end->second.file_offset < start->second.file_offset) {
    throw Error(ErrorKind::cannot_test, "the package's library holds no weights blob to relink");
  }
  Rebuilt out;
  out.wrapper_text = insert_probes(wrapper, s.wrapper);
  std::string key = sha256_hex(out.wrapper_text + "\n" + sha256_hex(kernel) + "\n" + sha256_file(so) + "\n" +
                               join(*wrapper_cmd, " ") + join(*link_cmd, " ") + join(*kernel_cmd, " "))
                        .substr(0, 24);
  fs::path dir = fs::absolute(env.settings.cache_dir.empty() ? default_cache_dir() : env.settings.cache_dir) /
                 "rewrite" / key;
  out.library = dir / so.filename();
  std::error_code ec;
  if (fs::is_regular_file(out.library, ec)) {
    out.cache_hit = true;
    return out;
  }
  fs::path tmp = dir.string() + fmt::format(".tmp.{}", ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  write_file_atomic(tmp / "wrapper.cpp", out.wrapper_text);
  write_file_atomic(tmp / "kernel.cpp", kernel);
  {
    std::ifstream in(so, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(start->second.file_offset));
    std::string blob(end->second.file_offset - start->second.file_offset, '\0');
    in.read(blob.data(), static_cast<std::streamsize>(blob.size()));
    write_file_atomic(tmp / "constants.bin", blob);
  }
  write_file_atomic(tmp / "weights.S", weights_assembly("constants.bin", start->second.writable));
  double timeout = env.settings.build_timeout_s;
  run_all({{"wrapper", adapt_compile(*wrapper_cmd, "wrapper.cpp", "wrapper.o")},
           {"kernel", adapt_compile(*kernel_cmd, "kernel.cpp", "kernel.o")},
           {"weights", {wrapper_cmd->front(), "-c", "weights.S", "-o", "weights.o"}}},
          tmp, timeout);
  run_all({{"link", adapt_link(*link_cmd,
                               {{".wrapper.o", "wrapper.o"}, {".kernel.o", "kernel.o"}, {".weights.o", "weights.o"}},
                               so.filename().string())}},
          tmp, timeout);
  fs::remove_all(dir, ec);
  fs::rename(tmp, dir, ec);
  if (ec) {
    throw Error(ErrorKind::internal, "the rewritten package cannot be stored in the cache: " + ec.message());
  }
  return out;
}

}  // namespace

std::variant<ProbedModel, std::string> RewriteSource::prepare(JobEnv& env, const BisectSetup& s, Predicate pred) {
  if (s.original.dir.empty() || !s.wrapper.found || s.wrapper.call_sites.empty()) {
    return std::string("the package has no wrapper source listing its call sites");
  }
  if (s.model.kernel_cpp.empty() || s.model.shared_object.empty()) {
    return std::string("the package has no kernel source or no library to rebuild");
  }
  if (env.device_key != "cpu") {
    return std::string("rewriting a CUDA package is not implemented yet");
  }
  auto base = package_model_base(env, s, pred);
  if (auto* why = std::get_if<std::string>(&base)) {
    return *why;
  }
  Recorder& rec = env.recorder;
  rec.begin_phase("build", "the package's wrapper with probe calls, recompiled with its recorded commands");
  auto t0 = Clock::now();
  fs::path model_dir = s.original.dir / "data" / "aotinductor" / s.model.name;
  fs::path so = model_dir / fs::path(s.model.shared_object).filename();
  try {
    Rebuilt built = rebuild(env, s, so);
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    BuildRecord record;
    record.purpose = "rewrite";
    record.source = "rewrite";
    record.fidelity = "not yet checked";
    record.key = built.library.parent_path().filename().string();
    record.cache_hit = built.cache_hit;
    record.seconds = seconds;
    record.torch_version = s.runner_torch_version;
    rec.build(record, true);
    rec.progress().note(fmt::format("probes: the package's wrapper rewritten, {} in {:.1f} s",
                                    built.cache_hit ? "found in the cache" : "rebuilt", seconds));
    // A copy of the extracted package (hard links) with the new library and wrapper.
    fs::path copy = env.work_dir / "rewritten";
    std::error_code ec;
    fs::remove_all(copy, ec);
    fs::copy(s.original.dir, copy, fs::copy_options::recursive | fs::copy_options::create_hard_links, ec);
    if (ec) {
      return "the extracted package cannot be copied: " + ec.message();
    }
    fs::path copy_model = copy / "data" / "aotinductor" / s.model.name;
    fs::path copy_so = copy_model / so.filename();
    fs::path copy_wrapper = copy_model / fs::path(s.model.wrapper_cpp).filename();
    fs::remove(copy_so, ec);
    fs::copy_file(built.library, copy_so, ec);
    fs::remove(copy_wrapper, ec);
    write_file_atomic(copy_wrapper, built.wrapper_text);
    ProbedModel m = std::move(std::get<ProbedModel>(base));
    m.wrapper = parse_wrapper(built.wrapper_text);
    m.model = ModelDir{copy, write_model_facts(m.wrapper, env.work_dir / "rewritten-facts.json"), {}};
    m.fidelity = ProbedModel::Fidelity::required;
    return m;
  } catch (const Error& e) {
    return redact_paths(e.what());
  }
}

}  // namespace aoti_bisect
