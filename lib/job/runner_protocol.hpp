#pragma once
// The contract between the driver and aoti-bisect-runner: exit statuses and
// event names. Events are documented in README ("The runner").

namespace aoti_bisect {

enum class RunnerExit : int {
  ran = 0,             // the model ran; events "outputs" (and "comparison") follow
  usage = 2,           // bad runner command line (a driver bug)
  model_error = 10,    // the model raised; event "error" has the message
  input_mismatch = 11, // inputs do not fit the model; event "input_mismatch"
  cannot_test = 12,    // inputs, reference or package unreadable; event "fatal"
  internal = 13,       // anything else; event "fatal"
};

}  // namespace aoti_bisect
