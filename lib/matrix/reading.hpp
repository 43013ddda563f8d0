#pragma once
// The matrix read as a differential diagnosis: each variant changes one
// thing, and a profile's `findings:` table says what a contrast between a
// variant's runs and the baseline environment's runs means. A contrast the
// runs do not support is not stated.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "classify/outcome.hpp"
#include "config/config.hpp"

namespace aoti_bisect {

// One finished run of the matrix, as the reading needs it.
struct MatrixRunFacts {
  std::string variant;                     // "baseline" or the variant's name
  std::map<std::string, std::string> env;  // the run's variables
  OutcomeKind kind = OutcomeKind::ok;
  std::string first_line;                     // the error line, "" when ok
  std::vector<std::string> output_checksums;  // in output order; empty when the run returned none
  std::string id;                             // "baseline", "repeat.2": where its files are
};

struct Finding {
  std::string variant;
  std::string contrast;  // config.hpp FindingRule::contrast
  std::string sentence;  // the rule's `says`, filled in
};

// The findings `rules` state for `runs` (baseline first). `failure` is the
// matrix's failure kind (matrix.hpp), if any run failed. The baseline
// environment is every run whose variables equal the baseline's.
//
// When each contrast is supported (k of n: the variant's runs that show the
// failure; b of m: the baseline environment's):
//   refuses_inputs  a run of the variant ends in input_mismatch;
//   passes_with     the baseline environment fails (b > 0) and none of the
//                   variant's runs does, all of them ok, and (1 - b/m)^n <= 0.2:
//                   had the variant failed as often, n clean runs would be unlikely;
//   fails_with      the variant fails (k > 0) and the baseline environment
//                   never does, and (1 - k/n)^m <= 0.2;
//   more_reliable   the variant fails in all its runs, the baseline
//                   environment in some (0 < b < m), and (b/m)^n <= 0.2;
//   outputs_change  the baseline environment's runs are all ok with the same
//                   outputs (m >= 2, so they are repeatable), and a run of the
//                   variant is ok with other outputs;
//   stable_with     the baseline environment's ok runs returned two or more
//                   different outputs, and the variant's runs (n >= 2) are
//                   all ok with one and the same.
std::vector<Finding> read_matrix(const std::vector<FindingRule>& rules, const std::vector<MatrixRunFacts>& runs,
                                 std::optional<OutcomeKind> failure);

// Whether the runs of the baseline's environment (the baseline, `repeat`)
// ended in different outcomes, or, all ok, returned different outputs.
bool baseline_env_flaky(const std::vector<MatrixRunFacts>& runs);

// Outputs that change under a variant where nothing else does (memory
// nothing wrote): the first `outputs_change` finding, as a failure of the
// variant's environment, though no run ended in one.
struct OutputsChange {
  std::string variant;
  std::map<std::string, std::string> env;  // the variant's
  int runs = 0;                            // every run of the matrix
  int reproduced = 0;                      // the variant's runs
  std::string sentence;                    // the finding's
};
std::optional<OutputsChange> outputs_change(const std::vector<Finding>& findings,
                                            const std::vector<MatrixRunFacts>& runs);

// Outputs that differ between the ok runs of the baseline's environment
// (issue 39): how many different outputs, in how many runs, how many agreed
// at most, and which run returned the first (the others are compared with
// its files). nullopt: they all returned the same.
struct OutputsDiffer {
  int distinct = 0;
  int runs = 0;
  int agreeing = 0;
  std::string first_id;
  // Per variant of the baseline's environment: its runs whose outputs are
  // not the first run's (the baseline counts as one).
  std::map<std::string, int> differing;
};
std::optional<OutputsDiffer> outputs_differ(const std::vector<MatrixRunFacts>& runs);

// "A=1 B=2": the variables `env` sets beyond (or unlike) `base`, as the
// sentences' {env} and the job's messages name a variant.
std::string env_difference(const std::map<std::string, std::string>& env,
                           const std::map<std::string, std::string>& base);

// The chance bound above: 0.2.
inline constexpr double k_contrast_chance = 0.2;

}  // namespace aoti_bisect
