#pragma once
// From what one child left behind (its exit status, the tail of its streams,
// its events) to an outcome kind and the most useful error line.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "classify/outcome.hpp"
#include "process/process.hpp"
#include "protocol/events.hpp"
#include "protocol/values.hpp"

namespace aoti_bisect {

struct Classification {
  OutcomeKind kind = OutcomeKind::error;
  std::string first_line;  // the most useful error line, "" when ok
  std::optional<int> signal;
  std::vector<TensorInfo> inputs;  // from the "inputs" event
  std::string binding_form;        // how the file was bound (inputs/call_spec.hpp InputBinding::form)
  bool by_call_spec = false;
  std::vector<std::string> inputs_changed;  // what the runner did to them (moved to the device, copied into a layout)
  // Dynamic dimensions outside the range the package was compiled for, run
  // as given (the package's own input checks are off by default).
  std::vector<std::string> inputs_outside_range;
  std::vector<TensorStats> input_stats;
  std::vector<TensorStats> outputs;  // from the "outputs" event
  std::optional<Comparison> comparison;
  // A call of the model ran past --timeout (the runner's own limit, event
  // "time_limit"): the limit, and when it stopped on the steady clock.
  std::optional<double> time_limit_s;
  double stopped_at = 0;
  std::map<std::string, std::string> environment;  // from the "start" event
  // The child could not test (unreadable inputs/reference/package): the
  // driver stops with exit 4 and this message.
  std::optional<std::string> cannot_test;
  // The runner failed in a way that is the tool's fault (exit 5).
  std::optional<std::string> internal;
  // Under the poison variant: why the poison reached none of the model's
  // allocations ("" when it did, or the run did not poison).
  std::string poison_unreached;
};

// Model failures are what the events (or a signal after the first event)
// say happened in the model. A runner that never wrote its first event
// ("start"), or that ended without its closing events where its exit status
// names no failure of the model (exit 0 without "done" or "error"; 126 or 127,
// the loader's, unless the model was running and the line names a known
// failure), is the tool's failure: `internal`, with the first error line.
Classification classify_run(const ExitStatus& status, const Events& events);

// A mismatch's first line: how many output values are outside tolerance,
// how many of them are NaN/Inf on one side only (the reference's NaN where
// the outputs are finite), and the error figures of the others, never an
// error of 0 for a failing comparison ("20 of 20 output values outside
// tolerance: all 20 where the reference holds NaN/Inf and the outputs are
// finite").
std::string mismatch_line(const Comparison& c);

// "input1 holds 1 NaN and 0 Inf (first at [2, 5])" for each input that holds
// NaN/Inf, joined with "; "; "" when none does.
std::string bad_inputs_text(const std::vector<TensorStats>& inputs);

// The run's inputs as the report lists them, with the NaN/Inf each holds
// (counted by the runner before the run; never their values).
std::vector<TensorInfo> inputs_with_nonfinite_counts(const Classification& c);

// How the run's inputs were bound, one sentence for the report: "Bound by the
// package's call spec (keyword dict): each tensor by its argument." or "Taken
// in file order: the package carries no call spec to bind them by."; "" when
// the run did not say.
std::string inputs_binding_text(const Classification& c);

// The first line of `stderr_tail` that says error (or cannot), as a dynamic
// loader writes it; else the most useful line.
std::string first_error_line(const std::string& stderr_tail);

// The kind an error text points to (device_assert, oom, missing_op, ...), or
// nullopt when it says nothing specific.
std::optional<OutcomeKind> kind_from_error_text(const std::string& text);

// The line of `stderr_tail` or `message` a person should read first: a known
// failure pattern (index out of bounds, illegal memory access, ...) wins over
// the generic exception text ("API call failed at ...").
std::string most_useful_line(const std::string& stderr_tail, const std::string& message);

}  // namespace aoti_bisect
