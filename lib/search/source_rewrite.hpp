#pragma once
// The wrapper-rewrite source (source_rewrite.cpp).

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "search/instrumentation.hpp"

namespace aoti_bisect {

// The wrapper rewrite: the package's wrapper.cpp with level-1 probe calls
// inserted, recompiled with the package's recorded commands, its kernel.cpp
// compiled as recorded, its weights cut out of its library and relinked
// (cached by content). Trusted only when a run of it returns the package's
// outputs bit for bit.
class RewriteSource : public RunTimeProbeSource {
 public:
  std::string_view name() const override { return probe_source_name(ProbeSource::rewrite); }

 protected:
  std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup& setup,
                                                 Predicate predicate) override;
  bool next_may_try() const override { return true; }
  // The wrapper at -O0 first; refused by the guard, once more as recorded.
  std::optional<std::string> retry_untrusted() override;

 private:
  bool m_recorded_flags = false;
};

}  // namespace aoti_bisect
