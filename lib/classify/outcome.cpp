// The outcome kinds' table: each kind's name, how it shows, and what a person should check first.

#include "classify/outcome.hpp"

#include "common/by_name.hpp"

namespace aoti_bisect {

const std::vector<OutcomeInfo>& outcome_table() {
  static const std::vector<OutcomeInfo> table = {
      {OutcomeKind::ok, "ok", "exit 0, outputs finite (and within tolerance of the reference)", ""},
      {OutcomeKind::crash, "crash", "killed by a signal, or a CUDA illegal-memory-access error",
       "the kernel that faulted and the indices it read"},
      {OutcomeKind::device_assert, "device_assert",
       "a device-side assert or an AOTI check such as \"index out of bounds\"",
       "inputs, targets, operator preconditions"},
      {OutcomeKind::nonfinite, "nonfinite", "NaN/Inf in the outputs from finite inputs",
       "the first kernel that introduced them"},
      {OutcomeKind::mismatch, "mismatch", "outputs outside tolerance of the reference", "precision, then the kernel"},
      {OutcomeKind::oom, "oom", "out-of-memory errors", "shapes, tensor lifetimes, process memory"},
      {OutcomeKind::missing_op, "missing_op", "operator or kernel not available",
       "versions, extension, backend, dtype"},
      {OutcomeKind::device_mismatch, "device_mismatch", "tensors on different devices",
       "placement of the model and of each input"},
      {OutcomeKind::input_mismatch, "input_mismatch", "inputs do not fit the package",
       "the inputs file, not the model"},
      {OutcomeKind::error, "error", "any other exception; its first line kept", "the first error line"},
      {OutcomeKind::timeout, "timeout", "no exit within the limit", "the last kernel launched"},
      {OutcomeKind::nondeterministic, "nondeterministic",
       "outputs that differ between runs with the same inputs and flags",
       "the first kernel whose outputs differ between runs from the same inputs: parallel accumulation (atomic "
       "adds), memory nothing wrote, or a race"},
  };
  return table;
}

const OutcomeInfo& outcome_info(OutcomeKind kind) {
  for (const auto& info : outcome_table()) {
    if (info.kind == kind) {
      return info;
    }
  }
  return outcome_table().back();
}

std::string_view outcome_name(OutcomeKind kind) {
  return outcome_info(kind).name;
}

std::optional<OutcomeKind> outcome_from_name(std::string_view name) {
  return find_by_name(outcome_table(), name, [](const auto& info) { return info.kind; });
}

bool is_model_failure(OutcomeKind kind) {
  return kind != OutcomeKind::ok && kind != OutcomeKind::input_mismatch;
}

}  // namespace aoti_bisect
