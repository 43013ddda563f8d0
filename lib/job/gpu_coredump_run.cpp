// The coredump variant's core dump read after the runs: a run's progress lines, cuda-gdb's reading of
// the file where it is on PATH, and the kernel matched to the wrapper's call sites and the culprit.

#include "job/gpu_coredump_run.hpp"

#include <fmt/format.h>

#include "classify/gpu_coredump.hpp"
#include "common/files.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

constexpr const char* k_coredump_env = "CUDA_ENABLE_COREDUMP_ON_EXCEPTION";

// cuda-gdb's reading of `file` into `d`; false with d.debugger_note saying why not.
bool read_with_cuda_gdb(const fs::path& file, const fs::path& run_dir, double timeout_s, GpuCoreDump& d,
                        std::string& note) {
  auto gdb = find_program("cuda-gdb");
  if (!gdb) {
    note = "cuda-gdb is not on PATH";
    return false;
  }
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    note = "the core file is not there";
    return false;
  }
  SpawnSpec spec;
  spec.argv = {gdb->string(), "--batch", "-ex", "target cudacore " + file.string()};
  spec.env = current_environment();
  spec.stdout_path = run_dir / "cuda-gdb.txt";
  spec.stderr_path = run_dir / "cuda-gdb.stderr.txt";
  spec.timeout_s = timeout_s;
  ExitStatus st = run_process(spec);
  std::string text = read_file_head(spec.stdout_path, 1 << 20);
  if (read_cuda_gdb_output(text, d)) {
    return true;
  }
  note = st.how == ExitStatus::How::timed_out ? fmt::format("cuda-gdb did not finish in {:g} s", timeout_s)
                                              : "cuda-gdb named no kernel (" + st.describe() + "; cuda-gdb.txt)";
  return false;
}

}  // namespace

std::optional<CoreDumpReading> read_gpu_coredump(const fs::path& runs_dir, const Report& report,
                                                 const std::vector<CallSite>& sites, double timeout_s) {
  for (const RunRecord& run : report.runs) {
    auto it = run.env.find(k_coredump_env);
    if (it == run.env.end() || it->second != "1") {
      continue;
    }
    const fs::path dir = runs_dir / run.id;
    auto dump = coredump_from_progress(read_file_head(dir / "stderr.txt", 16 << 20));
    if (!dump) {
      continue;
    }
    CoreDumpReading r;
    r.run = run.id;
    fs::path file;
    if (!dump->file.empty()) {
      file = fs::path(dump->file).is_absolute() ? fs::path(dump->file) : dir / dump->file;
      std::error_code ec;
      if (fs::exists(file, ec)) {
        r.file = display_path(file);
      }
    }
    read_with_cuda_gdb(file, dir, timeout_s, *dump, r.debugger_note);
    r.exception = dump->exception;
    r.pc = dump->pc;
    r.kernel = dump->kernel;
    r.grid = dump->grid;
    r.block = dump->block;
    r.thread = dump->thread;
    r.launch = dump->launch;
    r.device = dump->device;
    r.sm = dump->sm;
    r.read_by_debugger = dump->read_by_debugger;
    if (!r.kernel.empty()) {
      for (const CallSite& s : sites) {
        if (s.kernel == r.kernel) {
          r.call_sites.push_back(s.index);
        }
      }
      if (report.culprit && !report.culprit->kernel.empty()) {
        r.agrees = report.culprit->kernel == r.kernel;
      }
    }
    return r;
  }
  return std::nullopt;
}

}  // namespace aoti_bisect
