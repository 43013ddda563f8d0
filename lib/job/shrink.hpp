#pragma once
// Shrinking the trigger (docs/run.md, "Shrinking the trigger"): after a
// failure reproduces, the smallest set of the failing batch's samples that
// still fails, found by runs of sub-batches (bisect/samples.hpp: halves,
// then delta debugging) in the environment the failure reproduces in,
// through the fork server like every run (group "shrink"). The samples are
// the rows of dimension 0 of the inputs the package's dynamic dimensions
// make the batch (wrapper/batch_dim.hpp); every input of that batch is cut
// alike, the others are left whole. The smallest set's inputs are saved in
// the user's form as OUT/repro/minimal.inputs.pt, and the reproduce command
// uses them. Never ends the job: where it cannot shrink it says why (a
// static batch: "the package takes only batch 8: no smaller batch can run").

#include "harness/phase.hpp"
#include "harness/runs.hpp"
#include "job/matrix_phase.hpp"
#include "wrapper/batch_dim.hpp"

namespace aoti_bisect {

// `set` repeated in turn up to `min` rows: a sub-batch the package can run.
std::vector<int64_t> padded_samples(const std::vector<int64_t>& set, int64_t min);
// "sample 4", "samples 3 and 6", "samples 1, 4 and 7" (0-based in, numbered from 1 out).
std::string samples_text(const std::vector<int64_t>& samples);

void shrink_trigger(JobContext& job, const ModelDir& model, const MatrixPhase& matrix, const BatchDimension& batch);

}  // namespace aoti_bisect
