#pragma once
// The runner's logic (apps/aoti-bisect-runner/main.cpp parses its options
// and calls these): one run of one model of an extracted package, the
// inputs loaded and checked, its events written (protocol/events.hpp) and
// its outputs saved; and the model loaded ahead of the runs for a fork
// server or a persistent runner (docs/runner.md). Torch-free header.

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/events.hpp"

namespace aoti_bisect::torchside {

struct RunnerOptions {
  std::string package_dir;
  std::string model = "model";
  std::string device_key;
  std::string inputs;
  std::string batch_list;   // one inputs file per line: run each in turn in this process
  bool keep_going = false;  // with a batch list: go on after a batch that fails (an error, NaN/Inf)
  std::string events;
  std::string outputs;
  std::string reference;
  std::string probe_plan;
  std::string node_reference;
  std::string tolerances;
  std::string model_facts;
  std::string hooks;
  std::vector<std::string> libraries;  // --load-library, loaded RTLD_GLOBAL before the model
  bool contiguous_inputs = false;
  // --samples, --batch-inputs, --save-inputs: some samples of the batch
  // (torchside.hpp SampleTake), 0-based rows of dimension 0.
  std::vector<int64_t> samples;
  std::vector<int> batch_inputs;
  std::string save_inputs;
  // --time-limit: each call of the model (after the load) ends the run at
  // this many seconds, event "time_limit", exit 14; 0: none.
  double time_limit_s = 0;
};

// One run (every inputs file of a batch list in turn, the probe plan on
// the last); its exit status (protocol/runner.hpp RunnerExit). Throws
// Error where the runner cannot go on (the caller reports it).
int run_model(const RunnerOptions& opt, EventWriter& events);

// The fork server's or persistent runner's `prepare` (process.hpp): loads
// the first request's model, once. A fork server's only on the CPU and
// never with AOTI_BISECT_PRELOAD=0; a persistent runner's on any device,
// its buffers and the probes' state kept as loaded, and then true only for
// requests of the model it holds. Never throws.
bool preload_model(const RunnerOptions& opt, bool persistent);

// The runner's utilities, each a process of its own that loads no model
// (protocol/input_cut.hpp): --make-inputs REQUEST writes inputs files cut
// from others (verify's neighbours); --compare-outputs REQUEST says how far
// pairs of outputs files are apart. Each writes its answer where the request
// says; the exit status is 0, or 13 (RunnerExit::internal) when the request
// itself cannot be read.
int make_inputs(const std::string& request);
// --kept-inputs REQUEST ({"in_spec": the package's in_spec text or "",
// "calls": [{"meta", "bin", "out"}], "result"}): each call's raw inputs
// (capture_hook.cpp's call-N.json and .bin) as a torch.save file: the
// (args, kwargs) the call spec says, args alone without keywords, a flat
// tuple without a spec that fits; strides and dtypes as passed. The result:
// [{"out", "form", "error"}].
int kept_inputs(const std::string& request);
int compare_outputs(const std::string& request);

// The reference's rows of a set of samples (dimension 0 of each tensor that
// has one), saved beside the set's inputs: a shrunk mismatch's reference.
void save_reference_rows(const std::filesystem::path& reference, const std::vector<int64_t>& rows,
                         const std::filesystem::path& dest);

// A fatal signal writes a `signal` event (and tells a persistent run's
// stand-in) before the process dies of it.
void install_fatal_signal_events();
// This run was forked by the fork server (its start event says so).
void note_forked_by_server();
// A persistent runner's run ended: the next one restores the model's state.
void note_persistent_run_done();

}  // namespace aoti_bisect::torchside
