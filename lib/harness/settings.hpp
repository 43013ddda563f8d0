#pragma once
// Everything a job decides before it runs anything, resolved once: the
// backend profile, then the user's config file, then the command line. The
// phases read this value and never the raw options.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bisect/bisect.hpp"
#include "config/config.hpp"
#include "harness/probe_source.hpp"
#include "matrix/matrix.hpp"

namespace aoti_bisect {

// What the command line says, as given: unset options stay unset, so that
// the config file and the profile can fill them (apps/ binds CLI11 here).
struct RunOptions {
  std::filesystem::path package;
  std::string model;             // "" = the only one
  std::filesystem::path inputs;  // the one inputs file (or the first batch, once expanded)
  // Every --inputs as given: files, folders, globs (job/batches.hpp
  // expand_inputs); empty: `inputs` alone.
  std::vector<std::string> inputs_given;
  int calls = 1;                    // --calls N: the one batch N times in one process
  bool all_batches = false;         // --all-batches: every failing batch, not the first only
  std::filesystem::path reference;  // empty = none
  bool against_eager = false;       // no reference file: compute it from the exported program
  std::string eager_device;         // --eager-device: "" where the program is, or "cpu"
  bool contiguous_inputs = false;   // inputs of another layout copied into the package's, not refused
  std::vector<std::filesystem::path> load_libraries;  // --load-library: custom operator libraries for every run
  std::filesystem::path out_dir = "aoti-bisect-out";
  std::filesystem::path config;  // empty = none
  std::string backend;           // "" = from the package's device key
  std::optional<int> repeats;
  std::optional<double> timeout_s;
  std::optional<unsigned long long> memory_limit_bytes;  // --memory-limit; 0: none
  std::optional<int> jobs;
  std::optional<double> atol;
  std::optional<double> rtol;
  bool no_matrix = false;                                      // baseline only
  bool no_bisect = false;                                      // stop after the matrix
  bool no_shrink = false;                                      // no smallest failing set of samples (job/shrink.hpp)
  bool matrix_first = false;                                   // the whole matrix before the search (no early answer)
  // --check-masked: after a clean run, one run probing every call site;
  // sites that make NaN/Inf which a later site cleans are reported (masked[]).
  bool check_masked = false;
  // --no-judge: no judgement of whose bug the culprit is, and no
  // repro/upstream/ (job/judge_phase.hpp), with an exported program too.
  bool no_judge = false;
  // Skip the culprit's one-kernel replay (its cause): verify's neighbours
  // need the culprit's call site, not its cause.
  bool no_replay = false;
  // A folder the job extracts the package into and keeps (several jobs of
  // one verify share it, and the fork server holding its model); empty:
  // OUT/.work-PID, removed at the job's end.
  std::filesystem::path shared_work;
  std::filesystem::path exported_program;                      // empty: the one inside the package, if any
  nlohmann::json inductor_configs = nlohmann::json::object();  // --inductor-config key=value
  std::filesystem::path cache_dir;                             // empty: default build cache
  Strategy strategy = Strategy::automatic;
  std::optional<int> bisect_repeats;  // runs per search step (default 1 if deterministic, else 3)
  double build_timeout_s = 1800;
  bool rebuild_per_step = false;                // guide mode
  ProbeSource source = ProbeSource::automatic;  // --source: where the probes come from
  bool bisect_only = false;                     // `aoti-bisect bisect`: no matrix, the search
  std::map<std::string, std::string> env;       // --env: extra variables for every run
  bool junit = false;
  std::vector<std::string> command_line;
  std::filesystem::path runner;  // empty = $AOTI_BISECT_RUNNER, else beside this executable
                                 // or one built against the package's torch (harness/runner_choice.hpp)
  std::string python;            // --python: whose torch runs the package; "" = $AOTI_BISECT_PYTHON
};

// The resolved job. Immutable once made.
struct Settings {
  // What to test and where to write.
  std::filesystem::path package;
  std::string model;             // "" = the only one
  std::filesystem::path inputs;  // the first batch
  // Every batch, in order (--calls N: the one file N times); one for a
  // plain run. More than one: the job begins with the batch loop.
  std::vector<std::filesystem::path> batches;
  bool calls = false;               // the batches are --calls of one file
  bool sample_inputs = false;       // the inputs are the package's own (no --inputs to reproduce with)
  bool all_batches = false;         // the loop goes on past failures, grouping every failing batch
  std::filesystem::path reference;  // the user's --reference; empty = none
  bool contiguous_inputs = false;
  std::vector<std::filesystem::path> load_libraries;  // absolute; loaded by every run and the eager helper
  std::filesystem::path python_library;  // loaded by every run before them (a library is a Python extension)
  // The Python whose torch builds the exported program, runs it eagerly and
  // judges the culprit: the runner phase's pick (--python, else the torch a
  // runner was built against); empty: $AOTI_BISECT_PYTHON, else python3.
  std::string python;
  bool against_eager = false;
  std::string eager_device;  // "" = where the exported program is; "cpu": eager moved to the CPU
  std::filesystem::path out_dir;
  bool junit = false;
  std::vector<std::string> command_line;
  std::filesystem::path runner;            // the runner executable
  std::filesystem::path runner_torch_dir;  // its torch folder where known (its C-shim headers); "" = the build's
  // The flag matrix.
  Profile profile;
  std::vector<PlannedRun> plan;                   // baseline first; only the baseline without the matrix
  std::vector<FindingRule> findings;              // the reading of the matrix: the profile's, then the config's
  std::vector<std::string> unavailable_variants;  // left out: their run-under tool is not installed (with why)
  int variants = 0;                               // variants in the matrix (for the plan line)
  double timeout_s = 300;                         // per child run
  // Per child run (RLIMIT_AS): --memory-limit, else the machine's RAM for a
  // CPU package; none for GPU packages, whose drivers reserve address space
  // far beyond RAM.
  unsigned long long memory_limit_bytes = 0;
  int jobs = 1;
  ToleranceTable tolerances;     // per dtype
  bool tolerance_given = false;  // --atol or --rtol: outputs that differ run to run within it are accepted
  // The kernel search.
  bool bisect = true;
  bool shrink = true;  // the failing batch shrunk to its smallest failing set of samples
  bool check_masked = false;  // RunOptions::check_masked
  bool replay = true;         // the culprit's one-kernel replay
  bool judge = true;          // whose bug, with repro/upstream/ (RunOptions::no_judge)
  // A NaN/Inf or wrong-values failure is searched right after the baseline,
  // in its environment; the matrix runs after the answer and keeps it where
  // it finds the failure steady there (--matrix-first: the old order).
  bool answer_first = true;
  Strategy strategy = Strategy::automatic;
  std::optional<int> bisect_repeats;
  bool rebuild_per_step = false;
  // Where the probes come from: "auto" (interposition, then the exported
  // program, then guide mode), or one source forced.
  ProbeSource source = ProbeSource::automatic;
  std::filesystem::path exported_program;
  nlohmann::json inductor_configs = nlohmann::json::object();  // config file, then --inductor-config
  std::filesystem::path cache_dir;
  double build_timeout_s = 1800;
};

// Reads --config; throws Error(usage) for a bad file or option.
UserConfig load_config(const RunOptions& options);

// What the job's phases before the settings found (job/inspect.hpp,
// job/runner_phase.hpp), taking the place of the command line's values:
// the phases return them and resolve_settings takes them, so that no phase
// writes RunOptions.
struct PhaseFindings {
  std::filesystem::path inputs;          // the package's sample inputs, where no --inputs was given
  bool sample_inputs = false;            // `inputs` are those
  std::filesystem::path python_library;  // libpython, where a --load-library is a Python extension
  std::filesystem::path runner;          // the runner built against the package's torch; empty: --runner's
};

// The backend profile: --backend, else the package's device key, except
// that a "cuda" package run by a ROCm build of LibTorch (`runner_hip`, its HIP
// version, not empty) gets the rocm profile: torch calls the device "cuda"
// there too, and NVIDIA's variables mean nothing to the HIP runtime.
Profile choose_profile(const RunOptions& options, const std::string& device_key, const std::string& runner_hip);

// As above, asking the runner (`found.runner`, else --runner's, else the one
// beside the tool) for its HIP version (runner_hip_version) only when it
// matters: a "cuda" package and no --backend.
Profile choose_profile(const RunOptions& options, const std::string& device_key, const PhaseFindings& found = {});

// The HIP version of the runner's LibTorch (`aoti-bisect-runner --versions`);
// "" for a CPU or CUDA build, and when the runner cannot say (then the
// package's device key decides, as before).
std::string runner_hip_version(const RunOptions& options, const std::filesystem::path& runner = {});

// What `aoti-bisect-runner --versions` says of its LibTorch; `ran` false
// (and the rest empty) when the runner cannot tell.
struct RunnerVersions {
  bool ran = false;
  std::string torch;                // "2.13.0"
  std::string hip;                  // "" unless a ROCm build
  std::filesystem::path torch_dir;  // holds its lib/ and include/
};
// `runner`: the runner to ask; empty: --runner's, else the one beside the tool.
RunnerVersions runner_versions(const RunOptions& options, const std::filesystem::path& runner = {});

// Profile, then config, then command line. Throws Error(usage) for
// settings that cannot work together (a variant named twice, --jobs 0).
// `batches`: the inputs files --inputs named, expanded (job/batches.hpp);
// empty: options.inputs alone (or `found.inputs`, the sample inputs).
Settings resolve_settings(const RunOptions& options, const UserConfig& user, const Profile& profile,
                          const std::vector<std::filesystem::path>& batches = {}, const PhaseFindings& found = {});

// The command line that reruns one environment's run without the matrix
// and the search (the report's repro_command). `batches`: what the runs
// feed (the failing batch, after the ones before it where it needs them);
// empty: the job's inputs.
std::string reproduce_command(const Settings& s, const std::map<std::string, std::string>& env,
                              const std::vector<std::filesystem::path>& batches = {});

}  // namespace aoti_bisect
