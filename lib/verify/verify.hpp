#pragma once
// `aoti-bisect verify FIXED.pt2 --baseline OUT/report.json`: a fix checked
// on the original scope. From the failing run's report it takes the inputs
// (every file, in order), its minimal failing set, the failing package and
// its signature; it plans the neighbours (verify/neighbours.hpp) from the
// fixed package's dynamic sizes and index checks, and the runner makes
// their files. Then, in this process, one job (job/job.hpp) per package and
// case: the failing package on every case (to know the outputs' shapes and
// what it did there), the fixed one under the flag matrix on the original
// inputs, alone under the default environment on each neighbour, with a
// probed run after a clean one to find masks and the search where it
// fails. The jobs of one package share its extraction and the fork server
// holding its model. Then the outputs finite under both are compared, and
// each case judged (verify/verify_summary.hpp).

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "harness/settings.hpp"
#include "verify/verify_summary.hpp"

namespace aoti_bisect {

struct VerifyOptions {
  std::filesystem::path fixed;     // the fixed package
  std::filesystem::path baseline;  // the failing run's report.json; empty: none (then `inputs`)
  std::vector<std::string> inputs;  // --inputs: instead of the baseline's; the first one's neighbours
  bool neighbours = true;
  std::vector<std::string> signatures;  // --signature: earlier failures besides the baseline's
  RunOptions run;  // what every job shares: model, config, libraries, python, cache, tolerances, timeout
  std::filesystem::path out_dir;
};

using VerifyProgress = std::function<void(const std::string& line)>;

// Throws Error(usage) for a baseline that is not a run's report or names no
// inputs, Error(cannot_test) for inputs or a package it names that cannot
// be found, before anything is written. Everything about a case goes into
// its VerifyCase; the summaries are written when it returns.
VerifySummary run_verify(const VerifyOptions& options, const VerifyProgress& progress);

}  // namespace aoti_bisect
