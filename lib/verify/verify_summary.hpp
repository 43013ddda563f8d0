#pragma once
// What `aoti-bisect verify` found, case by case, and its renderings:
// DIR/summary.json, DIR/summary.md, DIR/junit.xml. Pure: the two packages'
// reports on each case's inputs come in, statuses and text go out.
//
// summary.json (command "verify", schema_version 2):
//   package, failing_package, baseline (display paths; null when none),
//   baseline_signatures[], notes[] (neighbours not made, and why)
//   cases[]: name, what, input_shapes (one shape per input), status (also
//            as `verify`), why (one sentence), verdict, exit_code,
//            failure_kind, signature, culprit {call_index, kernel} | null,
//            before {verdict, failure_kind, signature} | null (the failing
//            package on the same inputs), outputs_vs_baseline {max_abs,
//            max_rel, beyond_tolerance, elements, worst_output} | null,
//            masked[] (sentences), report, seconds, error, note
//   status: clean; reproduces (an earlier signature), new_failure (another
//   one), fails (no earlier signature known); masked (clean outputs, but a
//   call site still makes NaN/Inf a later one cleans); count_changed (the
//   outputs' shapes differ from the failing package's on the same inputs);
//   could_not_test; interrupted; not_run.
// Exit code: 130 interrupted; 1 when any case fails, is masked or
// count_changed; else 4 when any could not be tested; 0 when all are clean.

#include <optional>
#include <string>
#include <vector>

#include "protocol/input_cut.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

// A failure the failing run had: its signature, kind and call site.
struct EarlierFailureSite {
  std::string signature;
  std::string kind;  // "nonfinite"
  std::optional<int> call_index;
};

struct VerifyCase {
  std::string name;
  std::string what;  // the neighbour in words
  std::string note;  // how it was run, where that matters ("below the compiled minimum ...")
  std::vector<std::vector<int64_t>> input_shapes;
  std::string status = "not_run";
  std::string why;  // one sentence, "" for a plain clean case
  std::string verdict = "not_run";
  int exit_code = -1;
  std::string failure_kind;
  std::string signature;
  std::optional<int> culprit_call_index;
  std::string culprit_kernel;
  // The failing package on the same inputs; absent where it was not run.
  struct Before {
    std::string verdict;
    std::string failure_kind;
    std::string signature;
  };
  std::optional<Before> before;
  std::optional<OutputsApart> apart;  // outputs finite under both packages, compared
  std::vector<std::string> masked;    // search/mask_scan.hpp mask_sentence
  std::string report;                 // relative to DIR
  double seconds = 0;
  std::string error;  // could_not_test: why
};

struct VerifySummary {
  std::string tool_version;
  std::string package;          // the fixed package, display path
  std::string failing_package;  // "" when not known
  std::string baseline;         // the failing run's report.json; "" when none
  std::vector<std::string> baseline_signatures;
  std::vector<EarlierFailureSite> earlier;  // what `reproduces` is judged against (not written)
  std::vector<VerifyCase> cases;
  std::vector<std::string> notes;
  bool interrupted = false;
  double seconds = 0;
  int exit_code = 0;
};

// A case's status and sentence from the fixed package's report on its
// inputs, and the failing package's (`before`, nullptr where not run). A
// failure reproduces an earlier one with its signature, or of its kind at
// its call site (a fix renames the kernel it changes: cpp_fused_div_0
// becomes cpp_fused_add_div_0).
// `rows`: the case's batch size where it has one (0 otherwise), to say that
// samples were dropped.
void judge_case(VerifyCase& c, const Report& fixed, const Report* before,
                const std::vector<EarlierFailureSite>& earlier, int64_t rows);

// "output 0: 8 rows before, 7 now: samples were dropped"; "" when the
// shapes agree. `before`/`now`: the outputs' shapes.
std::string count_change(const std::vector<std::vector<int64_t>>& before, const std::vector<std::vector<int64_t>>& now,
                         int64_t rows);

// True for statuses that fail verify (exit 1).
bool verify_fails(const std::string& status);
int verify_exit_code(const VerifySummary& s);

// "batch of 1 sample (the last batch of a loader): NaN at call site 1
// cpp_fused_div_mean_std_sub_0, as before the fix"; "" when every case is
// clean.
std::string first_failing_sentence(const VerifySummary& s);

std::string verify_summary_json(const VerifySummary& s);
std::string verify_summary_markdown(const VerifySummary& s);
std::string verify_summary_junit(const VerifySummary& s);

}  // namespace aoti_bisect
