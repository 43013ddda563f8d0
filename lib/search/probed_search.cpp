// The probed search's trace run and steps: child runs with probe plans, the trace checked and its sites
// mapped, each range answered, and the search's result read into an outcome.

#include "search/probed_search.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "evidence/inf_literal.hpp"
#include "evidence/reach.hpp"
#include "evidence/self_check.hpp"
#include "evidence/wrapper_layout.hpp"
#include "search/search.hpp"
#include "search/search_common.hpp"
#include "wrapper/provenance.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

SearchRuns::SearchRuns(JobContext& job, const BisectSetup& s, Predicate pred, Bisection& bis, ProbedModel model)
    : m_job(job),
      m_s(s),
      m_pred(pred),
      m_bis(bis),
      m_model(std::move(model)),
      m_repeats(job.settings.bisect_repeats.value_or(s.deterministic ? 1 : 3)) {}

BisectOutcome search_probed_model(JobContext& job, const BisectSetup& setup, Predicate pred, Bisection& bis,
                                  ProbedModel model) {
  if (pred == Predicate::divergence) {
    return PairSearch(job, setup, pred, bis, std::move(model)).run();
  }
  if (pred == Predicate::mismatch && !model.no_node_map.empty()) {
    return PackageAloneSearch(job, setup, pred, bis, std::move(model)).run();
  }
  return ProbedSearch(job, setup, pred, bis, std::move(model)).run();
}

std::string SearchRuns::next_run_id(const std::string& purpose) const {
  return fmt::format("bisect.{}.{}", m_job.runs.next_search_number(), purpose);
}

ChildResult SearchRuns::child(const std::string& purpose, const ProbePlan& plan, const fs::path& node_reference,
                              const std::map<std::string, std::string>& env) {
  // Only runs that compare values load the per-node reference (it can be large).
  bool compares = std::any_of(plan.ranges.begin(), plan.ranges.end(),
                              [](const ProbePlan::Range& r) { return r.mode >= ProbeMode::stats; });
  ++m_run_no;
  ChildRequest req = search_request(m_s, next_run_id(purpose), m_model.model, plan, env);
  req.node_reference = !node_reference.empty() ? node_reference : compares ? m_model.node_values : fs::path();
  req.fresh = purpose == "evidence";  // the confirmation runs in a fresh process (docs/runner.md)
  return m_job.runs.run(req);
}

// After the trace run: does the instrumented model still fail the same way?
std::optional<BisectOutcome> ProbedSearch::check_trace(const ChildResult& trace, int n_static) {
  const RunTrace& t = m_trace;
  m_bis.call_sites = std::max(t.launched, n_static);
  if (t.launched != n_static && n_static > 0 && m_pred != Predicate::fault) {
    m_job.recorder.builds_note(
        fmt::format("the run launched {} call sites, the wrapper lists {}", t.launched, n_static));
  }
  if (trace.cls.kind == OutcomeKind::ok) {
    m_bis.status = search_status_name(SearchResult::Status::not_found);
    m_bis.message = "the failure did not reproduce in the instrumented build";
    return searched(Verdict::suppressed_by_instrumentation, m_bis.message);
  }
  if (m_pred != Predicate::fault) {
    if (auto why = probes_miss_sites(m_model.wrapper, t.launched)) {
      m_bis.status = search_status_name(SearchResult::Status::error);
      m_bis.message = *why;
      return passed_over(*why);
    }
  }
  if (trace.cls.kind != m_s.kind && m_pred != Predicate::fault) {
    m_bis.status = search_status_name(SearchResult::Status::error);
    m_bis.message = fmt::format("the instrumented build fails differently: {} ({})", outcome_name(trace.cls.kind),
                                trace.cls.first_line);
    return searched(Verdict::not_isolated, m_bis.message);
  }
  return std::nullopt;
}

// A package-level source runs the package's own code: its trace run (no
// values probed) must return the first run's outputs bit for bit. Where
// the source requires it (a rebuilt library), a difference is a fall-back.
std::optional<BisectOutcome> ProbedSearch::check_fidelity(const ChildResult& trace) {
  if (m_model.fidelity == ProbedModel::Fidelity::not_checked) {
    return std::nullopt;
  }
  if (m_trace_reused) {
    m_job.recorder.fidelity("outputs not compared: the trace was the job's first run (the plain runs of its "
                            "environment are the flag matrix's repeats)");
    return std::nullopt;
  }
  const RunRecord* base = first_run_with_outputs(m_job.recorder.report(), m_s.variant);
  bool required = m_model.fidelity == ProbedModel::Fidelity::required;
  if (base == nullptr || trace.cls.outputs.empty()) {
    m_job.recorder.fidelity("outputs not compared (the runs returned none)");
    return std::nullopt;
  }
  if (same_outputs(base->outputs, trace.cls.outputs)) {
    m_job.recorder.fidelity("outputs bit-identical to the package's first run (checksums)");
    return std::nullopt;
  }
  if (!required) {
    m_job.recorder.fidelity("outputs differ from the package's first run (the model may not be deterministic)");
    return std::nullopt;
  }
  m_job.recorder.fidelity("outputs differ from the package's: not trusted");
  return untrusted("the rebuilt library's outputs differ from the package's (checksums): it is not trusted");
}

// Where the buffers extern calls create are first shown (static call-site
// numbers must match the run's).
void ProbedSearch::link_returned(const ChildResult& trace, int n_static) {
  if (m_trace.launched == n_static) {
    m_returned_by = returned_buffers(m_model.wrapper);
    m_returned_value = returned_buffers(m_model.wrapper, false);
    m_write_order = write_order(m_model.node_map, returned_buffers(m_model.wrapper));
    m_consumers = consumer_sites(trace.events, m_returned_by);
  }
}

// Mismatch: which sites hold graph nodes.
void ProbedSearch::map_sites(const ChildResult& trace) {
  int launched = m_trace.launched;
  int mapped = 0;
  m_bis.unmapped = unmapped_sites(trace.events, m_model.node_map, mapped, m_returned_value);
  m_bis.mapped_sites = mapped;
  for (auto& u : m_bis.unmapped) {
    u.why = redact_paths(u.why);
  }
  m_job.recorder.bisection(m_bis);
  m_job.recorder.progress().note(
      fmt::format("{} of {} call sites write a buffer that holds a graph node's value", mapped, launched));
}

// Buffers extern calls create and return are shown only where a later site
// reads them: that site is probed too, and the value credited to the call.
void SearchRuns::add_consumers(ProbePlan& plan, int lo, int hi) const {
  for (auto it = m_consumers.lower_bound(lo); it != m_consumers.end() && it->first <= hi; ++it) {
    if (it->second > hi) {
      plan.ranges.push_back({it->second, it->second, ProbeMode::stats});
    }
  }
}

// One run's answer for [lo, hi] (the mismatch comparisons noted).
Probe SearchRuns::answer(const ChildResult& res, int lo, int hi, const RunTrace* read) {
  if (m_pred == Predicate::mismatch) {
    auto sites = compare_sites(res.events, m_job.settings.tolerances, m_returned_value, &m_write_order);
    note_honest_error(m_bis, sites);
    return mismatch_answer(res.cls, sites, lo, hi);
  }
  RunTrace own;  // read here, unless read already (not copied: 16 MB at 10,000 call sites)
  if (read == nullptr) {
    own = trace_from_events(res.events);
  }
  const RunTrace& trace = read != nullptr ? *read : own;
  if (auto why =
          slow_not_stuck(res.cls.kind, trace, res.status.stopped_at > 0 ? res.status.stopped_at : res.cls.stopped_at,
                         m_job.settings.timeout_s)) {
    Probe p;
    p.runs = 1;
    p.note = *why;
    return p;  // an error: the search stops
  }
  return answer_step(m_pred, m_s.kind, res.cls, trace, lo, hi, m_returned_by, m_constant_sources, m_inf_by_design);
}

Probe ProbedSearch::ask(int lo, int hi) {
  if (m_trace_answer_unused && lo == 1 && hi >= m_trace.launched && m_trace_run) {
    // The trace run probed every site: its answer costs no run.
    m_trace_answer_unused = false;
    Probe p = answer(*m_trace_run, lo, hi, m_trace_run_trace ? m_trace_run_trace.get() : &m_trace);
    p.runs = 0;
    p.agreeing = 0;
    if (p.note.empty()) {
      p.note = "answered by the trace run, which probed every call site";
    }
    return p;
  }
  ProbePlan plan;
  if (m_pred != Predicate::fault) {
    plan.ranges.push_back({lo, hi, ProbeMode::stats});
    add_consumers(plan, lo, hi);
  } else {
    plan.ranges.push_back({hi, hi, ProbeMode::sync});
  }
  std::vector<Probe> answers;
  for (int r = 0; r < m_repeats; ++r) {
    ChildResult res = child(fmt::format("{}-{}", lo, hi), plan);
    if (!res.finished) {
      return Probe{StepVerdict::error, std::nullopt, 0, 0, "interrupted"};
    }
    answers.push_back(answer(res, lo, hi));
  }
  return aggregate_answers(answers);
}

// Mismatch: a search whose every step answered, yet found nothing, says so.
std::optional<BisectOutcome> ProbedSearch::not_found(const SearchResult& sr, int n) {
  bool all_clean = std::all_of(sr.steps.begin(), sr.steps.end(), [](const SearchStep& st) {
    return st.probe.verdict == StepVerdict::clean || st.probe.verdict == StepVerdict::reproduces;
  });
  if (m_pred != Predicate::mismatch || sr.status == SearchResult::Status::found || !all_clean) {
    return std::nullopt;
  }
  m_bis.status = search_status_name(SearchResult::Status::not_found);
  m_bis.message = "no probed call site's output left the tolerance while its inputs were within it";
  m_job.recorder.bisection(m_bis);
  std::string first_unmapped = m_bis.unmapped.empty()
                                   ? ""
                                   : fmt::format(", first unmapped: call site {} {}", m_bis.unmapped.front().call_index,
                                                 m_bis.unmapped.front().kernel);
  return searched(Verdict::not_isolated,
                  fmt::format("no call site's output differs from eager beyond tolerance while its inputs are "
                              "within it ({} of {} call sites mapped to graph nodes{}); the difference starts in "
                              "an unmapped site or builds up below the per-kernel tolerance",
                              m_bis.mapped_sites.value_or(0), n, first_unmapped));
}

// auto: where one run answers (a deterministic failure), the trace run
// probes every call site and the evidence run confirms the site it names:
// two runs. A flaky failure (each step repeated) and a fault on a device
// (found by a sync probe per step) are bisected. Whatever was asked, a CPU
// fault is synchronous: a trace run names the site.
Strategy ProbedSearch::choose_strategy(int n_static) {
  Strategy asked = m_job.settings.strategy;
  bool cpu_fault = m_pred == Predicate::fault && m_job.device_key == "cpu";
  if (asked == Strategy::automatic) {
    if (m_repeats == 1 && n_static >= 1 && (m_pred != Predicate::fault || cpu_fault)) {
      return Strategy::automatic;
    }
    return cpu_fault ? Strategy::all : Strategy::bisect;
  }
  return cpu_fault ? Strategy::all : asked;
}

void ProbedSearch::plan_search(Strategy strategy, int n_static, int runs_before) {
  // automatic: the trace run answers [1, n] where it can.
  int planned = runs_before + 2 + planned_oracle_calls(std::max(1, n_static), strategy) * m_repeats -
                (strategy == Strategy::automatic ? 1 : 0);
  m_job.recorder.plan_runs(planned);
  m_bis.strategy = std::string(strategy_name(strategy));
  m_bis.planned_runs = planned;
}

// The trace run. Under automatic it also probes every call site's values
// (a fault needs none: the site that never returned is named) and so
// answers the search's first question. Where those probes change how the
// run ends, it is traced again without them and bisected.
ChildResult ProbedSearch::trace_run(int n_static, Strategy& strategy) {
  if (reuses_first_run(strategy)) {
    m_trace_answers = strategy == Strategy::automatic;
    m_trace_reused = true;
    m_job.recorder.progress().note(fmt::format(
        "the trace: the job's first run ({}), whose probes read every call site", m_s.first_trace->cls.first_line));
    return *m_s.first_trace;
  }
  ProbePlan plan;
  bool values = strategy == Strategy::automatic && m_pred != Predicate::fault;
  if (values) {
    plan.ranges.push_back({1, n_static, ProbeMode::stats});
  }
  ChildResult trace = child("trace", plan);
  m_trace_answers = strategy == Strategy::automatic;
  if (values && trace.finished && trace.cls.kind != m_s.kind && !interrupt_requested()) {
    m_bis.steps.push_back(
        {1, n_static, "trace", is_model_failure(trace.cls.kind) ? "reproduces" : "clean", 1, 1, trace.cls.first_line});
    m_job.recorder.progress().note(fmt::format(
        "with every call site probed the run ended {}, not {}: tracing again without probes, then bisecting",
        outcome_name(trace.cls.kind), outcome_name(m_s.kind)));
    strategy = Strategy::bisect;
    m_trace_answers = false;
    plan_search(strategy, n_static, 1);
    trace = child("trace", ProbePlan{});
  }
  return trace;
}

// Whether the job's first run is this search's trace run: it bound this
// model's probes and read every call site's values (what a NaN/Inf search's
// own trace run reads; a fault's reads less), and it ended in this failure.
bool ProbedSearch::reuses_first_run(Strategy strategy) const {
  const auto& first = m_s.first_trace;
  return first != nullptr && first->finished && first->cls.kind == m_s.kind &&
         (m_pred == Predicate::fault || (m_pred == Predicate::nonfinite && strategy == Strategy::automatic)) &&
         m_s.first_trace_model.dir == m_model.model.dir && m_s.first_trace_model.hooks == m_model.model.hooks;
}

// The search in its steps: the trace run, what it shows checked, the call
// sites mapped, the first bad one found and read, then the culprit (its
// evidence run confirms it).
BisectOutcome ProbedSearch::run() {
  int n_static = static_cast<int>(m_model.wrapper.call_sites.size());
  Strategy strategy = choose_strategy(n_static);
  plan_search(strategy, n_static, 0);
  m_bis.predicate = std::string(predicate_name(m_pred));
  m_bis.variant = m_s.variant;
  m_job.recorder.begin_phase("bisect", fmt::format("plan: {} call sites, {} search, up to {} runs of about {:.1f} s",
                                                   n_static, m_bis.strategy, m_bis.planned_runs, m_s.baseline_seconds));
  // Shared, not copied, with m_trace_run: a trace of 10,000 call sites is
  // a hundred megabytes of events.
  auto trace = std::make_shared<ChildResult>(trace_run(n_static, strategy));
  if (!trace->finished) {
    m_job.recorder.bisection(m_bis);
    return searched(Verdict::interrupted);
  }
  read_trace(trace, n_static);
  if (auto stop = check(*trace, n_static)) {
    return *stop;
  }
  map(trace, n_static);
  bool answered = false;
  SearchResult sr = find(strategy, answered);
  if (auto stop = read_search(sr, *trace, answered)) {
    if (m_pred == Predicate::mismatch && stop->verdict == Verdict::not_isolated && m_trace.launched == 1 &&
        m_trace.site(1) != nullptr) {
      return package_only_site(m_s.wrapper.constant_info.empty() ? m_model.wrapper : m_s.wrapper, stop->reason);
    }
    return *stop;
  }
  announce(*sr.first);
  return culprit(*sr.first, *trace, false, !sr.confirmed);
}

// The trace run read: its step recorded, its call sites (report.svg's),
// and kept where it may answer the search.
void ProbedSearch::read_trace(const std::shared_ptr<ChildResult>& trace, int n_static) {
  m_bis.steps.push_back(
      {1, n_static, "trace", is_model_failure(trace->cls.kind) ? "reproduces" : "clean", 1, 1, trace->cls.first_line});
  m_bis.runs = m_run_no;
  m_job.recorder.bisection(m_bis);
  m_trace = trace_from_events(trace->events);
  if (m_trace_answers && (m_pred == Predicate::fault || m_trace.launched <= n_static)) {
    m_trace_run = trace;
    // As read, before the branches are settled: a copy only where the
    // wrapper has branches to settle (16 MB at 10,000 call sites).
    const auto& ws = m_model.wrapper.call_sites;
    if (std::any_of(ws.begin(), ws.end(), [](const auto& s) { return !s.branch.empty(); })) {
      m_trace_run_trace = std::make_unique<RunTrace>(m_trace);
    }
  }
  settle_branches(m_trace, m_model.wrapper);
  for (const auto& [k, site] : m_trace.sites) {  // what ran, for report.svg
    if (k > 0 && site.began) {
      const auto& ws = m_model.wrapper.call_sites;
      int at = site.wrapper_site;
      bool known = at >= 1 && static_cast<size_t>(at) <= ws.size() && ws[at - 1].kernel == site.kernel;
      m_bis.sites.push_back({k, site.kernel, kind_of_kernel(site.kernel), known ? ws[at - 1].branch : "",
                             known ? source_text(source_lines(ws[at - 1].python_stacks)) : ""});
    }
  }
}

// Whether the trace run can be searched: the model trusted, its probes
// heard, the failure the one searched for, a stop that was not slowness.
std::optional<BisectOutcome> ProbedSearch::check(const ChildResult& trace, int n_static) {
  if (auto untrusted = check_fidelity(trace)) {
    m_job.recorder.bisection(m_bis);
    return *untrusted;
  }
  if (m_trace.probes_missing) {
    std::string why = "the instrumented model's probe calls did not reach the runner (symbol prefix or static link?)";
    if (m_pred == Predicate::mismatch) {
      return searched(Verdict::not_isolated, why + "; comparing kernels with eager needs them");
    }
    return passed_over(why);
  }
  if (auto stop = check_trace(trace, n_static)) {
    m_job.recorder.bisection(m_bis);
    return *stop;
  }
  if (auto why = slow_not_stuck(trace.cls.kind, m_trace,
                                trace.status.stopped_at > 0 ? trace.status.stopped_at : trace.cls.stopped_at,
                                m_job.settings.timeout_s)) {
    m_bis.status = search_status_name(SearchResult::Status::error);
    m_bis.message = *why;
    m_job.recorder.bisection(m_bis);
    return searched(Verdict::not_isolated, *why);
  }
  return std::nullopt;
}

// The call sites mapped: the buffers extern calls return, the kernels that
// make Inf by design, the graph nodes (wrong values); else the trace run's
// events let go.
void ProbedSearch::map(const std::shared_ptr<ChildResult>& trace, int n_static) {
  link_returned(*trace, n_static);
  if (m_pred == Predicate::nonfinite) {
    note_inf_by_design();
  }
  if (m_pred == Predicate::mismatch) {
    map_sites(*trace);
  } else {
    // Read: what is left of the trace run's events is in m_trace (and
    // m_trace_run_trace), so the evidence run's events are not held beside
    // them (about a hundred megabytes each at 10,000 call sites).
    trace->events.clear();
  }
}

// The first bad call site looked for; for NaN/Inf that no site made from
// finite values, the first site that reads a constant holding them.
// `answered`: no step's runs erred.
SearchResult ProbedSearch::find(Strategy strategy, bool& answered) {
  const int n = std::max(m_trace.launched, 1);
  m_trace_answer_unused = m_trace_run != nullptr;
  SearchResult sr = find_first_bad(n, strategy, [&](int lo, int hi) { return ask(lo, hi); });
  answered = std::none_of(sr.steps.begin(), sr.steps.end(),
                          [](const SearchStep& st) { return st.probe.verdict == StepVerdict::error; });
  if (m_pred == Predicate::nonfinite && answered && !interrupt_requested() &&
      (sr.status == SearchResult::Status::not_found || sr.status == SearchResult::Status::inconclusive)) {
    // No site made NaN/Inf from finite inputs: the model may carry them in a
    // parameter or buffer. The first site that reads one brings them in.
    record_search(m_bis, sr);
    m_constant_sources = true;
    m_job.recorder.progress().note(
        "no call site made NaN/Inf from finite values; looking for the first site that "
        "reads a constant holding them");
    m_trace_answer_unused = m_trace_run != nullptr;
    sr = find_first_bad(n, strategy, [&](int lo, int hi) { return ask(lo, hi); });
  }
  m_bis.message = sr.message;
  record_search(m_bis, sr);
  m_job.recorder.bisection(m_bis);
  return sr;
}

// What the search found, read: nothing (with why), NaN/Inf from the data,
// an inconclusive search, a site behind code without probes; nullopt when
// it names the first bad call site.
std::optional<BisectOutcome> ProbedSearch::read_search(const SearchResult& sr, const ChildResult& trace,
                                                       bool answered) {
  const int n = std::max(m_trace.launched, 1);
  if (interrupt_requested()) {
    return searched(Verdict::interrupted);
  }
  if (auto stop = not_found(sr, n)) {
    return *stop;
  }
  if (auto data = from_the_data(sr, trace, answered)) {
    return *data;
  }
  if (sr.status == SearchResult::Status::inconclusive) {
    return searched(Verdict::inconclusive, "the search was inconclusive: " + sr.message);
  }
  auto blind = blind_spots(m_model.wrapper);
  if (sr.status != SearchResult::Status::found || !sr.first) {
    std::string also = blind.empty() ? "" : "; call sites without probes lie " + describe(blind.front());
    return searched(Verdict::not_isolated, "the search did not name a call site: " + sr.message + also);
  }
  if (!blind.empty() && blind.front().after < *sr.first) {
    return blind_spot(*sr.first, blind.front());
  }
  return std::nullopt;
}

// The answer printed as soon as the search names the site, before the
// evidence run confirms it (BisectSetup::on_found).
void ProbedSearch::announce(int k) {
  if (!m_s.on_found) {
    return;
  }
  const SiteTrace* at = m_trace.site(k);
  const std::string kernel = at != nullptr ? at->kernel : std::string();
  m_announced = k;
  const std::string runs = m_trace_reused && m_run_no == 0 ? std::string("from the job's first run (probed)")
                           : m_trace_reused ? fmt::format("in the job's first run (probed) and {} more", m_run_no)
                                            : fmt::format("in {} run{}", m_run_no, m_run_no == 1 ? "" : "s");
  m_s.on_found(fmt::format("{} ({}), named by the search {}; the evidence run confirms it next", site_label(k, kernel),
                           kind_of_kernel(kernel), runs));
}

// The kernels whose own code computes with an infinity literal (an
// attention mask's -inf): the Inf they write is by intent, so they are not
// taken for the site that introduced it, and the outputs' NaN/Inf are not
// traced back through it (from the package's kernel.cpp and, for Triton
// kernels, the sources its wrapper quotes).
void SearchRuns::note_inf_by_design() {
  auto read = [&](const std::string& entry) {
    try {
      return entry.empty() ? std::string() : m_s.pkg.read_entry(entry);
    } catch (const std::exception&) {
      return std::string();  // no source: every Inf counts
    }
  };
  m_inf_by_design =
      inf_by_design_kernels(read(m_s.model.kernel_cpp), read(m_s.model.wrapper_cpp), m_model.wrapper.call_sites);
  if (!m_inf_by_design.empty()) {
    m_job.recorder.progress().note(fmt::format(
        "{} writes -inf/inf from its own code (a mask): Inf it makes does not count as introduced, NaN does",
        join(std::vector<std::string>(m_inf_by_design.begin(), m_inf_by_design.end()), ", ")));
  }
}

// NaN/Inf that no call site made, where the inputs hold them: the data.
std::optional<BisectOutcome> ProbedSearch::from_the_data(const SearchResult& sr, const ChildResult& trace,
                                                         bool answered) {
  if (m_pred != Predicate::nonfinite || !answered) {
    return std::nullopt;
  }
  auto why = nonfinite_from_inputs(m_bis, sr, trace.cls.input_stats);
  if (!why) {
    return std::nullopt;
  }
  m_job.recorder.bisection(m_bis);
  return searched(Verdict::not_isolated, *why);
}

}  // namespace aoti_bisect
