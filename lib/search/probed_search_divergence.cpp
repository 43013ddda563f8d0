// The search for outputs that differ between runs (failure kind
// nondeterministic, predicate divergence): pairs of runs probing every call
// site, compared site by site (probed_search.hpp).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/files.hpp"
#include "common/scratch_dir.hpp"
#include "common/text.hpp"
#include "protocol/runner.hpp"
#include "search/probed_search.hpp"
#include "wrapper/provenance.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

std::string run_difference_text(const RunDifference& d) {
  std::string where = d.worst_index.empty()
                          ? ""
                          : fmt::format(" at [{}] ({} vs {})", fmt::join(d.worst_index, ", "), d.first, d.second);
  return fmt::format("{}: {} of its {} elements differ, the largest difference {}{}", d.tensor, d.differ, d.elements,
                     number_text(d.max_abs), where);
}

}  // namespace

// Two more runs: the first saves what call site k wrote, the second
// compares what it writes there with that, element by element. Fills
// c.run_to_run with each output that differed (none: the pair agreed this
// time, said in the step). False when interrupted.
bool PairSearch::measure_run_to_run(int k, Culprit& c) {
  fs::path dir = fs::absolute(m_job.settings.out_dir / "run-to-run");
  std::error_code ec;
  fs::remove_all(dir, ec);
  const ScratchDir cleanup(dir);  // tensor contents: never left in the report folder
  ProbePlan save;
  save.ranges.push_back({k, k, ProbeMode::save});
  save.save_dir = dir;
  save.save_after = true;
  m_job.recorder.plan_runs(2);
  ChildResult first = child("save", save);
  m_bis.runs = m_run_no;
  if (!first.finished || interrupt_requested()) {
    return false;
  }
  nlohmann::json files = nlohmann::json::object();
  for (const auto& e : first.events.of({EventKind::saved}, k)) {
    files[e.value("tensor", "")] = e.value("path", "");
  }
  if (files.empty()) {
    m_bis.steps.push_back({k, k, "compare", "error", 1, 0, "the run saved none of the call site's outputs"});
    return true;
  }
  fs::path saved = dir / "saved.json";
  write_file_atomic(saved, files.dump());
  ProbePlan compare;
  compare.ranges.push_back({k, k, ProbeMode::stats});
  ChildResult second = child("difference", compare, saved);
  m_bis.runs = m_run_no;
  if (!second.finished || interrupt_requested()) {
    return false;
  }
  RunTrace tb = trace_from_events(second.events);
  const SiteTrace* site = tb.site(k);
  for (const SiteCompare& s : compare_sites(second.events, ToleranceTable{})) {
    if (s.site != k) {
      continue;
    }
    for (const TensorCompare& t : s.outputs) {
      if (t.differ <= 0) {
        continue;
      }
      RunDifference d;
      d.tensor = t.tensor;
      d.dtype = t.dtype;
      const ProbeStats* p = site != nullptr ? site->find(t.tensor) : nullptr;
      d.elements = p != nullptr && p->after ? p->after->numel : 0;
      d.differ = t.differ;
      d.max_abs = t.max_abs;
      d.worst_index = t.worst;
      d.first = t.expected;
      d.second = t.actual;
      if (d.first == d.second && t.expected_value &&
          t.actual_value) {  // alike at six digits: as many as tell them apart
        d.first = fmt::format("{:.9g}", *t.expected_value);
        d.second = fmt::format("{:.9g}", *t.actual_value);
      }
      c.run_to_run.push_back(std::move(d));
    }
  }
  std::vector<std::string> counts;
  for (const auto& d : c.run_to_run) {
    counts.push_back(fmt::format("{} {} of {}", d.tensor, d.differ, d.elements));
  }
  m_bis.steps.push_back({k, k, "compare", c.run_to_run.empty() ? "clean" : "reproduces", 2, 2,
                         c.run_to_run.empty()
                             ? fmt::format("two more runs: call site {} wrote the same values this time", k)
                             : fmt::format("two more runs, call site {}'s outputs element by element: {} elements "
                                           "differ",
                                           k, join(counts, ", "))});
  return true;
}

namespace {

// The tensors of one call site whose checksums differ between two runs:
// before the launch (those it read), after it (those it wrote).
void differing_tensors(const SiteTrace& a, const SiteTrace& b, std::vector<std::string>& read_differs,
                       std::vector<std::string>& differs) {
  for (const auto& p : a.tensors) {
    const ProbeStats* q = b.find(p.tensor);
    if (q == nullptr) {
      continue;
    }
    if (p.initialized && p.before && q->before && p.before->checksum != q->before->checksum) {
      read_differs.push_back(p.tensor);
    }
    if (p.after && q->after && p.after->checksum != q->after->checksum) {
      differs.push_back(p.tensor);
    }
  }
}

}  // namespace

// The first call site whose outputs differ between the two runs from the
// same inputs: the culprit, how far two more runs of it differ, the root
// cause said.
BisectOutcome PairSearch::diverged_at(int k, const SiteTrace& sa, const SiteTrace& sb_site,
                                        const std::vector<std::string>& differs) {
  const SiteTrace* sb = &sb_site;
  m_bis.status = search_status_name(SearchResult::Status::found);
  m_bis.message = "the first call site whose outputs differ between two runs from the same inputs";
  m_job.recorder.bisection(m_bis);
  Culprit c;
  c.call_index = k;
  c.kernel = sa.kernel;
  c.kind = kind_of_kernel(sa.kernel);
  c.phase = "after_launch";
  const auto& ws = m_model.wrapper.call_sites;
  int at = sa.wrapper_site;
  if (at >= 1 && static_cast<size_t>(at) <= ws.size() && ws[at - 1].kernel == sa.kernel) {
    c.source_nodes = ws[at - 1].source_nodes;
    c.aten_ops = ws[at - 1].aten_ops;
    c.branch = ws[at - 1].branch;
    c.source_lines = source_lines(ws[at - 1].python_stacks);
  }
  std::vector<std::string> what;
  for (const auto& t : differs) {
    const ProbeStats* p = sa.find(t);
    const ProbeStats* q = sb->find(t);
    std::string range;
    if (p && q && p->after && q->after && p->after->min && q->after->min && p->after->max && q->after->max) {
      range = fmt::format(" (min {} vs {}, max {} vs {})", number_text(*p->after->min), number_text(*q->after->min),
                          number_text(*p->after->max), number_text(*q->after->max));
    }
    what.push_back(t + range);
  }
  c.why = fmt::format("from inputs identical in two runs (checksums), it wrote other values: {}", join(what, "; "));
  bool measured = measure_run_to_run(k, c);
  m_job.recorder.bisection(m_bis);
  if (!measured) {
    return searched(Verdict::interrupted);
  }
  if (!c.run_to_run.empty()) {
    std::vector<std::string> counts;
    for (const auto& d : c.run_to_run) {
      counts.push_back(run_difference_text(d));
    }
    c.why = fmt::format(
        "from inputs identical in two runs (checksums), it wrote other values; in two more runs, "
        "element by element: {}",
        join(counts, "; "));
  }
  for (const auto& p : sa.tensors) {
    c.args.push_back(p);
  }
  c.root_cause.basis = "run_to_run";
  c.root_cause.sentence = fmt::format(
      "Call site {} ({}) returns different values from the same inputs in two runs: the result depends on "
      "something other than its inputs, such as the order of a parallel accumulation (atomic adds, per-thread "
      "partial sums), memory nothing wrote, or a race.",
      k, sa.kernel);
  Reproducer repro;
  repro.command = m_job.recorder.report().reproduce_command;
  m_job.recorder.culprit(c, repro);
  return searched(Verdict::isolated,
                  fmt::format("isolated to {} ({}): its outputs differ between runs from the same inputs",
                              site_label(k, c.kernel), c.kind));
}

// Outputs that differ between runs: pairs of runs probing every call site
// (statistics and checksums before and after each launch), compared site by
// site. The diverging site is the first whose inputs (every tensor it reads:
// initialized before the launch) have the same checksums in both runs and
// whose outputs do not. A pair that agrees everywhere says nothing: up to
// three pairs.
BisectOutcome PairSearch::run() {
  const int n_static = static_cast<int>(m_model.wrapper.call_sites.size());
  constexpr int k_pairs = 3;
  m_bis.predicate = std::string(predicate_name(m_pred));
  m_bis.variant = m_s.variant;
  m_bis.strategy = "compare";
  m_bis.planned_runs = 2 * k_pairs;
  m_job.recorder.plan_runs(2);
  m_job.recorder.begin_phase("bisect", fmt::format("{} call sites: two runs probing every one, compared site by site "
                                                   "(up to {} pairs)",
                                                   n_static, k_pairs));
  ProbePlan plan;
  plan.ranges.push_back({1, std::max(1, n_static), ProbeMode::stats});
  for (int pair = 1; pair <= k_pairs; ++pair) {
    if (pair > 1) {
      m_job.recorder.plan_runs(2);
    }
    ChildResult a = child("trace", plan);
    ChildResult b = a.finished ? child("compare", plan) : a;
    m_bis.runs = m_run_no;
    if (!a.finished || !b.finished || interrupt_requested()) {
      m_job.recorder.bisection(m_bis);
      return searched(Verdict::interrupted);
    }
    RunTrace ta = trace_from_events(a.events);
    RunTrace tb = trace_from_events(b.events);
    if (pair == 1) {
      m_trace = ta;
      m_bis.call_sites = std::max(ta.launched, n_static);
      settle_branches(m_trace, m_model.wrapper);
      for (const auto& [k, site] : m_trace.sites) {  // what ran, for report.svg
        if (k > 0 && site.began) {
          m_bis.sites.push_back({k, site.kernel, kind_of_kernel(site.kernel), "", ""});
        }
      }
    }
    if (ta.probes_missing || ta.sites.empty()) {
      m_bis.status = search_status_name(SearchResult::Status::error);
      m_bis.message = "the runs' probes recorded no call site";
      m_job.recorder.bisection(m_bis);
      return searched(Verdict::not_isolated, m_bis.message);
    }
    for (const auto& [k, sa] : ta.sites) {
      const SiteTrace* sb = tb.site(k);
      if (k <= 0) {
        continue;
      }
      if (sb == nullptr || sb->kernel != sa.kernel) {
        m_bis.status = search_status_name(SearchResult::Status::not_found);
        m_bis.message = fmt::format("the two runs launched other kernels at call site {}", k);
        break;
      }
      std::vector<std::string> read_differs;  // what it read (initialized before the launch)
      std::vector<std::string> differs;       // what it wrote
      differing_tensors(sa, *sb, read_differs, differs);
      if (differs.empty() && read_differs.empty()) {
        continue;
      }
      m_bis.steps.push_back(
          {1, k, "compare", "reproduces", 2, 2,
           fmt::format("pair {}: call site {} {}: {}", pair, k, sa.kernel,
                       read_differs.empty() ? "the same inputs, other outputs (" + join(differs, ", ") + ")"
                                            : "its inputs differ already (" + join(read_differs, ", ") + ")")});
      if (!read_differs.empty()) {
        // What it read differs, though no earlier site's probed outputs did:
        // written where no probe sees (memory nothing wrote, or unprobed code).
        m_bis.status = search_status_name(SearchResult::Status::not_found);
        m_bis.message = fmt::format(
            "call site {} {} reads {} that differ between the runs, which no earlier "
            "probed call site wrote differently: memory nothing wrote, or code without "
            "probes",
            k, sa.kernel, join(read_differs, ", "));
        m_job.recorder.bisection(m_bis);
        return searched(Verdict::not_isolated, m_bis.message);
      }
      return diverged_at(k, sa, *sb, differs);
    }
    if (m_bis.status == search_status_name(SearchResult::Status::not_found) && !m_bis.message.empty()) {
      break;
    }
    m_bis.steps.push_back({1, std::max(ta.launched, 1), "compare", "clean", 2, 0,
                           fmt::format("pair {}: every call site wrote the same values in both runs", pair)});
  }
  if (m_bis.message.empty()) {
    m_bis.status = search_status_name(SearchResult::Status::not_found);
    m_bis.message = fmt::format(
        "{} pairs of runs probing every call site wrote the same values at every site: the "
        "probes' synchronisation may hide what differs",
        k_pairs);
  }
  m_job.recorder.bisection(m_bis);
  return searched(Verdict::not_isolated, m_bis.message);
}

}  // namespace aoti_bisect
