#pragma once
// Outcome kinds of one child run (design.md "Outcomes"), as one table: the
// source for names, help text, report fields and the first check to make.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

enum class OutcomeKind {
  ok,
  crash,
  device_assert,
  nonfinite,
  mismatch,
  oom,
  missing_op,
  device_mismatch,
  input_mismatch,
  error,
  timeout,
  // Of the job, never of one run: outputs whose checksums differ between
  // runs with the same inputs and flags (job.cpp, after the matrix).
  nondeterministic,
};

struct OutcomeInfo {
  OutcomeKind kind;
  std::string_view name;         // as in report.json
  std::string_view seen_as;      // how it shows
  std::string_view first_check;  // what a person should look at first
};

const std::vector<OutcomeInfo>& outcome_table();
const OutcomeInfo& outcome_info(OutcomeKind kind);
std::string_view outcome_name(OutcomeKind kind);
std::optional<OutcomeKind> outcome_from_name(std::string_view name);

// A failure of the model (everything except ok and input_mismatch, which is a
// problem of the inputs, not of the model).
bool is_model_failure(OutcomeKind kind);

}  // namespace aoti_bisect
