#pragma once
// `aoti-bisect run`: inspect the package, extract it once, run the baseline
// in a fresh child, then the flag matrix, classify every run, and keep the
// report on disk up to date after each step.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

// What the job tells the person watching (stderr). Implemented in apps/.
class Progress {
 public:
  virtual ~Progress() = default;
  virtual void phase(const std::string& name, const std::string& detail) = 0;
  virtual void run_started(const std::string& id, int done, int total) = 0;
  virtual void run_finished(const std::string& id, OutcomeKind kind, const std::string& exit, double seconds,
                            int done, int total) = 0;
  virtual void note(const std::string& text) = 0;
};

struct RunOptions {
  std::filesystem::path package;
  std::string model;                           // "" = the only one
  std::filesystem::path inputs;
  std::filesystem::path reference;             // empty = none
  bool against_eager = false;                  // no reference file: compute it from the exported program
  std::filesystem::path out_dir = "aoti-bisect-out";
  std::filesystem::path config;                // empty = none
  std::string backend;                         // "" = from the package's device key
  std::optional<int> repeats;
  std::optional<double> timeout_s;
  std::optional<int> jobs;
  std::optional<double> atol;
  std::optional<double> rtol;
  bool no_matrix = false;                      // baseline only
  // Kernel bisection (after the matrix, when the failure reproduced).
  bool no_bisect = false;                      // stop after the matrix
  std::filesystem::path exported_program;      // empty: the one inside the package, if any
  nlohmann::json inductor_configs = nlohmann::json::object();  // --inductor-config key=value
  std::filesystem::path cache_dir;             // empty: default build cache
  std::string strategy = "bisect";             // bisect, linear, all
  std::optional<int> bisect_repeats;           // runs per search step (default 1 if deterministic, else 3)
  double build_timeout_s = 1800;
  bool rebuild_per_step = false;               // guide mode
  // `aoti-bisect bisect`: no matrix; one baseline under these variables, then the search.
  bool bisect_only = false;
  std::map<std::string, std::string> env;      // extra variables for every run
  bool junit = false;
  std::vector<std::string> command_line;
  std::filesystem::path runner;                // empty = beside this executable
};

struct JobResult {
  Report report;
  ExitCode exit = ExitCode::internal;
};

// Never throws for problems of the things under test: they become verdicts
// (could_not_test, internal_error) in the returned report, which is already
// written to out_dir when it returns. Throws Error(usage) for option and
// config errors found before anything runs.
JobResult run_job(const RunOptions& options, Progress& progress);

// Exit code of a finished report's verdict.
ExitCode exit_code_for(Verdict verdict);

// --exit-codes=git-bisect: 0 good, 1 bad, 125 cannot test; usage and
// internal errors 128 (abort the bisection rather than mislabel a commit);
// interrupted stays 130.
int git_bisect_exit_code(ExitCode code);

}  // namespace aoti_bisect
