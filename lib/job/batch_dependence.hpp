#pragma once
// Where a sample depends on its batch (docs/run.md, "Where a sample depends
// on its batch"): after the trigger is shrunk (job/shrink.hpp) and the
// search has its model with run-time probes, two more runs of that model in
// the environment the failure reproduces in (group "batch"):
//   1. one sample alone, repeated to the package's smallest batch, saving
//      what every call site wrote (outputs, never constants; removed after);
//   2. the failing batch, comparing at every call site the sample's rows
//      (the chunk of the one dimension whose size scales with the batch)
//      with run 1's, or the whole tensor where no dimension changed (a value
//      over the whole batch, such as a reduction over dimension 0).
// The first call site whose values for the sample differ beyond the job's
// tolerance is named; that, or a trigger whose samples fail only together,
// is the finding batch_dependent. The sample: where one sample fails alone,
// the first that is not it (does the failure reach the others' rows?);
// where the samples fail only together, the first of them.

#include <optional>

#include "harness/phase.hpp"
#include "harness/runs.hpp"
#include "job/matrix_phase.hpp"
#include "wrapper/batch_dim.hpp"

namespace aoti_bisect {

// `probed`: the search's model with run-time probes (BisectOutcome::probed);
// none: said in the report, nothing run.
void check_batch_dependence(JobContext& job, const std::optional<ModelDir>& probed, const MatrixPhase& matrix,
                            const BatchDimension& dim);

}  // namespace aoti_bisect
