// RunTimeProbeSource: the model with run-time probes (with the exported program's node map for wrong
// values) searched by the shared probed search, retried when untrusted, and stopped runs explained.

#include "search/instrumentation.hpp"

#include <fmt/format.h>

#include "evidence/wrapper_layout.hpp"
#include "search/probed_search.hpp"
#include "search/source_exported.hpp"

namespace aoti_bisect {

std::variant<ProbedModel, std::string> package_model_base(JobContext& job, const BisectSetup& s, Predicate pred) {
  if (pred != Predicate::mismatch) {
    return ProbedModel{};
  }
  auto ep = probed_exported_program(job, s, pred);
  if (auto* why = std::get_if<std::string>(&ep)) {
    ProbedModel alone;
    alone.no_node_map =
        "comparing kernels with eager needs the exported program's map from buffers to graph nodes: " + *why;
    return alone;
  }
  ProbedModel nodes = std::move(std::get<ProbedModel>(ep));
  if (auto why = call_sites_differ(s.wrapper, nodes.wrapper, "exported program's build"); !why.empty()) {
    return fmt::format(
        "the exported program's build launches other kernels than the package ({} call sites "
        "against {}; {}): its map from buffers to graph nodes does not fit the package's",
        nodes.wrapper.call_sites.size(), s.wrapper.call_sites.size(), why);
  }
  return nodes;
}

ChildRequest search_request(const BisectSetup& s, std::string id, ModelDir model, std::optional<ProbePlan> plan,
                            const std::map<std::string, std::string>& env, std::string group) {
  ChildRequest req;
  req.id = std::move(id);
  req.variant = s.variant;
  req.env = s.env;
  for (const auto& [k, v] : env) {
    req.env[k] = v;
  }
  req.model = std::move(model);
  req.probe_plan = std::move(plan);
  req.batches = s.batches;
  req.group = std::move(group);
  return req;
}

namespace {

// A search run, with probes, that the user's --timeout stopped where the
// failure searched for is not a hang (report.json runs[] from `from` on):
// what it shows is the limit, not whether the failure reproduces.
std::optional<std::string> stopped_at_limit(const JobContext& job, const BisectSetup& setup, size_t from) {
  const auto& runs = job.recorder.report().runs;
  if (setup.kind == OutcomeKind::timeout || job.settings.timeout_s <= 0) {
    return std::nullopt;
  }
  for (size_t i = from; i < runs.size(); ++i) {
    const RunRecord& r = runs[i];
    if (r.group == "search" && r.outcome == OutcomeKind::timeout) {
      const std::string purpose = r.id.substr(r.id.rfind('.') + 1);
      return fmt::format(
          "the kernel search's {} run, with probes, was stopped at its {:g} s limit (--timeout), which the "
          "plain runs that failed kept within; probes make a run slower: give a larger --timeout",
          purpose, job.settings.timeout_s);
    }
  }
  return std::nullopt;
}

}  // namespace

BisectOutcome RunTimeProbeSource::isolate(JobContext& job, const BisectSetup& setup, Predicate predicate,
                                          Bisection& bis) {
  const size_t from = job.recorder.report().runs.size();
  BisectOutcome out = search(job, setup, predicate, bis);
  if (out.verdict == Verdict::isolated || out.verdict == Verdict::interrupted) {
    return out;
  }
  if (auto limit = stopped_at_limit(job, setup, from)) {
    // Never "did not reproduce": a stopped run did not show either way.
    bis.status = search_status_name(SearchResult::Status::error);
    bis.message = *limit;
    job.recorder.bisection(bis);
    BisectOutcome stopped = searched(Verdict::not_isolated, *limit);
    stopped.probed = out.probed;
    return stopped;
  }
  return out;
}

BisectOutcome RunTimeProbeSource::search(JobContext& job, const BisectSetup& setup, Predicate predicate,
                                         Bisection& bis) {
  const Bisection before = bis;
  for (;;) {
    auto prepared = prepare(job, setup, predicate);
    if (auto* why = std::get_if<std::string>(&prepared)) {
      return next_may_try() ? passed_over(*why) : searched(Verdict::not_isolated, *why);
    }
    ModelDir probed = std::get<ProbedModel>(prepared).model;
    BisectOutcome out = search_probed_model(job, setup, predicate, bis, std::move(std::get<ProbedModel>(prepared)));
    if (out.use != BisectOutcome::Use::untrusted) {
      out.probed = probed;
      return out;
    }
    auto again = retry_untrusted();
    if (!again) {
      return out;
    }
    job.recorder.progress().note(out.why_not + "; " + *again);
    bis = before;
  }
}

}  // namespace aoti_bisect
