#pragma once
// The judge phase of `aoti-bisect run`: once the search names a culprit,
// whose bug it is (evidence/judgement.hpp) from eager and float64 runs of the
// exported program against the package's outputs, and the culprit's graph
// nodes compiled alone as the smallest program that shows the symptom
// (OUT/repro/upstream/repro.py, with ISSUE.md for a compiler judgement).
// Without an exported program, the culprit's judgement says what it needs.

#include "harness/phase.hpp"
#include "job/inspect.hpp"
#include "job/matrix_phase.hpp"

namespace aoti_bisect {

// Records culprit.judgement and repro.upstream; a failure of the judge
// itself is a note, never the job's end.
void judge_culprit(JobContext& job, const Inspected& in, const MatrixPhase& matrix);

}  // namespace aoti_bisect
