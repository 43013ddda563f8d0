// The wrapper rewrite: the package's wrapper.cpp with probe calls inserted
// (codegen/rewrite.hpp), compiled with the command the package recorded, its
// kernel.cpp compiled as recorded (in parallel), its weights cut out of its
// library and relinked as the same blob. For a CUDA package, the cubins stay
// in the package (loaded at run time) and probes go around Triton launches.
// Cached by content. The instrumented package is a copy of the extracted one
// (hard links) with the new library and wrapper; a run of it must return the
// package's outputs bit for bit.

#include "search/source_rewrite.hpp"

#include <chrono>

#include <fmt/format.h>

#include "archive/elf.hpp"
#include "codegen/rewrite.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "inductor/build.hpp"
#include "package/facts.hpp"
#include "process/process.hpp"
#include "search/library_rebuild.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::variant<ProbedModel, std::string> RewriteSource::prepare(JobContext& job, const BisectSetup& s, Predicate pred) {
  if (s.original.dir.empty() || !s.wrapper.found || s.wrapper.call_sites.empty()) {
    return std::string("the package has no wrapper source listing its call sites");
  }
  // A CUDA package's Triton kernels are cubins the library loads from the
  // package at run time: only the wrapper is recompiled (with the recorded
  // command, which names the CUDA include paths). Its kernel.cpp, where
  // there is one, holds no more than the CPU kernels.
  if ((job.device_key == "cpu" && s.model.kernel_cpp.empty()) || s.model.shared_object.empty()) {
    return std::string("the package has no kernel source or no library to rebuild");
  }
  if (job.device_key != "cpu" && job.device_key != "cuda") {
    return "rewriting a " + job.device_key + " package is not implemented";
  }
  auto base = package_model_base(job, s, pred);
  if (auto* why = std::get_if<std::string>(&base)) {
    return *why;
  }
  Recorder& rec = job.recorder;
  rec.begin_phase("build", "the package's wrapper with probe calls, recompiled with its recorded commands");
  auto t0 = Clock::now();
  fs::path model_dir = s.original.dir / "data" / "aotinductor" / s.model.name;
  fs::path so = model_dir / fs::path(s.model.shared_object).filename();
  try {
    std::string kernel = s.model.kernel_cpp.empty() ? "" : s.pkg.read_entry(s.model.kernel_cpp);
    LibrarySources src{"", s.pkg.read_entry(s.model.wrapper_cpp), kernel, so, !m_recorded_flags};
    src.wrapper = insert_probes(src.recorded_wrapper, s.wrapper);
    RebuiltLibrary built = rebuild_library(src, job.settings.cache_dir, job.settings.build_timeout_s);
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    BuildRecord record;
    record.purpose = "rewrite";
    record.source = std::string(probe_source_name(ProbeSource::rewrite));
    record.fidelity = m_recorded_flags ? "not yet checked (the wrapper at its recorded flags)"
                                       : "not yet checked (the wrapper at -O0, the kernels at their recorded flags)";
    record.key = built.library.parent_path().filename().string();
    record.cache_hit = built.cache_hit;
    record.seconds = seconds;
    record.torch_version = s.runner_torch_version;
    rec.build(record, true);
    rec.progress().note(fmt::format("probes: the package's wrapper rewritten, {} in {:.1f} s",
                                    built.cache_hit ? "found in the cache" : "rebuilt", seconds));
    fs::path copy = copy_package_with(s.original.dir, s.model.name, built.library, s.model.wrapper_cpp, src.wrapper,
                                      job.work_dir / "rewritten");
    ProbedModel m = std::move(std::get<ProbedModel>(base));
    m.wrapper = parse_wrapper(src.wrapper);
    m.model = ModelDir{copy, write_model_facts(m.wrapper, job.work_dir / "rewritten-facts.json"), {}};
    m.fidelity = ProbedModel::Fidelity::required;
    return m;
  } catch (const Error& e) {
    return redact_paths(e.what());
  }
}

std::optional<std::string> RewriteSource::retry_untrusted() {
  if (m_recorded_flags) {
    return std::nullopt;
  }
  m_recorded_flags = true;
  return "rebuilding its wrapper with the recorded flags instead of -O0";
}

}  // namespace aoti_bisect
