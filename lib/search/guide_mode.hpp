#pragma once
// Guide mode (--rebuild-per-step): the manual debugging guide done
// literally, for where the runner cannot receive probe calls and as the
// baseline the benchmark compares against. Each search step builds a model
// that prints (level 2) the tensors of the sites in the tested range, runs
// it once (no probe plan), and reads what it wrote to the child's stdout.
// Only for NaN/Inf and faults. The build is, where it can be, the package's
// own wrapper.cpp with print calls around the range's call sites,
// recompiled with its recorded commands (only the wrapper object changes
// from step to step); else the exported program rebuilt by Inductor with
// the printer at level 2, filtered to the range's kernel names
// (guide_mode.cpp). Reading the printed output: guide_printer.hpp.

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "search/instrumentation.hpp"

namespace aoti_bisect {

// Guide mode (--rebuild-per-step, or the fallback when probe calls cannot
// reach the runner): one level-2 build per search step (guide_mode.cpp):
// the package's own wrapper with print calls around the range's call sites
// (the rewrite, B; no exported program needed), else the exported program
// rebuilt by Inductor. Interposition (A) has no use for a build per range:
// its hooks are switched per call site at run time by the probe plan.
class GuideSource : public InstrumentationSource {
 public:
  explicit GuideSource(std::string fallback_reason = "") : m_fallback_reason(std::move(fallback_reason)) {}
  std::string_view name() const override { return probe_source_name(ProbeSource::guide); }
  BisectOutcome isolate(JobContext& job, const BisectSetup& setup, Predicate predicate, Bisection& bis) override;

 private:
  std::string m_fallback_reason;
};

}  // namespace aoti_bisect
