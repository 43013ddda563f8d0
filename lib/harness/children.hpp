#pragma once
// The seam between a job and its child runs: start a request, wait for any,
// kill all. ProcessChildren runs aoti-bisect-runner in fresh processes; the
// unit tests drive the job through a scripted fake instead.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "process/process.hpp"
#include "protocol/events.hpp"
#include "protocol/probe_plan.hpp"
#include "protocol/values.hpp"

namespace aoti_bisect {

// A model the runner can load: an extracted package and the facts the
// driver parsed from its wrapper (written once per package, read by every
// child instead of parsing the wrapper again).
struct ModelDir {
  std::filesystem::path dir;    // holds data/aotinductor/
  std::filesystem::path facts;  // model-facts.json; empty: none
  std::filesystem::path hooks;  // interposition hook library to bind (codegen/hooks.hpp); empty: none
};

// One child run of the runner.
struct ChildRequest {
  std::string id;  // also the folder under OUT/runs/
  std::string variant;
  int repeat = 0;
  std::map<std::string, std::string> env;  // set on top of the driver's environment
  ModelDir model;
  std::optional<ProbePlan> probe_plan;
  std::filesystem::path node_reference;  // per-node eager values for the probes (mismatch search)
  bool keep_stdout = false;              // guide mode reads what the printer wrote
  // The inputs files this run feeds the model, in turn, in one process
  // (a batch list; probes on the last only). Empty: the job's inputs.
  std::vector<std::filesystem::path> batches;
  bool keep_going = false;  // the batch loop goes on after a failing batch (--all-batches)
  // This run's outputs compared bit for bit with these (another run's
  // outputs.pt) instead of the job's reference: how far two runs differ.
  std::filesystem::path exact_reference;
  // A process of its own, never a persistent runner's (the search's final
  // confirmation, the evidence run).
  bool fresh = false;
  // The part of the job that runs it (RunRecord::group): "matrix" (the flag
  // matrix, its baseline included), "search", "compare", "batches", "shrink".
  std::string group = "matrix";
  // Some samples of the batch (the runner's --samples): 0-based rows of
  // dimension 0 of the inputs `batch_inputs` (flat indices), in this order;
  // the inputs so cut are saved as OUT/runs/<id>/inputs.pt. Empty: the
  // whole batch.
  std::vector<int64_t> samples;
  std::vector<int> batch_inputs;
};

// Whether runs on `device_key` go to a persistent runner (docs/runner.md):
// on CUDA, or wherever AOTI_BISECT_PERSISTENT=1; never with =0.
bool persistent_runs(const std::string& device_key);

// What a child left behind.
struct ChildOutput {
  ExitStatus status;
  Events events;                              // every well-formed line of its events file
  std::string stdout_text;                    // the whole of stdout, with keep_stdout
  unsigned long long memory_limit_bytes = 0;  // the address-space limit it ran under (0: none)
};

class ChildRunner {
 public:
  virtual ~ChildRunner() = default;
  // Starts a child; returns its token. A failed start is reported by
  // wait_any (ExitStatus::How::spawn_failed), never thrown.
  virtual int start(const ChildRequest& request) = 0;
  // Blocks until one started child ends; token -1 when none runs. After an
  // interrupt request, every child ends as How::interrupted.
  virtual std::pair<int, ChildOutput> wait_any() = 0;
  // Stops every child and drops their results.
  virtual void kill_all() = 0;
};

// Seconds a child may take for its start and the model's load, beside the
// --timeout limit on the model's calls (ChildSetup::timeout_s).
inline constexpr double k_start_allowance_s = 120;

// What every child of one job shares.
struct ChildSetup {
  std::filesystem::path runner;   // the runner executable
  std::filesystem::path out_dir;  // runs write to OUT/runs/<id>/
  std::string model;
  std::string device_key;
  std::filesystem::path inputs;
  std::filesystem::path reference;  // empty: no comparison
  ToleranceTable tolerances;
  // --timeout: the limit on each call of the model, after the load, kept by
  // the runner itself (`--time-limit`: its timer, exit 14). The driver
  // stops a child itself only after every call's limit (one per batch of a
  // batch list) and k_start_allowance_s more (a load that hangs). 0: no limit.
  double timeout_s = 300;
  unsigned long long memory_limit_bytes = 0;  // per child (RLIMIT_AS); 0: none
  bool contiguous_inputs = false;             // the runner copies inputs of another layout into the package's
  // A run over several batches reached batch `index` of `of` (its `file`):
  // told while the run goes on (the person watching a long loop).
  std::function<void(const std::string& run_id, int index, int of, const std::string& file)> on_batch;
  std::vector<std::filesystem::path> load_libraries;  // custom operator libraries, loaded by every run
};

// The runner's command line for a request (exposed for tests).
std::vector<std::string> runner_argv(const ChildSetup& setup, const ChildRequest& request,
                                     const std::filesystem::path& run_dir);

class ProcessChildren : public ChildRunner {
 public:
  explicit ProcessChildren(ChildSetup setup) : m_setup(std::move(setup)) {}
  int start(const ChildRequest& request) override;
  std::pair<int, ChildOutput> wait_any() override;
  void kill_all() override;

 private:
  // Reads what the running batch loops wrote since the last look.
  void watch_batches();

  ChildSetup m_setup;
  ProcessSet m_set;
  std::map<int, ChildRequest> m_running;
  std::map<int, std::uintmax_t> m_read;  // token -> bytes of its events file already read
};

}  // namespace aoti_bisect
