#pragma once
// The search phase of `aoti-bisect run`: the kernel search (search/search.hpp)
// as the job's steps. The answer first: a NaN/Inf or wrong-values failure is
// searched right after the baseline, in its environment, and the matrix runs
// after the answer. Then the failure the matrix chose: the first answer
// kept where the matrix found the same failure steady in the baseline's
// environment, else a search again under the environment it chose; and
// whether the culprit's call site depends on the batch
// (job/batch_dependence.hpp).

#include <functional>
#include <optional>
#include <string>

#include "harness/children.hpp"
#include "harness/phase.hpp"
#include "job/inspect.hpp"
#include "job/matrix_phase.hpp"
#include "job/step.hpp"
#include "search/instrumentation.hpp"
#include "wrapper/batch_dim.hpp"

namespace aoti_bisect {

// What the search ends the job with.
struct SearchAnswer {
  Verdict verdict = Verdict::not_isolated;
  std::string reason;
  // The culprit's one-kernel replay, for the job's end (BisectOutcome::explain_later).
  std::function<void()> explain_later;
};

class SearchPhase {
 public:
  // `source`: the instrumentation source tried first (JobSeams::source);
  // empty: the real ones.
  SearchPhase(JobContext& job, const Inspected& in, const ModelDir& model, SourceFactory source)
      : m_job(job), m_in(in), m_model(model), m_source(std::move(source)) {}

  // The probes of the job's first run, where the search will run from the
  // package with run-time probes (issue 67): one inputs file, the kernel
  // search asked for (and the answer first), --source auto or interpose.
  // The hook library is built now, before the baseline; nullopt: a plain
  // first run (the reason is in the progress where probes were possible).
  std::optional<FirstRunProbes> first_run_probes();
  // The answer first, in the baseline's environment (MatrixPhase::answers_first).
  Step<> first(const MatrixPhase& matrix);
  // The search for the matrix's failure, or the first answer where the
  // matrix found the same failure steady where it was searched.
  // Under --no-bisect the job ends here, not_isolated.
  Step<SearchAnswer> failure(const MatrixPhase& matrix);
  // The package's batch dimension, as its wrapper reads it (wrapper/batch_dim.hpp).
  const BatchDimension& batch_dimension();
  // A clean run under --check-masked: one probed run for NaN/Inf a later
  // site cleans (search/mask_scan.hpp), recorded; the clean stop comes
  // back with what it found in its reason, or the interrupt.
  Stop masks(const MatrixPhase& matrix, Stop clean);

 private:
  // A refused exported program or an interrupt ends the job.
  Step<BisectOutcome> search(const BisectSetup& setup);

  JobContext& m_job;
  const Inspected& m_in;
  const ModelDir& m_model;
  SourceFactory m_source;
  std::optional<BisectOutcome> m_early;  // the first search's outcome
  std::optional<BatchDimension> m_dim;
};

}  // namespace aoti_bisect
