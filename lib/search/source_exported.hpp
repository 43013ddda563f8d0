#pragma once
// The exported-program source and its builds (source_exported.cpp), which
// guide mode and the package-level sources use too.

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "search/instrumentation.hpp"

namespace aoti_bisect {

// An Inductor build of the setup's exported program at `printer_level`
// (cached). Throws Error like build_instrumented; the failure is noted in
// the report's builds first.
BuildResult build_from_exported_program(JobContext& job, const BisectSetup& setup, int printer_level,
                                        const std::vector<std::string>& filtered_kernels = {});

// The exported program at printer level 1 (cached), its call sites compared
// with the package's (builds.call_sites_match); for mismatch also its node
// map and the eager values of the mapped nodes. Or one line saying why not.
std::variant<ProbedModel, std::string> probed_exported_program(JobContext& job, const BisectSetup& setup,
                                                               Predicate predicate);

// The exported program compiled once more with the intermediate-value
// printer at level 1 (cached), plus, for mismatch, its node map and the
// eager values of the mapped nodes.
class ExportedProgramSource : public RunTimeProbeSource {
 public:
  std::string_view name() const override { return probe_source_name(ProbeSource::exported_program); }

 protected:
  std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup& setup,
                                                 Predicate predicate) override;
};

}  // namespace aoti_bisect
