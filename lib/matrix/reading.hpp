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
  std::string variant;                      // "baseline" or the variant's name
  std::map<std::string, std::string> env;   // the run's variables
  OutcomeKind kind = OutcomeKind::ok;
  std::string first_line;                   // the error line, "" when ok
  std::vector<std::string> output_checksums; // in output order; empty when the run returned none
};

struct Finding {
  std::string variant;
  std::string contrast;   // config.hpp FindingRule::contrast
  std::string sentence;   // the rule's `says`, filled in
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

// "A=1 B=2": the variables `env` sets beyond (or unlike) `base`, as the
// sentences' {env} and the job's messages name a variant.
std::string env_difference(const std::map<std::string, std::string>& env, const std::map<std::string, std::string>& base);

// The chance bound above: 0.2.
inline constexpr double k_contrast_chance = 0.2;

}  // namespace aoti_bisect
