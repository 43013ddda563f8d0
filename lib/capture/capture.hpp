#pragma once
// `aoti-bisect capture --out CAP -- COMMAND ARGS...`: the user's program run
// unchanged with the capture library preloaded
// (apps/aoti-bisect-capture/capture_hook.cpp), which sees every call of every
// AOTI package it loads and writes each kept call's inputs before the call
// runs. Then: CAP/capture.json (calls[], first_bad, the last completed call,
// run_command), the first bad call's inputs and the calls before it as
// inputs files in the form `run` takes (written by the runner: --kept-inputs),
// and, with --then-run, `aoti-bisect run` on them.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aoti_bisect {

struct CaptureOptions {
  std::filesystem::path out;          // CAP
  std::vector<std::string> command;   // the program and its arguments
  long keep = 8;                      // calls kept before the first bad one
  long long max_bytes = 1LL << 30;    // bytes of kept inputs on disk
  long call = 0;                      // --call N: keep call N only
  bool every = false;                 // --every: keep every call (within max_bytes)
  std::string package;                // --package NAME: calls of that package only
  bool then_run = false;              // --then-run: `aoti-bisect run` on the first bad call
};

// One call as the capture library recorded it.
struct CapturedCall {
  long index = 0;  // from 1, in its process
  long pid = 0;
  std::string package;  // the .pt2 the program opened, "" when not known
  std::string model;
  std::string so;       // the model library's file name
  nlohmann::json inputs = nlohmann::json::array();  // [{dtype, shape, device}]
  int64_t inputs_nan = 0, inputs_inf = 0;
  int64_t outputs_nan = 0, outputs_inf = 0;
  std::string status;  // "ok", "nonfinite", "error", "died"
  int code = 0;        // the run entry's return code
  bool device_error = false;  // its outputs on a device could not be copied after it (an error surfacing there)
  std::optional<int> signal;
  bool kept = false;
  std::string not_kept;
  bool ended = false;
};

// The calls of one process, read from its events.jsonl ("begin" and "end"
// lines); a call begun and never ended died with the process (`died_by`:
// its signal, nullopt when it exited or is unknown).
std::vector<CapturedCall> read_calls(const std::string& events_text, long pid, std::optional<int> died_by);

// The first bad call: NaN/Inf from finite inputs, an error, a death; nullptr when none.
const CapturedCall* first_bad(const std::vector<CapturedCall>& calls);

// Runs the capture; its exit code: the program's own (128 + signal for a
// death), 4 when no AOTI package was called or a package cannot be read,
// 2 for usage errors, 5 for the tool's own failures.
int run_capture(const CaptureOptions& options);

}  // namespace aoti_bisect
