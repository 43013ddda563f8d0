// The flag matrix's first run probed (issue 67): the baseline as the
// search's trace run, a plain run where the probes may have changed it, and
// the search's runs in the baseline's environment counted as the matrix's
// (matrix_phase.hpp).
#include "job/matrix_phase.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace aoti_bisect {

// The first run with every call site's values read: the baseline, and the
// search's trace. A run the probes may have changed (no failure, or stopped
// at its time limit, which probes reach sooner) is followed by a plain one,
// which is then the baseline. A run that failed in the tool stops the job
// as a plain one does (broken_run).
Step<> MatrixPhase::run_probed_baseline(const FirstRunProbes& probes) {
  Recorder& rec = m_job.recorder;
  rec.begin_phase("baseline", "one run in a fresh child, its probes reading every call site (the search's trace)");
  ChildRequest req = requests(m_plan).front();
  req.model = probes.model;
  req.probe_plan = probes.plan;
  std::vector<ChildResult> results;
  if (!m_job.runs.run_all({req}, 1, results) && interrupt_requested()) {
    return interrupted_during("during the baseline run");
  }
  ChildResult& probed = results.front();
  if (!probed.finished || (probed.cls.kind != OutcomeKind::ok && !probed.cls.time_limit_s)) {
    // Its events (every call site's probes: 16 MB for 10,000 sites) are
    // kept once, in the search's trace; the matrix reads its outcome.
    Events events = std::move(probed.events);
    m_runs.clear();
    m_runs.push_back({m_plan.front(), probed});
    probed.events = std::move(events);
    m_first_trace = std::make_shared<const ChildResult>(std::move(probed));
    m_probed_first = probes.model;
    return Go{};
  }
  rec.plan_runs(1);
  rec.progress().note(probed.cls.time_limit_s
                          ? fmt::format("the probed first run was stopped at its {:g} s limit: a plain run decides",
                                        *probed.cls.time_limit_s)
                          : std::string("the probed first run showed no failure: a plain run decides"));
  req = requests(m_plan).front();
  req.id = "baseline.plain";
  results.clear();
  if (!m_job.runs.run_all({req}, 1, results) && interrupt_requested()) {
    return interrupted_during("during the baseline run");
  }
  m_runs.clear();
  m_runs.push_back({m_plan.front(), std::move(results.front())});
  return Go{};
}

std::shared_ptr<const ChildResult> MatrixPhase::first_trace(const std::map<std::string, std::string>& env,
                                                            ModelDir& model) const {
  if (!m_probed_first || m_runs.empty()) {
    return nullptr;
  }
  model = *m_probed_first;  // its hooks serve a search under any environment
  if (env != m_plan.front().env) {
    return nullptr;
  }
  return m_first_trace;
}

// The search's runs in the baseline environment (probes only reading, a
// process of its own or forked from the baseline's server) are
// observations of it: they take the place of planned runs of variants with
// the baseline's variables (the repeats), each used once. One planned run of
// that environment always stays plain: a failure that changes under probes
// (timing, memory layout) is still seen by at least one run without them.
// Only where the first run was probed and failed: probes that hide the
// failure make the search's runs no observations of it.
void MatrixPhase::count_search_runs(std::vector<PlannedRun>& now) {
  if (!m_probed_first) {
    return;  // only where a probed run (the first) showed the failure: probes do not hide it
  }
  const auto& env = m_plan.front().env;
  std::vector<const SearchRun*> free;
  for (const auto& run : m_job.runs.search_runs()) {
    if (run.result.finished && run.request.env == env && !run.result.cls.internal && !run.result.cls.cannot_test &&
        !m_counted.count(run.request.id)) {
      free.push_back(&run);
    }
  }
  size_t same_env = 0;
  for (const auto& p : now) {
    same_env += p.env == env && p.variant != m_plan.front().variant ? 1 : 0;
  }
  std::vector<PlannedRun> left;
  std::map<std::string, int> taken;
  for (const auto& p : now) {
    if (free.empty() || p.env != env || p.variant == m_plan.front().variant || same_env <= 1) {
      left.push_back(p);
      continue;
    }
    const SearchRun* run = free.front();
    free.erase(free.begin());
    --same_env;
    PlannedRun counted = p;
    counted.id = run->request.id;
    m_counted.insert(run->request.id);
    m_runs.push_back({counted, run->result});
    ++taken[p.variant];
  }
  for (const auto& [variant, n] : taken) {
    m_job.recorder.note(fmt::format("variant {}: {} of its runs {} the kernel search's, made in the baseline's "
                                    "environment with probes only reading (runs[].probe_plan); {} made plain",
                                    variant, n, n == 1 ? "is" : "are",
                                    std::count_if(left.begin(), left.end(),
                                                  [&](const PlannedRun& p) { return p.variant == variant; })));
  }
  now = std::move(left);
}

}  // namespace aoti_bisect
