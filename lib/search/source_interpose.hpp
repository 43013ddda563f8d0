#pragma once
// The interposition source (source_interpose.cpp).

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "search/instrumentation.hpp"

namespace aoti_bisect {

// Interposition, the package alone: a hook library generated from the
// package's text (codegen/hooks.hpp), bound by the runner into the model's
// own GOT slots. No rebuild of the model; its library runs unchanged.
class InterposeSource : public RunTimeProbeSource {
 public:
  std::string_view name() const override { return probe_source_name(ProbeSource::interpose); }

 protected:
  std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup& setup,
                                                 Predicate predicate) override;
  bool next_may_try() const override { return true; }
};

}  // namespace aoti_bisect
