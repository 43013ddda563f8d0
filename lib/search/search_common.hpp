#pragma once
// What the searches of lib/search share and nothing outside it needs: the
// fidelity checks' reference run, a search folded into the bisection record
// (search.cpp). search.hpp is the entry point; this is internal.

#include <string>
#include <vector>

#include "bisect/bisect.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

// Why a source that builds from the exported program has nothing to build.
std::string needs_exported_program();

// The first run of the job under `variant` (the package as shipped), if it
// returned outputs; the fidelity checks compare instrumented runs with it.
const RunRecord* first_run_with_outputs(const Report& report, const std::string& variant);

// Whether two runs' outputs are bit-identical (by checksum).
bool same_outputs(const std::vector<TensorStats>& a, const std::vector<TensorStats>& b);

// Copies a finished search into a bisection record (runs, status, steps).
void record_search(Bisection& bis, const SearchResult& sr);

}  // namespace aoti_bisect
