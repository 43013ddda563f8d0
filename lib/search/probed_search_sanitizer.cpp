// After a fault is isolated on a GPU (issue 41, item 3): one run under
// compute-sanitizer's memcheck, aimed at the culprit's kernel, with the
// culprit's arguments probed before its launch for their allocations, so
// that each address the sanitizer reports is named as the buffer it falls
// in or next to (probed_search.hpp).

#include <fmt/format.h>

#include "classify/sanitizer.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "matrix/matrix.hpp"
#include "process/process.hpp"
#include "protocol/runner.hpp"
#include "search/probed_search.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// The culprit's arguments as its probes saw them before the launch.
std::vector<BufferExtent> buffers_at(const Events& events, int k) {
  std::vector<BufferExtent> out;
  for (const auto& e : events.of({EventKind::probe}, k)) {
    if (e.value("phase", "") != "before" || !e.contains("storage")) {
      continue;
    }
    BufferExtent b;
    b.name = e.value("tensor", "");
    const auto& stats = e.value("stats", nlohmann::json::object());
    b.dtype = stats.value("dtype", "");
    b.shape = stats.value("shape", std::vector<int64_t>{});
    try {
      b.address = std::stoull(e["storage"].value("address", "0"), nullptr, 16);
    } catch (const std::exception&) {
      continue;
    }
    b.bytes = e["storage"].value("bytes", uint64_t{0});
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace

bool CulpritStage::aim_sanitizer(int k, Culprit& c) {
  SanitizerPass pass;
  auto tool = find_program("compute-sanitizer");
  if (!tool) {
    return true;  // the report's notes already say memcheck was left out
  }
  // A Triton kernel is a device function of that name; an extern call's
  // name is the C shim's, so its pass is not filtered.
  pass.command = memcheck_command(tool->string(), c.kernel, c.kind == "triton");
  const std::map<std::string, std::string> env = {
      {k_run_under_env, pass.command},
      {"CUDA_LAUNCH_BLOCKING", "1"},
      {"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"},  // every tensor its own allocation
  };
  ProbePlan plan;
  plan.ranges.push_back({k, k, ProbeMode::stats});
  m_job.recorder.plan_runs(1);
  pass.run = next_run_id("sanitizer");
  ChildResult r = child("sanitizer", plan, {}, env);
  m_bis.runs = m_run_no;
  if (!r.finished) {
    return !interrupt_requested();
  }
  std::string text = read_file_head(m_job.settings.out_dir / "runs" / pass.run / "stderr.txt", 4 << 20);
  const auto buffers = buffers_at(r.events, k);
  for (const SanitizerError& e : parse_sanitizer_errors(text, 5)) {
    SanitizerFinding f{e.what, e.kernel, e.thread, e.block, "", "", e.address_note};
    if (e.address) {
      f.address = fmt::format("{:#x}", *e.address);
      f.buffer = describe_address(*e.address, buffers);
    }
    pass.errors.push_back(std::move(f));
  }
  if (pass.errors.empty()) {
    pass.note = fmt::format(
        "no error reported ({}); a fault the sanitizer does not see, such as a device-side "
        "assert, or one in code it was not aimed at",
        r.status.describe());
  }
  m_bis.steps.push_back(
      {k, k, "sanitizer", pass.errors.empty() ? "clean" : "reproduces", 1, pass.errors.empty() ? 0 : 1,
       pass.errors.empty()
           ? pass.note
           : redact_paths(pass.errors.front().what +
                          (pass.errors.front().buffer.empty() ? "" : ": " + pass.errors.front().buffer))});
  c.sanitizer = std::move(pass);
  return true;
}

}  // namespace aoti_bisect
