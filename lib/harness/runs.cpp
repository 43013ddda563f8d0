// Runs: child runs through the ChildRunner seam, one or several at once, each finished one classified
// and recorded in the report.

#include "harness/runs.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/files.hpp"

namespace aoti_bisect {

namespace {

RunRecord make_record(const ChildRequest& req, const ChildResult& r) {
  RunRecord rec;
  rec.id = req.id;
  rec.group = req.group;
  rec.variant = req.variant;
  rec.repeat = req.repeat;
  rec.env = req.env;
  rec.probe_plan = req.probe_plan ? req.probe_plan->summary() : "none";
  rec.outcome = r.cls.kind;
  rec.exit = r.cls.time_limit_s ? fmt::format("stopped at its {:g} s limit (exit 14)", *r.cls.time_limit_s)
                                : r.status.describe();
  if (r.status.how == ExitStatus::How::exited) {
    rec.exit_code = r.status.exit_code;
  }
  if (r.status.how == ExitStatus::How::signaled || (r.status.how == ExitStatus::How::timed_out && r.status.signal)) {
    rec.signal = r.status.signal;
  }
  rec.core_dumped = r.status.core_dumped;
  rec.seconds = r.status.seconds;
  rec.first_error_line = redact_paths(r.cls.first_line);
  rec.outputs = r.cls.outputs;
  rec.comparison = r.cls.comparison;
  return rec;
}

}  // namespace

ChildResult Runs::record(const ChildRequest& req, ChildOutput out) {
  ChildResult r;
  r.status = std::move(out.status);
  r.batches = batch_runs(out.events);
  r.events = r.batches.empty() ? std::move(out.events) : last_batch_view(out.events);
  r.stdout_text = std::move(out.stdout_text);
  r.cls = classify_run(r.status, r.events);
  if (!r.batches.empty()) {
    classify_batches(r.batches, out.events, r.cls);
  }
  // Threads that cannot be made under the address-space limit the tool set
  // (each thread's stack is address space): the tool's limit, not the model.
  if (out.memory_limit_bytes > 0 && !r.cls.internal && !r.cls.cannot_test &&
      (r.cls.first_line.find("Thread creation failed") != std::string::npos ||
       r.cls.first_line.find("Resource temporarily unavailable") != std::string::npos)) {
    r.cls.internal = fmt::format(
        "the run could not make its threads within its address-space limit ({} MiB, "
        "--memory-limit): {}; give a larger --memory-limit",
        out.memory_limit_bytes >> 20, r.cls.first_line);
  }
  r.finished = r.status.how != ExitStatus::How::interrupted;
  if (r.finished) {
    m_recorder.run_finished(make_record(req, r));
    if (req.group == "search") {
      // Not its events: a trace of 10,000 call sites is a hundred megabytes.
      m_search_runs.push_back({req, ChildResult{r.status, r.cls, r.batches, Events{}, "", r.finished}});
    }
  }
  return r;
}

ChildResult Runs::run(const ChildRequest& req) {
  std::vector<ChildResult> results;
  run_all({req}, 1, results);
  return std::move(results.front());
}

bool Runs::run_all(const std::vector<ChildRequest>& reqs, int jobs, std::vector<ChildResult>& results) {
  results.assign(reqs.size(), ChildResult{});
  std::map<int, size_t> running;
  size_t next = 0;
  while (next < reqs.size() || !running.empty()) {
    while (next < reqs.size() && running.size() < static_cast<size_t>(std::max(1, jobs)) && !interrupt_requested()) {
      m_recorder.run_started(reqs[next].id);
      m_search_started += reqs[next].group == "search" ? 1 : 0;
      running[m_children.start(reqs[next])] = next;
      ++next;
    }
    if (running.empty()) {
      return false;
    }
    auto [token, out] = m_children.wait_any();
    auto it = running.find(token);
    if (it == running.end()) {
      return false;
    }
    size_t idx = it->second;
    running.erase(it);
    if (out.status.how == ExitStatus::How::interrupted) {
      m_children.kill_all();
      return false;
    }
    results[idx] = record(reqs[idx], std::move(out));
    if (results[idx].cls.internal || results[idx].cls.cannot_test) {
      m_children.kill_all();
      return true;
    }
  }
  return !interrupt_requested();
}

}  // namespace aoti_bisect
