#pragma once
// The kernel bisection phase of a job: pick the instrumentation source,
// isolate the first bad call site with it, and fold the search into the
// report (job/instrumentation.hpp for the sources).

#include <optional>
#include <string>

#include "search/instrumentation.hpp"

namespace aoti_bisect {

BisectOutcome run_bisection(JobEnv& env, BisectSetup setup);

// Why a source that builds from the exported program has nothing to build.
std::string needs_exported_program();

// Copies a finished search into a bisection record (runs, status, steps).
void record_search(Bisection& bis, const SearchResult& sr);

// The exported program to rebuild from: --exported-program, else the one
// inside the package (package_pt2); `name` is set to its model name.
std::optional<std::string> find_exported_program(const Settings& settings, const Package& pkg,
                                                 const ModelFiles& model, std::string& name);

}  // namespace aoti_bisect
