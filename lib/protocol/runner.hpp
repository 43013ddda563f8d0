#pragma once
// The contract between the driver and aoti-bisect-runner: the runner's exit
// statuses and its event kinds, one table each (docs/runner.md). Both
// sides name events only through this table.

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace aoti_bisect {

enum class RunnerExit : int {
  ran = 0,              // the model ran; events "outputs" (and "comparison") follow
  usage = 2,            // bad runner command line (a driver bug)
  model_error = 10,     // the model raised; event "error" has the message
  input_mismatch = 11,  // inputs do not fit the model; event "input_mismatch"
  cannot_test = 12,     // inputs, reference or package unreadable; event "fatal"
  internal = 13,        // anything else; event "fatal"
  time_limit = 14,      // a call of the model ran past --time-limit; event "time_limit"
};

// `aoti-bisect-runner --versions` (its only argument): no run; one JSON line
// on stdout, {"torch": "2.11.0", "hip": "", "torch_dir": "/.../torch"},
// "hip" naming the HIP runtime where the runner's LibTorch is a ROCm build,
// "torch_dir" the folder holding its lib/ and include/. Exit 0.
inline constexpr std::string_view k_runner_versions_flag = "--versions";
// `aoti-bisect-runner --make-inputs REQUEST` and `--compare-outputs REQUEST`
// (their only arguments): no model loaded; the answer is written where the
// request says (protocol/input_cut.hpp). Exit 0, or 13 for a request that
// cannot be read.
inline constexpr std::string_view k_make_inputs_flag = "--make-inputs";
inline constexpr std::string_view k_compare_outputs_flag = "--compare-outputs";
// --kept-inputs REQUEST: the inputs `aoti-bisect capture` kept, raw, saved
// as inputs files in the form `run` takes (lib/capture/capture.hpp).
inline constexpr std::string_view k_kept_inputs_flag = "--kept-inputs";

// In the order a run writes them.
enum class EventKind {
  start,           // versions, device, os
  batch,           // with --batch-list: batch `index` of `of` (its `file`) begins; its events follow
  inputs,          // what the inputs file holds; moved/problems
  input_mismatch,  // the inputs do not fit (then exit 11)
  input_stats,     // statistics of the inputs
  loaded,          // the model is loaded
  hooks,           // interposition hooks bound into the model (hooks, slots, unbound)
  poison,          // AOTI_BISECT_POISON=1: the model's allocations poisoned (slots, unbound; message on failure)
  probes,          // the probe plan is installed
  run_begin,
  site_begin,      // a call site starts (trace and above)
  probe,           // one tensor's statistics before or after a launch (stats and above)
  saved,           // one tensor saved for the reproducer (save)
  sync_error,      // the device reported an error after a launch (sync, CUDA)
  site_end,        // the launch returned, with the tensors it touched
  run_end,         // probe call counts
  probes_missing,  // an instrumented model whose probe calls never reached the runner
  outputs,         // statistics of the outputs
  comparison,      // outputs against the reference
  batch_end,       // with --batch-list: batch `index` ended (`nonfinite`: its outputs hold NaN/Inf; `error`: it
                   // raised); the loop ends after a failing batch unless --keep-going
  error,           // the model raised (then exit 10)
  fatal,           // the runner could not go on (then exit 12 or 13)
  signal,          // written from a fatal-signal handler
  time_limit,      // a call of the model ran past --time-limit (`seconds`), written from its timer (then exit 14)
  done,            // the protocol's closing event
  unknown,         // a line this version does not know
};

struct EventInfo {
  EventKind kind;
  std::string_view name;  // the "event" field
};
const std::vector<EventInfo>& event_table();
std::string_view event_name(EventKind kind);
EventKind event_kind_from_name(std::string_view name);
// The kind of one parsed event line (its "event" field).
EventKind event_kind(const nlohmann::json& event);

}  // namespace aoti_bisect
