#pragma once
// `aoti-bisect run`: inspect the package, extract it once, run the baseline
// in a fresh child, then the flag matrix, then (when a failure reproduced)
// the kernel search; classify every run, and keep the report on disk up to
// date after each step.

#include <functional>
#include <memory>

#include "common/error.hpp"
#include "harness/children.hpp"
#include "harness/phase.hpp"
#include "harness/progress.hpp"
#include "harness/settings.hpp"
#include "report/report.hpp"
#include "search/instrumentation.hpp"

namespace aoti_bisect {

struct JobResult {
  Report report;
  ExitCode exit = ExitCode::internal;
  // What the job ran the package with, once it got that far (empty
  // otherwise): the runner, and the model's facts (package/facts.hpp) in
  // its work folder, which outlives the job only as RunOptions::shared_work.
  std::filesystem::path runner;
  std::filesystem::path model_facts;
};

// Makes the job's child runner once the shared child setup is known.
using ChildFactory = std::function<std::unique_ptr<ChildRunner>(const ChildSetup&)>;

// What a job runs through, where tests put fakes: the children, and the
// instrumentation source the search uses first. Empty members take the
// real ones (processes of aoti-bisect-runner; the exported program at
// printer level 1).
struct JobSeams {
  ChildFactory children;
  SourceFactory source;
};

// Never throws for problems of the things under test: they become verdicts
// (could_not_test, internal_error) in the returned report, which is already
// written to out_dir when it returns. Throws Error(usage) for option and
// config errors found before anything runs.
JobResult run_job(const RunOptions& options, Progress& progress, const JobSeams& seams = {});

// Exit code of a finished report's verdict.
ExitCode exit_code_for(Verdict verdict);

// --exit-codes=git-bisect: 0 good, 1 bad, 125 cannot test; usage and
// internal errors 128 (abort the bisection rather than mislabel a commit);
// interrupted stays 130.
int git_bisect_exit_code(ExitCode code);

}  // namespace aoti_bisect
