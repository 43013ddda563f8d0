#pragma once
// The kernel bisection phase of a job: pick the instrumentation source,
// isolate the first bad call site with it, and fold the search into the
// report (search/instrumentation.hpp for the sources). The chain of sources:
// interposition, the wrapper rewrite, the exported program, guide mode; each
// one that cannot probe says why and lets the next try.

#include <optional>
#include <string>
#include <variant>

#include "search/instrumentation.hpp"

namespace aoti_bisect {

// `first`: the source to use in place of the chain (the tests' seam); empty:
// the chain as --source and the failure allow.
BisectOutcome run_bisection(JobContext& job, BisectSetup setup, const SourceFactory& first = {});

// The job's first run as the search's trace run (issue 67): the package's
// own library with run-time probes reading every call site, so that the run
// that shows the failure also names the first call site that makes it.
struct FirstRunProbes {
  ModelDir model;  // the package as extracted, with the hook library bound
  ProbePlan plan;  // stats at every call site
};
// `setup` as for a NaN/Inf search (its kind is not known before the run);
// `first`: the tests' seam, as run_bisection's. Or why the first run is plain.
std::variant<FirstRunProbes, std::string> first_run_probes(JobContext& job, const BisectSetup& setup,
                                                           const SourceFactory& first = {});

// The exported program to rebuild from: --exported-program, else the one
// inside the package (package_pt2); `name` is set to its model name.
std::optional<std::string> find_exported_program(const Settings& settings, const Package& pkg, const ModelFiles& model,
                                                 std::string& name);

}  // namespace aoti_bisect
