// The kernel bisection phase: the exported program found, the chain of instrumentation sources tried in
// turn, the search recorded; and the job's first run probed as the search's trace run.

#include "search/search.hpp"

#include <algorithm>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "common/files.hpp"
#include "common/text.hpp"
#include "search/guide_mode.hpp"
#include "search/search_common.hpp"
#include "search/source_exported.hpp"
#include "search/source_interpose.hpp"
#include "search/source_rewrite.hpp"

namespace aoti_bisect {

std::optional<std::string> find_exported_program(const Settings& settings, const Package& pkg, const ModelFiles& model,
                                                 std::string& name) {
  name = "model";
  if (!settings.exported_program.empty()) {
    return settings.exported_program.string();
  }
  const auto& eps = pkg.exported_programs();
  if (!eps.empty()) {
    name = std::find(eps.begin(), eps.end(), model.name) != eps.end() ? model.name : eps.front();
    return pkg.path().string();
  }
  return std::nullopt;
}


namespace {

// The run-time probe sources, by their --source names (harness/probe_source.hpp).
// The probe sources in the order the chain tries them (the --source table's
// order, harness/probe_source.hpp), guide mode included: one row each, as
// llvm-reduce keeps its passes in one list.
struct SourceMaker {
  ProbeSource source;
  // `why_before`: why the sources before it were passed over (guide mode
  // says it in its report).
  std::function<std::unique_ptr<InstrumentationSource>(const std::string& why_before)> make;
  // Whether it runs the package's own code, where outputs that differ
  // between runs are compared (a rebuild from the exported program is
  // other code).
  bool own_code;
  // Tried only when every source before it was passed over, and only where
  // --source is auto or exported_program: guide mode, a rebuild per step.
  bool last_resort;
};

const std::vector<SourceMaker>& source_makers() {
  static const std::vector<SourceMaker> makers = {
      {ProbeSource::interpose, [](const std::string&) { return std::make_unique<InterposeSource>(); }, true, false},
      {ProbeSource::rewrite, [](const std::string&) { return std::make_unique<RewriteSource>(); }, true, false},
      {ProbeSource::exported_program, [](const std::string&) { return std::make_unique<ExportedProgramSource>(); },
       false, false},
      {ProbeSource::guide, [](const std::string& why) { return std::make_unique<GuideSource>(why); }, false, true},
  };
  return makers;
}

// The rows to try for this failure under --source `choice` (auto: each that
// can search it), in the table's order.
std::vector<const SourceMaker*> source_chain(ProbeSource choice, Predicate pred) {
  std::vector<const SourceMaker*> chain;
  for (const auto& row : source_makers()) {
    const bool chosen = row.last_resort ? choice == ProbeSource::automatic || choice == ProbeSource::exported_program
                                        : choice == ProbeSource::automatic || choice == row.source;
    if (chosen && (row.own_code || pred != Predicate::divergence)) {
      chain.push_back(&row);
    }
  }
  return chain;
}

// Guide mode asked for (--rebuild-per-step or --source guide) where it
// cannot search this failure: why.
std::optional<std::string> guide_refuses(Predicate pred, const Settings& settings) {
  if (pred == Predicate::divergence) {
    return std::string(
        "comparing two runs call site by call site needs run-time probes in the package's own code (drop "
        "--rebuild-per-step / --source guide)");
  }
  if (pred == Predicate::mismatch) {
    // Settings set rebuild_per_step for either spelling; name the one given.
    std::string given = settings.source == ProbeSource::guide ? "--source guide" : "--rebuild-per-step";
    return fmt::format(
        "guide mode ({}) prints kernel inputs; comparing kernels with eager needs the probes of one instrumented "
        "build (drop {})",
        given, given);
  }
  return std::nullopt;
}

}  // namespace

BisectOutcome run_bisection(JobContext& job, BisectSetup s, const SourceFactory& first) {
  Predicate pred = predicate_for(s.kind);
  if (pred == Predicate::unsupported) {
    return searched(Verdict::not_isolated, fmt::format("no kernel search for a {} failure", outcome_name(s.kind)));
  }
  if (auto ep = find_exported_program(job.settings, s.pkg, s.model, s.exported_model)) {
    s.exported_program = *ep;
  }
  Bisection bis;
  // The rows to try: guide mode alone where it was asked for; else the
  // chain, the tests' source (`first`) in place of the sources before guide mode.
  std::vector<const SourceMaker*> rows;
  if (job.settings.rebuild_per_step) {
    if (auto why = guide_refuses(pred, job.settings)) {
      return searched(Verdict::not_isolated, *why);
    }
    rows.push_back(&source_makers().back());
  } else {
    rows = source_chain(job.settings.source, pred);
    if (first) {
      rows.erase(std::remove_if(rows.begin(), rows.end(), [](const SourceMaker* r) { return !r->last_resort; }),
                 rows.end());
      rows.insert(rows.begin(), nullptr);  // nullptr: `first`
    }
  }
  // Each source that cannot probe says why and lets the next one try.
  BisectOutcome out;
  std::vector<std::string> why_not;
  for (const SourceMaker* row : rows) {
    std::unique_ptr<InstrumentationSource> source = row != nullptr ? row->make(out.why_not) : first();
    bis = Bisection{};
    bis.source = std::string(source->name());
    out = source->isolate(job, s, pred, bis);
    if (row != nullptr && row->last_resort) {
      return out;  // guide mode's answer, whatever it is
    }
    if (interrupt_requested()) {
      return searched(Verdict::interrupted);  // a stopped build or hook compile is no reason to try the next source
    }
    if (out.use == BisectOutcome::Use::searched) {
      break;
    }
    job.recorder.passed_over({bis.source, out.why_not});
    job.recorder.progress().note(fmt::format("probes: {} not used: {}", bis.source, out.why_not));
    why_not.push_back(fmt::format("{}: {}", bis.source, out.why_not));
  }
  if (out.use != BisectOutcome::Use::searched) {
    return searched(Verdict::not_isolated, "no probe source could be used (" + join(why_not, "; ") + ")");
  }
  if (out.verdict == Verdict::not_isolated && !why_not.empty() && !out.reason.empty()) {
    out.reason += " (" + join(why_not, "; ") + ")";
  }
  return out;
}

std::variant<FirstRunProbes, std::string> first_run_probes(JobContext& job, const BisectSetup& setup,
                                                           const SourceFactory& first) {
  const Settings& s = job.settings;
  if (s.rebuild_per_step || (s.source != ProbeSource::automatic && s.source != ProbeSource::interpose)) {
    return std::string("--source names another probe source");
  }
  std::unique_ptr<InstrumentationSource> source = first ? first() : std::make_unique<InterposeSource>();
  auto* probed = dynamic_cast<RunTimeProbeSource*>(source.get());
  if (probed == nullptr) {
    return std::string("the search's first source has no run-time probes");
  }
  auto prepared = probed->model_for(job, setup, Predicate::nonfinite);
  if (auto* why = std::get_if<std::string>(&prepared)) {
    return *why;
  }
  const ProbedModel& pm = std::get<ProbedModel>(prepared);
  const int n = static_cast<int>(pm.wrapper.call_sites.size());
  if (n == 0) {
    return std::string("the wrapper lists no call site");
  }
  FirstRunProbes out{pm.model, ProbePlan{}};
  out.plan.ranges.push_back({1, n, ProbeMode::stats});
  return out;
}

}  // namespace aoti_bisect
