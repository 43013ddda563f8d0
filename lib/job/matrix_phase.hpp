#pragma once
// The flag matrix phase of `aoti-bisect run`, in the order job.cpp calls its
// steps: the baseline (one run in a fresh child, or the loop over several
// batches), a refusal of the inputs (the package's own check as a second
// opinion), the matrix in its stages, and what the runs showed: the failure
// the search looks for and why, or the verdict without one (clean, outputs
// that change under a variant or differ run to run). What the runs mean is
// read in matrix/ (matrix.hpp, reading.hpp); running them and recording them
// is here.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/phase.hpp"
#include "harness/runs.hpp"
#include "job/batches.hpp"
#include "job/step.hpp"
#include "matrix/matrix.hpp"
#include "matrix/reading.hpp"
#include "report/report.hpp"
#include "search/search.hpp"

namespace aoti_bisect {

// A run that says the tool, not the model, is broken: the job stops.
std::optional<Stop> broken_run(const ChildResult& r);

// What the matrix's runs showed: the variants, the failure, and the
// environment the search uses.
struct MatrixResult {
  std::vector<VariantSummary> variants;
  std::optional<Failure> failure;
  std::map<std::string, std::string> chosen_env;
  std::string chosen_because;  // MatrixSummary::chosen_because
};

// One run of the matrix: what was planned, and what it did.
struct MatrixRun {
  PlannedRun plan;
  ChildResult result;
};

class MatrixPhase {
 public:
  MatrixPhase(JobContext& job, const ModelDir& model, std::string model_name);

  // The baseline, recorded with the runner's versions and the inputs it
  // bound. With `probes` (one inputs file), the first run is the search's
  // trace run too (search.hpp's FirstRunProbes); where it shows no failure,
  // or was stopped at its time limit, a plain run decides.
  Step<> run_baseline(const std::optional<FirstRunProbes>& probes = std::nullopt);
  // The baseline's run (the loop's, for several batches).
  const ChildResult& baseline() const { return m_runs.front().result; }
  // The baseline refused the inputs: the package's own input check runs as
  // a second opinion, and the job ends (could_not_test, input_mismatch).
  Step<> refuse_inputs();
  // Whether the search runs before the matrix, in the baseline's
  // environment (Settings::answer_first: a NaN/Inf or wrong values).
  bool answers_first() const;
  // The matrix in its stages: the variants the baseline's outcome calls
  // for, then (`when: flaky`) those for a baseline environment whose runs
  // disagree.
  Step<> run_stages();
  // What the runs showed, recorded: the failure and its findings; the
  // package's own refusal of the inputs, outputs that change under a
  // variant (not isolated) or differ run to run (the failure kind
  // nondeterministic, after one more run that says how far).
  Step<> read();
  // No failure: the clean verdict, and what was not checked.
  Step<> without_failure() const;
  // The failure as the verdict's reason says it: how often it reproduced,
  // what the findings say of it, and where the search runs.
  std::string failure_text() const;

  const MatrixResult& result() const { return m_result; }
  const Failure& failure() const { return *m_result.failure; }
  // The environment the search uses.
  const std::map<std::string, std::string>& chosen_env() const { return m_result.chosen_env; }
  const PlannedRun& baseline_run() const { return m_plan.front(); }
  // What the later runs feed (job/batches.hpp); empty: the job's inputs.
  const std::vector<std::filesystem::path>& run_list() const { return m_run_list; }
  // The baseline when it was probed (run_baseline's `probes`), for the search
  // to read as its trace where it searches the baseline's environment; null
  // otherwise. Its probed model (the hooks it bound) in `model`, whenever
  // the baseline was probed.
  std::shared_ptr<const ChildResult> first_trace(const std::map<std::string, std::string>& env,
                                                 ModelDir& model) const;

 private:
  std::vector<ChildRequest> requests(const std::vector<PlannedRun>& plan) const;
  Step<> run_probed_baseline(const FirstRunProbes& probes);
  void count_search_runs(std::vector<PlannedRun>& now);
  std::vector<MatrixRunFacts> facts() const;
  void summarize();
  Step<> outputs_differ(const std::vector<MatrixRunFacts>& runs);
  // The matrix and its findings into the report; the reproduce command
  // names `env` (default: the environment the search uses).
  void record(const std::map<std::string, std::string>* env = nullptr) const;

  JobContext& m_job;
  const ModelDir& m_model;
  std::string m_model_name;
  std::vector<PlannedRun> m_plan;   // the runs planned, the baseline's first
  std::vector<MatrixRun> m_runs;    // the runs made, in order, the baseline first
  std::optional<BatchLoop> m_loop;  // several batches: the loop over them is the baseline
  std::vector<std::filesystem::path> m_run_list;
  MatrixResult m_result;
  std::vector<Finding> m_findings;
  std::string m_differ_finding;  // outputs that differ run to run: what the matrix says of it
  std::optional<ModelDir> m_probed_first;  // the baseline's probed model, where the baseline was probed
  std::shared_ptr<const ChildResult> m_first_trace;  // that run with its events (m_runs' copy is without them)
  std::set<std::string> m_counted;         // the search's runs counted as the matrix's
};

}  // namespace aoti_bisect
