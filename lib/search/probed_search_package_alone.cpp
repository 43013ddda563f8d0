// Wrong values from the package alone, without the exported program's
// eager value for each kernel (probed_search.hpp): one run probing every
// call site. A constant a call site reads that holds NaN/Inf is bad data
// behind the wrong values, so the first site reading one is named with the
// constant; a package whose run has one call site names it as the only
// candidate. Otherwise nothing is named, and the report says what the run
// measured.

#include <set>

#include <fmt/format.h>

#include "common/text.hpp"
#include "evidence/root_cause.hpp"
#include "search/probed_search.hpp"

namespace aoti_bisect {

namespace {

std::string counts_text(const TensorStats& s) {
  std::vector<std::string> parts;
  if (s.nan_count > 0) {
    parts.push_back(fmt::format("{} NaN", s.nan_count));
  }
  if (s.inf_count > 0) {
    parts.push_back(fmt::format("{} Inf", s.inf_count));
  }
  return join(parts, " and ");
}

// "parameter fc1.bias (not folded)", "frozen weight [32, 3, 3, 3] in oneDNN
// layout (_frozen_param13, folded by freezing: no module path recorded)".
std::string constant_text(const ProbeStats& p, const WrapperInfo& w) {
  const ConstantInfo* k = find_constant(w.constant_info, base_tensor_name(p.tensor));
  if (k == nullptr) {
    return "constant " + p.tensor;
  }
  if (k->frozen()) {
    return fmt::format("{} ({}, folded by freezing: no module path recorded)", describe_constant(*k), k->name);
  }
  return describe_constant(*k) + (k->from_folded ? " (made by constant folding at load time)" : " (not folded)");
}

// What the trace run's call sites read of the constants, in run order up to
// the first read of one holding NaN.
struct PackageConstantReads {
  int constants_read = 0;
  std::vector<std::string> with_inf;  // at most 3, one line per constant
  int nan_site = 0;                   // the first call site that reads a constant holding NaN; 0: none
  const SiteTrace* nan_reader = nullptr;
  const ProbeStats* nan_constant = nullptr;  // its probe of that constant
};

// The first call site, in run order, that reads a constant holding NaN.
// Inf is held on purpose (a causal mask registered as a buffer): such
// constants are counted and said, never named as the cause.
PackageConstantReads scan_package_constant_reads(const RunTrace& trace, const WrapperInfo& names) {
  PackageConstantReads reads;
  std::set<std::string> inf_named;
  for (const auto& [k, site] : trace.sites) {
    for (const auto& p : site.tensors) {
      bool constant = p.origin == "constant" || find_constant(names.constant_info, base_tensor_name(p.tensor));
      if (!constant || !p.before) {
        continue;
      }
      ++reads.constants_read;
      if (p.before->nan_count == 0) {
        if (p.before->inf_count > 0 && reads.with_inf.size() < 3) {
          std::string what = constant_text(p, names);
          if (inf_named.insert(what).second) {  // one line per constant, however many sites read it
            reads.with_inf.push_back(fmt::format("{} holds {} Inf", what, p.before->inf_count));
          }
        }
        continue;
      }
      reads.nan_site = k;
      reads.nan_reader = &site;
      reads.nan_constant = &p;
      return reads;
    }
  }
  return reads;
}

// A culprit named from the package alone, recorded: the search found it
// (`message`), and its replay is judged as `replay_note` says.
void record_package_culprit(JobContext& job, Bisection& bis, const Culprit& c, std::string message,
                            std::string replay_note) {
  bis.status = search_status_name(SearchResult::Status::found);
  bis.message = std::move(message);
  job.recorder.bisection(bis);
  Reproducer repro;
  repro.command = job.recorder.report().reproduce_command;
  repro.replay_note = std::move(replay_note);
  job.recorder.culprit(c, repro);
}

}  // namespace

BisectOutcome PackageAloneSearch::run() {
  const int n_static = static_cast<int>(m_model.wrapper.call_sites.size());
  m_bis.predicate = std::string(predicate_name(m_pred));
  m_bis.variant = m_s.variant;
  m_bis.strategy = "all";
  m_bis.planned_runs = 1;
  m_job.recorder.plan_runs(1);
  m_job.recorder.begin_phase("bisect",
                             "wrong values without the exported program: one run probing every call site "
                             "(constants holding NaN/Inf; the call sites that ran)");
  ProbePlan plan;
  plan.ranges.push_back({1, std::max(n_static, 1), ProbeMode::stats});
  ChildResult trace = child("trace", plan);
  if (!trace.finished) {
    m_job.recorder.bisection(m_bis);
    return searched(Verdict::interrupted);
  }
  m_bis.runs = m_run_no;
  m_trace = trace_from_events(trace.events);
  settle_branches(m_trace, m_model.wrapper);
  m_bis.call_sites = std::max(m_trace.launched, n_static);
  m_bis.steps.push_back({1, std::max(n_static, 1), "all", is_model_failure(trace.cls.kind) ? "reproduces" : "clean", 1,
                         1, trace.cls.first_line});
  const WrapperInfo& names = m_s.wrapper.constant_info.empty() ? m_model.wrapper : m_s.wrapper;
  PackageConstantReads reads = scan_package_constant_reads(m_trace, names);
  if (reads.nan_reader != nullptr) {
    return nan_constant(reads.nan_site, *reads.nan_reader, *reads.nan_constant, names);
  }
  // One call site ran: it wrote the outputs, and nothing else could have.
  if (m_trace.launched == 1 && m_trace.site(1) != nullptr) {
    return package_only_site(names, "");
  }
  m_bis.status = search_status_name(SearchResult::Status::not_found);
  m_bis.message =
      fmt::format("{} call sites ran and read {} constants, none holding NaN{}", m_trace.launched, reads.constants_read,
                  reads.with_inf.empty() ? std::string()
                                         : "; constants holding Inf but no NaN are not named (a mask "
                                           "holds -inf on purpose): " +
                                               join(reads.with_inf, "; "));
  m_job.recorder.bisection(m_bis);
  return searched(Verdict::not_isolated, fmt::format("{}; {}", m_model.no_node_map, m_bis.message));
}

// Call site k, the first to read a constant holding NaN (its probe `p`), named
// as the culprit with that constant as its root cause.
BisectOutcome PackageAloneSearch::nan_constant(int k, const SiteTrace& site, const ProbeStats& p,
                                                 const WrapperInfo& names) {
  Culprit c =
      build_culprit({k, Predicate::nonfinite, &m_trace, &m_trace, &m_model.wrapper, m_s.first_line, m_returned_by});
  annotate_origins(c, names);
  std::string what = constant_text(p, names);
  c.why = fmt::format("the first call site that reads a constant holding NaN: {} holds {} before its launch", what,
                      counts_text(*p.before));
  bool writes_finite = true;
  for (const auto& t : site.tensors) {
    writes_finite = writes_finite && (!t.after || t.after->nonfinite() == 0 || &t == &p);
  }
  c.root_cause.basis = "constant";
  c.root_cause.sentence = fmt::format(
      "reads {}, which holds {} before the launch{}; the model's outputs are finite and outside tolerance of the "
      "reference",
      what, counts_text(*p.before), writes_finite ? ", and what it writes holds no NaN/Inf" : "");
  record_package_culprit(m_job, m_bis, c,
                         fmt::format("call site {} {} is the first to read a constant holding NaN", k, site.kernel),
                         "the culprit was named from the constant it reads, not from its output");
  return searched(Verdict::isolated,
                  fmt::format("isolated to {} ({}): the first call site that reads a constant holding NaN ({})",
                              site_label(k, c.kernel), c.kind, what));
}

// The run's only call site, named as the only candidate: it wrote the
// outputs, with no eager value to judge it by.
BisectOutcome SearchRuns::package_only_site(const WrapperInfo& names, const std::string& compared) {
  const SiteTrace& only = *m_trace.site(1);
  Culprit c =
      build_culprit({1, Predicate::nonfinite, &m_trace, &m_trace, &m_model.wrapper, m_s.first_line, m_returned_by});
  annotate_origins(c, names);
  c.why =
      "the only call site of the run, so the only candidate: the outputs it wrote are outside tolerance of the "
      "reference (" +
      m_s.first_line + ")";
  const std::string no_eager =
      compared.empty() ? std::string("without the exported program there is no eager value of its output to "
                                     "compare with")
                       : "the exported program's eager values did not decide (" + compared + ")";
  c.root_cause.note = no_eager + "; its inputs are the model's inputs and constants";
  record_package_culprit(m_job, m_bis, c, "one call site ran: the only candidate",
                         compared.empty() ? "without the exported program there is no eager value of its output to "
                                            "judge it by"
                                          : "the exported program's eager values did not decide: " + compared);
  return searched(Verdict::isolated,
                  fmt::format("isolated to {} ({}): the only call site of the package, so the only candidate",
                              site_label(1, only.kernel), c.kind));
}

}  // namespace aoti_bisect
