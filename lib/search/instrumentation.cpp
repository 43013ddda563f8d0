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

BisectOutcome RunTimeProbeSource::isolate(JobContext& job, const BisectSetup& setup, Predicate predicate,
                                          Bisection& bis) {
  const Bisection before = bis;
  for (;;) {
    auto prepared = prepare(job, setup, predicate);
    if (auto* why = std::get_if<std::string>(&prepared)) {
      return next_may_try() ? passed_over(*why) : searched(Verdict::not_isolated, *why);
    }
    ModelDir probed = std::get<ProbedModel>(prepared).model;
    BisectOutcome out = ProbedSearch(job, setup, predicate, bis, std::move(std::get<ProbedModel>(prepared))).run();
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
