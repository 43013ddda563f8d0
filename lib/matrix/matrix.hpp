#pragma once
// The flag matrix: which runs to make (baseline, then each variant repeated),
// and what they showed (reproduction rate per variant, determinism, and the
// variant later phases should use).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "classify/outcome.hpp"
#include "config/config.hpp"

namespace aoti_bisect {

struct PlannedRun {
  std::string id;                          // "baseline", "launch_blocking.1", ...
  std::string variant;                     // "baseline" or the variant name
  int repeat = 0;                          // 1-based within its variant; 0 for the baseline
  std::map<std::string, std::string> env;  // variables this run sets (user env + variant env)
  bool localizes_faults = false;           // the variant's (config.hpp)
  RunWhen when = RunWhen::always;          // the variant's; the baseline's is always
};

// What decides which variants run: the baseline's outcome, then (for
// `flaky` variants) whether the baseline environment's runs disagreed.
struct MatrixStage {
  OutcomeKind baseline = OutcomeKind::ok;
  bool device = false;  // a GPU backend: an error or a device assert is a fault too
  bool flaky = false;   // known after the first stage
};
// Whether a planned run runs at `stage` (stage 1: everything but `flaky`;
// stage 2: `flaky`, when the stage says so).
bool runs_at_stage(const PlannedRun& run, const MatrixStage& stage, int stage_no);

// What the matrix after the baseline will run, for a baseline that ended
// as `stage.baseline`: "7 runs, then 1 more after a steady failure (5 if the
// baseline environment's runs disagree)"; "no runs" when none. `plan`: the
// whole plan, baseline first.
std::string matrix_plan_text(const std::vector<PlannedRun>& plan, MatrixStage stage);

// When a profile's variant runs and how many times, in words: "always, 3
// runs", "only when the baseline failed, 1 run", "after a fault, where
// compute-sanitizer is on PATH, 1 run". What docs/run.md's flags tables
// say (a test reads them against the built-in profiles). `device`: a GPU
// profile, where an error or a device assert is a fault too.
std::string variant_schedule(const Variant& v, const Profile& profile, bool device);

// A variant may run the runner under a tool: its env sets
// AOTI_BISECT_RUN_UNDER to a command line (`compute-sanitizer --tool
// memcheck`) that the driver puts before the runner's own (phase/children).
inline constexpr const char* k_run_under_env = "AOTI_BISECT_RUN_UNDER";

// The variants whose run-under tool is not installed here, with why
// ("memcheck: compute-sanitizer is not on PATH"); plan_matrix leaves them out.
std::vector<std::string> unavailable_variants(const Profile& profile, const UserConfig& user);

// Baseline first (user env only), then each variant `repeats` times.
// `repeats_override` (from --repeats) wins over config and profile values.
std::vector<PlannedRun> plan_matrix(const Profile& profile, const UserConfig& user,
                                    std::optional<int> repeats_override);

struct VariantResult {
  std::string variant;
  std::map<std::string, std::string> env;
  int runs = 0;
  int reproduced = 0;                   // runs whose outcome is the failure kind
  std::map<std::string, int> outcomes;  // outcome name -> count
  bool localizes_faults = false;
  bool deterministic() const { return runs > 0 && (reproduced == 0 || reproduced == runs); }
  double rate() const { return runs ? double(reproduced) / runs : 0.0; }
};

struct MatrixSummary {
  std::optional<OutcomeKind> failure;   // the failure kind, if any run failed
  std::vector<VariantResult> variants;  // baseline first, in plan order
  std::optional<std::string> chosen;    // the most deterministic reproducing variant
  std::string chosen_because;           // the rule that chose it, in words ("it localizes faults and
                                        // reproduces as often"); "" for the first that reproduced
  bool deterministic = false;           // every run with the chosen variant's environment reproduced
  int total_runs = 0;
  int total_reproduced = 0;
};

struct RunOutcome {
  std::string variant;
  std::map<std::string, std::string> env;
  OutcomeKind kind = OutcomeKind::ok;
  bool localizes_faults = false;
};

// The failure kind is that of the first failing run in plan order. A run
// "reproduces" when its kind equals it. The chosen variant has the highest
// rate; ties go to the earlier variant in plan order, except that for a
// crash a variant that localizes faults wins its ties (a late crash of the
// baseline becomes an early one inside the kernel).
MatrixSummary summarize_matrix(const std::vector<RunOutcome>& runs);

}  // namespace aoti_bisect
