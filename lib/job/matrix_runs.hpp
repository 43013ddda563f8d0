#pragma once
// What the flag matrix's runs showed, for the job (job.cpp): the summary
// (variants, the failure, the environment the search uses), the runs as the
// matrix's reading needs them, its findings as the report holds them, whether
// the baseline's environment disagreed with itself, and the runs of the
// package's own input check.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/runs.hpp"
#include "harness/settings.hpp"
#include "matrix/matrix.hpp"
#include "matrix/reading.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

struct MatrixResult {
  std::vector<VariantSummary> variants;
  std::optional<Failure> failure;
  std::map<std::string, std::string> chosen_env;
};

// The variants, the failure and the environment the search uses.
MatrixResult summarize_runs(const std::vector<PlannedRun>& plan, const std::vector<ChildResult>& results);
// The runs of the matrix as its reading needs them (matrix/reading.hpp).
std::vector<MatrixRunFacts> run_facts(const std::vector<PlannedRun>& plan, const std::vector<ChildResult>& results);
std::vector<MatrixFinding> report_findings(const std::vector<Finding>& findings);
// Whether the runs of the baseline's environment (the baseline, `repeat`)
// ended in different outcomes.
// (Also when its ok runs return other outputs: they differ run to run.)
bool baseline_env_flaky(const std::vector<PlannedRun>& plan, const std::vector<ChildResult>& results);
// The variants whose refusal of the inputs a finding rule reads (the
// package's own input check): one run of each.
std::vector<PlannedRun> input_check_runs(const Settings& s);

}  // namespace aoti_bisect
