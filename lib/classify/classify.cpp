// Classifying one child run: its exit status, the tails of its streams and its events turned into an
// outcome kind and the most useful error line, by known error texts and the runner's exit codes.

#include "classify/classify.hpp"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <map>

#include <fmt/format.h>

#include "common/text.hpp"
#include "protocol/runner.hpp"
#include "protocol/values.hpp"

namespace aoti_bisect {
namespace {

struct Pattern {
  std::string_view needle;  // lowercase
  OutcomeKind kind;
};

// Ordered: the first match wins, specific before general.
const std::vector<Pattern>& patterns() {
  static const std::vector<Pattern> table = {
      {"illegal memory access", OutcomeKind::crash},
      {"misaligned address", OutcomeKind::crash},
      {"unspecified launch failure", OutcomeKind::crash},
      {"device-side assert", OutcomeKind::device_assert},
      {"index out of bounds", OutcomeKind::device_assert},
      {"indexerror", OutcomeKind::device_assert},
      {"out of range", OutcomeKind::device_assert},
      {"assertion", OutcomeKind::device_assert},
      {"at least one nan", OutcomeKind::nonfinite},
      {"at least one inf", OutcomeKind::nonfinite},
      {"out of memory", OutcomeKind::oom},
      {"outofmemory", OutcomeKind::oom},
      {"std::bad_alloc", OutcomeKind::oom},
      {"failed to allocate", OutcomeKind::oom},
      {"unmatched device type", OutcomeKind::device_mismatch},
      {"expected all tensors to be on the same device", OutcomeKind::device_mismatch},
      {"unmatched dtype", OutcomeKind::input_mismatch},
      {"unmatched dim value", OutcomeKind::input_mismatch},
      {"unmatched stride value", OutcomeKind::input_mismatch},
      {"dim value is too", OutcomeKind::input_mismatch},
      {"could not run", OutcomeKind::missing_op},
      {"not implemented for", OutcomeKind::missing_op},
      {"no such operator", OutcomeKind::missing_op},
      {"undefined symbol", OutcomeKind::missing_op},
      {"unsupported device found", OutcomeKind::missing_op},
      {"no kernel image is available", OutcomeKind::missing_op},
  };
  return table;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    while (!line.empty() && (line.back() == '\r' || std::isspace(static_cast<unsigned char>(line.back())))) {
      line.pop_back();
    }
    size_t lead = line.find_first_not_of(" \t");
    if (lead != std::string::npos) {
      out.push_back(line.substr(lead));
    }
    if (nl == std::string::npos) {
      break;
    }
    start = nl + 1;
  }
  return out;
}

// The last event of each kind, found in one pass: a run that probed 10,000
// call sites wrote about 60,000 events, and classifying one looks up a
// dozen kinds.
class LastEvents {
 public:
  explicit LastEvents(const Events& events) {
    for (size_t i = events.size(); i-- > 0;) {
      if (m_last.count(events.kind(i)) == 0) {
        m_last.emplace(events.kind(i), events[i]);
      }
    }
  }
  const nlohmann::json* operator()(EventKind kind) const {
    auto it = m_last.find(kind);
    return it == m_last.end() ? nullptr : &it->second;
  }

 private:
  std::map<EventKind, nlohmann::json> m_last;
};

bool is_noise(const std::string& line) {
  // Lines that never help: warnings and stack frames.
  static const std::vector<std::string_view> noise = {"warning", "frame #", "exception raised from"};
  std::string l = lower(line);
  return std::any_of(noise.begin(), noise.end(), [&](auto n) { return l.find(n) != std::string::npos; });
}

void read_tensor_events(const LastEvents& find_event, Classification& c) {
  if (auto* e = find_event(EventKind::start)) {
    for (const char* key : {"torch", "cuda", "hip", "device_key", "device_name", "driver", "os"}) {
      if (e->contains(key) && (*e)[key].is_string()) {
        c.environment[key] = (*e)[key].get<std::string>();
      }
    }
  }
  if (auto* e = find_event(EventKind::inputs)) {
    for (const auto& t : e->value("tensors", nlohmann::json::array())) {
      c.inputs.push_back(tensor_info_from_json(t));
    }
    if (auto b = e->find("binding"); b != e->end() && b->is_object()) {
      c.binding_form = b->value("form", "");
      c.by_call_spec = b->value("by_call_spec", false);
    }
    for (const auto& m : e->value("moved", nlohmann::json::array())) {
      if (m.is_string()) {
        c.inputs_changed.push_back(m.get<std::string>());
      }
    }
    for (const auto& m : e->value("outside_range", nlohmann::json::array())) {
      if (m.is_string()) {
        c.inputs_outside_range.push_back(m.get<std::string>());
      }
    }
  }
  if (auto* e = find_event(EventKind::poison); e && e->value("slots", 0) == 0) {
    c.poison_unreached = e->value("message", std::string("the model library has no GOT slot for "
                                                         "aoti_torch_empty_strided (no buffer allocated through the "
                                                         "C shim's PLT)"));
  }
  if (auto* e = find_event(EventKind::input_stats)) {
    for (const auto& t : (*e)["tensors"]) {
      c.input_stats.push_back(tensor_stats_from_json(t));
    }
  }
  if (auto* e = find_event(EventKind::outputs)) {
    for (const auto& t : (*e)["tensors"]) {
      c.outputs.push_back(tensor_stats_from_json(t));
    }
  }
  if (auto* e = find_event(EventKind::comparison)) {
    c.comparison = comparison_from_json(*e);
  }
}

void classify_finished(Classification& c) {
  int64_t out_bad = 0;
  for (const auto& s : c.outputs) {
    out_bad += s.nonfinite();
  }
  int64_t in_bad = 0;
  for (const auto& s : c.input_stats) {
    in_bad += s.nonfinite();
  }
  // Non-finite outputs are a failure even when the reference holds the
  // same NaN (eager computes the same bad value), and when the inputs hold
  // NaN/Inf themselves: the user's run is broken either way; the data is
  // then the first thing to check.
  if (out_bad > 0) {
    c.kind = OutcomeKind::nonfinite;
    std::vector<std::string> parts;
    for (const auto& s : c.outputs) {
      if (s.nonfinite() > 0) {
        parts.push_back(fmt::format("{}: {} NaN, {} Inf of {}", s.name, s.nan_count, s.inf_count, s.numel));
      }
    }
    c.first_line = in_bad == 0 ? fmt::format("non-finite outputs from finite inputs ({})", fmt::join(parts, "; "))
                               : fmt::format("non-finite outputs ({}); the inputs hold NaN/Inf: {}",
                                             fmt::join(parts, "; "), bad_inputs_text(c.input_stats));
    return;
  }
  if (c.comparison && !c.comparison->within_tolerance) {
    c.kind = OutcomeKind::mismatch;
    c.first_line = mismatch_line(*c.comparison);
    return;
  }
  c.kind = OutcomeKind::ok;
}

// 126: found but cannot be executed; 127: not found, or the dynamic loader
// could not load a library or bind a symbol.
bool is_loader_exit(int code) {
  return code == 126 || code == 127;
}

std::string last_event_name(const Events& events) {
  return events.empty() ? std::string("none") : events.back().value("event", std::string("?"));
}

std::string with_line(const std::string& line) {
  return line.empty() ? "" : ": " + line;
}

// ", inside call site 5 (cpp_fused_log_2)": the launch that began last and
// did not end; "" when the probes show none.
std::string running_site_text(const Events& events) {
  int site = 0;
  std::string kernel;
  size_t began = events.size();
  for (size_t i = 0; i < events.size(); ++i) {
    EventKind k = events.kind(i);
    if (k == EventKind::site_begin) {
      site = events.site(i);
      began = i;
    } else if (k == EventKind::site_end && events.site(i) == site) {
      site = 0;
    }
  }
  if (site > 0 && began < events.size()) {
    kernel = events[began].value("kernel", "");
  }
  return site > 0 ? fmt::format(", inside call site {} ({})", site, kernel) : "";
}

}  // namespace

std::string first_error_line(const std::string& stderr_tail) {
  for (const auto& line : lines_of(stderr_tail)) {
    std::string l = lower(line);
    if (!is_noise(line) && (l.find("error") != std::string::npos || l.find("cannot") != std::string::npos)) {
      return line;
    }
  }
  return most_useful_line(stderr_tail, "");
}

std::optional<OutcomeKind> kind_from_error_text(const std::string& text) {
  std::string l = lower(text);
  for (const auto& p : patterns()) {
    if (l.find(p.needle) != std::string::npos) {
      return p.kind;
    }
  }
  return std::nullopt;
}

std::string most_useful_line(const std::string& stderr_tail, const std::string& message) {
  for (const auto& source : {message, stderr_tail}) {
    for (const auto& line : lines_of(source)) {
      if (!is_noise(line) && kind_from_error_text(line)) {
        return line;
      }
    }
  }
  for (const auto& line : lines_of(message)) {
    if (!is_noise(line)) {
      return line;
    }
  }
  auto err_lines = lines_of(stderr_tail);
  for (auto it = err_lines.rbegin(); it != err_lines.rend(); ++it) {
    if (!is_noise(*it)) {
      return *it;
    }
  }
  return "";
}

namespace {

// What classify_run reads of one run: its exit status, its events, and the
// error event with its message.
struct ClassifyInput {
  const ExitStatus& status;
  const Events& events;
  const LastEvents& find_event;
  const nlohmann::json* error;
  std::string message;
  bool started;
};

// A runner killed by a signal: before its first event the tool's failure,
// after it a crash (or a device assert that aborted the process).
void classify_signaled_run(const ClassifyInput& run, Classification& c) {
  const ExitStatus& status = run.status;
  if (!run.started) {
    // Killed before its first event: the model was not even loaded.
    c.internal = fmt::format("the runner was killed by {} before its first event{}", signal_name(status.signal),
                             with_line(first_error_line(status.stderr_tail)));
    return;
  }
  c.kind = OutcomeKind::crash;
  c.signal = status.signal;
  std::string line = most_useful_line(status.stderr_tail, run.message);
  c.first_line = line.empty() ? fmt::format("killed by {}", signal_name(status.signal))
                              : fmt::format("killed by {}: {}", signal_name(status.signal), line);
  if (auto k = kind_from_error_text(line); k && *k == OutcomeKind::device_assert) {
    c.kind = OutcomeKind::device_assert;  // an assert that aborted the process
  }
}

// A runner that did not exit on its own (timed out, interrupted, never
// started, killed): classifies it and says true; false for one that exited.
bool classify_unexited_run(const ClassifyInput& run, Classification& c) {
  const ExitStatus& status = run.status;
  switch (status.how) {
    case ExitStatus::How::timed_out:
      c.kind = OutcomeKind::timeout;
      c.first_line = status.describe() +
                     (run.find_event(EventKind::run_begin) ? "" : ", before the model ran (its start and load)");
      c.stopped_at = status.stopped_at;
      return true;
    case ExitStatus::How::interrupted:
      c.kind = OutcomeKind::error;
      c.first_line = "interrupted";
      return true;
    case ExitStatus::How::spawn_failed:
      c.internal = "cannot start the runner: " + status.spawn_error +
                   " (build it with scripts/build, or name one with AOTI_BISECT_RUNNER=PATH)";
      return true;
    case ExitStatus::How::signaled: classify_signaled_run(run, c); return true;
    case ExitStatus::How::exited: break;
  }
  return false;
}

// Exit 0: a finished run by its outputs and comparison, or one that lost its
// closing events.
void classify_ran_exit(const ClassifyInput& run, Classification& c) {
  const ExitStatus& status = run.status;
  if (!run.find_event(EventKind::done)) {
    if (run.error) {
      // The model's exception was reported; only the exit status is wrong.
      c.first_line = most_useful_line(status.stderr_tail, run.message);
      c.kind = kind_from_error_text(c.first_line).value_or(OutcomeKind::error);
      return;
    }
    c.internal = fmt::format("the runner exited 0 without its closing events (last event '{}'){}",
                             last_event_name(run.events), with_line(first_error_line(status.stderr_tail)));
    return;
  }
  classify_finished(c);
}

// The runner stopped a call of the model at its own time limit.
void classify_time_limit_exit(const ClassifyInput& run, Classification& c) {
  const nlohmann::json* e = run.find_event(EventKind::time_limit);
  c.kind = OutcomeKind::timeout;
  c.stopped_at = e ? e->value("clock", 0.0) : 0.0;
  if (e != nullptr && e->value("seconds", 0.0) > 0) {
    c.time_limit_s = e->value("seconds", 0.0);
    c.first_line = fmt::format("stopped at its {:g} s limit on a call of the model{}", *c.time_limit_s,
                               running_site_text(run.events));
  } else {  // its event lost: the exit says the limit was reached, not which
    c.first_line = fmt::format("stopped at its time limit on a call of the model{}", running_site_text(run.events));
  }
}

// An exit status the runner uses (RunnerExit): classifies it and says true;
// false for any other status.
bool classify_runner_exit(const ClassifyInput& run, Classification& c) {
  const ExitStatus& status = run.status;
  switch (static_cast<RunnerExit>(status.exit_code)) {
    case RunnerExit::ran: classify_ran_exit(run, c); return true;
    case RunnerExit::model_error:
      c.first_line = most_useful_line(status.stderr_tail, run.message);
      c.kind =
          kind_from_error_text(c.first_line).value_or(kind_from_error_text(run.message).value_or(OutcomeKind::error));
      return true;
    case RunnerExit::input_mismatch: {
      const nlohmann::json* e = run.find_event(EventKind::input_mismatch);
      c.kind = OutcomeKind::input_mismatch;
      c.first_line = e ? e->value("message", "") : "the inputs do not fit the model";
      return true;
    }
    case RunnerExit::cannot_test: {
      const nlohmann::json* e = run.find_event(EventKind::fatal);
      c.cannot_test = e ? e->value("message", "") : most_useful_line(status.stderr_tail, "");
      return true;
    }
    case RunnerExit::time_limit: classify_time_limit_exit(run, c); return true;
    case RunnerExit::usage:
    case RunnerExit::internal: {
      const nlohmann::json* e = run.find_event(EventKind::fatal);
      std::string line = e ? e->value("message", "") : most_useful_line(status.stderr_tail, "");
      c.internal = fmt::format("the runner failed ({}): {}", status.describe(), line);
      return true;
    }
  }
  return false;
}

// An exit status the runner never uses: the loader's (126, 127) before the
// model's closing events, or the model's own exit().
void classify_foreign_exit(const ClassifyInput& run, Classification& c) {
  const ExitStatus& status = run.status;
  if (is_loader_exit(status.exit_code) && !run.find_event(EventKind::done)) {
    // The dynamic loader's (or exec's) status. Only once the model runs can
    // it be the model's: a symbol of the model's own that cannot be bound.
    std::string line = first_error_line(status.stderr_tail);
    auto kind = kind_from_error_text(line);
    if (!run.find_event(EventKind::run_begin) || !kind) {
      c.internal = fmt::format("the runner ended without its closing events ({}, last event '{}'){}", status.describe(),
                               last_event_name(run.events), with_line(line));
      return;
    }
    c.kind = *kind;
    c.first_line = line;
    return;
  }
  // An exit status the runner never uses: something in the model ended the
  // process (exit() from a kernel or an extension).
  c.kind = OutcomeKind::error;
  std::string line = most_useful_line(status.stderr_tail, run.message);
  c.first_line = line.empty() ? fmt::format("the model ended the process with {}", status.describe()) : line;
}

}  // namespace

Classification classify_run(const ExitStatus& status, const Events& events) {
  Classification c;
  const LastEvents find_event(events);
  read_tensor_events(find_event, c);
  const bool started = !events.empty();  // "start" is always the first event
  const nlohmann::json* error = find_event(EventKind::error);
  const ClassifyInput run{status, events, find_event, error, error ? error->value("message", "") : "", started};
  if (classify_unexited_run(run, c)) {
    return c;
  }
  if (!started && status.exit_code != static_cast<int>(RunnerExit::cannot_test)) {
    // The runner never reached its first event (a library it cannot load,
    // a broken binary): the model never ran, so this is no model failure.
    c.internal = fmt::format("the runner ended before its first event ({}){}", status.describe(),
                             with_line(first_error_line(status.stderr_tail)));
    return c;
  }
  if (classify_runner_exit(run, c)) {
    return c;
  }
  classify_foreign_exit(run, c);
  return c;
}

// "input1 holds 1 NaN and 0 Inf (first at [2, 5])", for each input that holds any.
std::string mismatch_line(const Comparison& c) {
  // A runner that does not count them: the note says whether any differ.
  int64_t nonfinite = c.nonfinite_mismatched >= 0 ? c.nonfinite_mismatched : c.note.empty() ? 0 : -1;
  std::string head = fmt::format("{} of {} output values outside tolerance", c.mismatched, c.total);
  std::string figures = fmt::format("max abs error {:.6g}, max rel error {:.6g}, atol {:g}, rtol {:g}", c.max_abs_error,
                                    c.max_rel_error, c.atol, c.rtol);
  if (nonfinite < 0) {
    return fmt::format("{}; {}; {} among the values finite on both sides", head, c.note, figures);
  }
  int64_t finite = c.mismatched - nonfinite;
  std::vector<std::string> parts;
  if (nonfinite > 0) {
    parts.push_back(fmt::format("{}{} where NaN/Inf sit on one side only{}", finite == 0 ? "all " : "", nonfinite,
                                c.note.empty() ? "" : " (" + c.note + ")"));
  }
  if (finite > 0) {
    parts.push_back(fmt::format("{} finite values beyond it ({})", finite, figures));
  }
  if (parts.empty()) {
    return fmt::format("{} ({})", head, figures);
  }
  return head + ": " + join(parts, "; ");
}

std::string bad_inputs_text(const std::vector<TensorStats>& inputs) {
  std::vector<std::string> parts;
  for (const auto& s : inputs) {
    if (s.nonfinite() > 0) {
      parts.push_back(fmt::format(
          "{} holds {} NaN and {} Inf{}", s.name, s.nan_count, s.inf_count,
          s.first_nonfinite.empty() ? "" : fmt::format(" (first at [{}])", fmt::join(s.first_nonfinite, ", "))));
    }
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string inputs_binding_text(const Classification& c) {
  if (c.binding_form.empty()) {
    return "";
  }
  if (!c.by_call_spec) {
    return "Taken in file order (tuples, lists, dict values): the package carries no call spec to bind them by.";
  }
  static const std::map<std::string, std::string> how = {
      {"keyword dict", "a dict of keyword arguments, each tensor bound by its name"},
      {"(args, kwargs)", "(args, kwargs), positional arguments by position and keywords by name"},
      {"positional tuple", "a tuple of the positional arguments, by position"},
      {"single argument", "the model's one argument"},
      {"positional (flattened)", "tensors in order; neither the file nor the spec names any"}};
  auto it = how.find(c.binding_form);
  return fmt::format("Bound by the package's call spec ({}).", it == how.end() ? c.binding_form : it->second);
}

std::vector<TensorInfo> inputs_with_nonfinite_counts(const Classification& c) {
  std::vector<TensorInfo> inputs = c.inputs;
  for (size_t i = 0; i < inputs.size() && i < c.input_stats.size(); ++i) {
    inputs[i].nan_count = c.input_stats[i].nan_count;
    inputs[i].inf_count = c.input_stats[i].inf_count;
    inputs[i].first_nonfinite = c.input_stats[i].first_nonfinite;
  }
  return inputs;
}

}  // namespace aoti_bisect
