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
struct SourceMaker {
  ProbeSource source;
  std::function<std::unique_ptr<InstrumentationSource>()> make;
  // Whether it runs the package's own code, where outputs that differ
  // between runs are compared (a rebuild from the exported program is
  // other code).
  bool own_code;
};

const std::vector<SourceMaker>& source_makers() {
  static const std::vector<SourceMaker> makers = {
      {ProbeSource::interpose, [] { return std::make_unique<InterposeSource>(); }, true},
      {ProbeSource::rewrite, [] { return std::make_unique<RewriteSource>(); }, true},
      {ProbeSource::exported_program, [] { return std::make_unique<ExportedProgramSource>(); }, false},
  };
  return makers;
}

// The sources to try, in the --source table's order: the one chosen, or
// (auto) each that can search this failure. Guide mode comes after them,
// from run_bisection.
std::vector<std::unique_ptr<InstrumentationSource>> source_chain(ProbeSource choice, Predicate pred) {
  std::vector<std::unique_ptr<InstrumentationSource>> chain;
  for (const auto& info : probe_source_table()) {
    auto maker = std::find_if(source_makers().begin(), source_makers().end(),
                              [&](const SourceMaker& m) { return m.source == info.source; });
    if (maker == source_makers().end() || (choice != ProbeSource::automatic && choice != info.source) ||
        (pred == Predicate::divergence && !maker->own_code)) {
      continue;
    }
    chain.push_back(maker->make());
  }
  return chain;
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
  if (pred == Predicate::divergence && job.settings.rebuild_per_step) {
    return searched(Verdict::not_isolated,
                    "comparing two runs call site by call site needs run-time probes in the package's own code (drop "
                    "--rebuild-per-step / --source guide)");
  }
  if (job.settings.rebuild_per_step) {
    if (pred == Predicate::mismatch) {
      // Settings set rebuild_per_step for either spelling; name the one given.
      std::string given = job.settings.source == ProbeSource::guide ? "--source guide" : "--rebuild-per-step";
      return searched(
          Verdict::not_isolated,
          fmt::format("guide mode ({}) prints kernel inputs; comparing kernels with eager needs the probes of "
                      "one instrumented build (drop {})",
                      given, given));
    }
    bis.source = std::string(probe_source_name(ProbeSource::guide));
    return GuideSource().isolate(job, s, pred, bis);
  }
  // The sources in order of preference: each one that cannot probe says why
  // and lets the next one try.
  const ProbeSource choice = job.settings.source;
  std::vector<std::unique_ptr<InstrumentationSource>> chain;
  if (first) {
    chain.push_back(first());
  } else {
    chain = source_chain(choice, pred);
  }
  BisectOutcome out;
  std::vector<std::string> why_not;
  for (size_t i = 0; i < chain.size(); ++i) {
    bis = Bisection{};
    bis.source = std::string(chain[i]->name());
    out = chain[i]->isolate(job, s, pred, bis);
    if (interrupt_requested()) {
      return searched(Verdict::interrupted);  // a stopped build or hook compile is no reason to try the next source
    }
    if (out.use == BisectOutcome::Use::searched) {
      break;
    }
    job.recorder.passed_over({bis.source, out.why_not});
    job.recorder.progress().note(fmt::format("probes: {} not used: {}", bis.source, out.why_not));
    why_not.push_back(fmt::format("{}: {}", bis.source, out.why_not));
    if (i + 1 == chain.size() && choice != ProbeSource::interpose && choice != ProbeSource::rewrite &&
        pred != Predicate::divergence) {
      bis = Bisection{};
      bis.source = std::string(probe_source_name(ProbeSource::guide));
      return GuideSource(out.why_not).isolate(job, s, pred, bis);
    }
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
