// After NaN/Inf are isolated to a cpp kernel: the kernel replayed alone on
// the tensors the evidence run saved, built with every intermediate checked
// (`repro/replay --intermediates`, repro/intermediates.hpp). The first
// intermediate, in the kernel's own order, that turned NaN (or Inf) while
// what it read did not is the root cause (probed_search.hpp).

#include <filesystem>

#include <fmt/format.h>

#include "common/clock.hpp"
#include "common/cpp_text.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "evidence/intermediates.hpp"
#include "evidence/root_cause.hpp"
#include "harness/runner_choice.hpp"
#include "process/process.hpp"
#include "repro/replay_host_build.hpp"
#include "search/probed_search.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// Whether the culprit made NaN (else only Inf): what its outputs hold
// after the launch beyond what they held before.
bool made_nan(const Culprit& c) {
  for (const auto& a : c.args) {
    int64_t had = a.initialized && a.before ? a.before->nan_count : 0;
    if (a.after && a.after->nan_count > had) {
      return true;
    }
  }
  return false;
}

// The first line the replay printed that says why it could not run.
std::string replay_problem(const std::string& out, const ExitStatus& st) {
  for (auto line : cpp_text::split_lines(out)) {
    if (line.find("cannot run:") != std::string_view::npos || line.find("cannot tell:") != std::string_view::npos) {
      return std::string(trim(line));
    }
  }
  return st.describe();
}

}  // namespace

void explain_intermediates(JobContext& job, Predicate pred, Culprit& c, const ReplayResult& replay,
                           const fs::path& repro_dir) {
  if (pred != Predicate::nonfinite || c.root_cause.basis == "unwritten" || c.root_cause.basis == "index") {
    return;  // memory no kernel wrote, an index past its tensor: decided by the probes
  }
  if (c.kind == "triton") {
    c.root_cause.note = "the operation inside a Triton kernel is not replayed: that needs a GPU (not implemented yet)";
    return;
  }
  if (c.kind != "cpp") {
    return;  // an extern call: its inputs and outputs are the evidence
  }
  if (!replay.written || !replay.traced) {
    c.root_cause.note = "the kernel's intermediates were not checked: " +
                        (replay.traced_problem.empty() ? replay.note : replay.traced_problem);
    return;
  }
  job.recorder.progress().note(
      fmt::format("call site {} {}: replaying it alone on its saved inputs with every intermediate checked "
                  "(repro/replay --intermediates)",
                  c.call_index, c.kernel));
  const double start = steady_seconds();
  SpawnSpec spec;
  spec.argv = {fs::absolute(repro_dir / "replay").string(), "--intermediates"};
  spec.env = current_environment();
  spec.env["AOTI_BISECT_REPLAY_CACHE"] =
      replay_cache_dir(job.settings.cache_dir.empty() ? default_cache_dir() : job.settings.cache_dir).string();
  spec.env["AOTI_BISECT_REPLAY_HOST_CACHE"] = replay_host_cache_dir(default_cache_dir()).string();
  fs::path torch_dir = job.settings.runner_torch_dir;
  if (torch_dir.empty()) {
    if (auto beside = default_runner_torch()) {
      torch_dir = beside->torch_dir;
    }
  }
  if (!torch_dir.empty() && !spec.env.count("TORCH_DIR")) {
    spec.env["TORCH_DIR"] = torch_dir.string();
  }
  spec.stdout_path = job.work_dir / "intermediates.stdout.txt";
  spec.timeout_s = std::min(job.settings.build_timeout_s, 900.0);
  spec.tail_bytes = 1 << 16;
  ExitStatus st = run_process(spec);
  double seconds = steady_seconds() - start;
  std::string out;
  std::error_code ec;
  if (fs::is_regular_file(spec.stdout_path, ec)) {
    out = read_file(spec.stdout_path, "the replay's output");
  }
  IntermediateTrace trace = read_intermediate_trace(out);
  if (st.how == ExitStatus::How::interrupted) {
    c.root_cause.note = "the kernel's intermediates were not checked: interrupted";
    return;
  }
  if (!trace.ran) {
    c.root_cause.note = "the kernel's intermediates were not checked: " + redact_paths(replay_problem(out, st));
    return;
  }
  bool nan = made_nan(c);
  if (c.root_cause.basis == "constant" && (st.how != ExitStatus::How::exited || st.exit_code != 1)) {
    return;  // what it makes comes of the constant it reads, which the cause already says
  }
  if (st.how != ExitStatus::How::exited || st.exit_code != 1) {
    c.root_cause.note = fmt::format(
        "the kernel alone on its saved inputs, with its {} intermediates checked, made no new {} (replay exit {}): "
        "no intermediate is named",
        trace.statements, nan ? "NaN" : "Inf",
        st.how == ExitStatus::How::exited ? std::to_string(st.exit_code) : st.describe());
    return;
  }
  std::vector<const IntermediateHit*> chain = introduction(trace, nan);
  if (chain.empty()) {
    c.root_cause.note = fmt::format(
        "the kernel alone on its saved inputs made {} again, but none of its {} probed intermediates turned {} while "
        "what it read did not (what makes them is not an `auto tmpN = ...;` statement)",
        nan ? "NaN" : "Inf", trace.statements, nan ? "NaN" : "Inf");
    return;
  }
  explain_intermediate(c.root_cause, chain, c);
  job.recorder.progress().note(
      fmt::format("call site {} {}: {} ({:.1f} s)", c.call_index, c.kernel, c.root_cause.sentence, seconds));
}

}  // namespace aoti_bisect
