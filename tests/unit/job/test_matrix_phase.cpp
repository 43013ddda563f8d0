// The matrix phase on its own, on scripted children (no process, no
// LibTorch): each step's Step, the order the runs are made in, and what the
// runs showed (issue 55, item 3).

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness/recorder.hpp"
#include "harness/runs.hpp"
#include "harness/settings.hpp"
#include "job/fake_children.hpp"
#include "job/matrix_phase.hpp"
#include "process/process.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;
using fake::FakeModel;

namespace {

// A matrix phase over the CPU profile's plan, every run answered by `script`.
struct Bench {
  RunOptions opt;
  fake::SilentProgress progress;
  std::vector<ChildRequest> log;
  Settings settings;
  Recorder rec;
  fake::FakeChildren children;
  Runs runs;
  JobContext job;
  ModelDir model;

  explicit Bench(fake::Script script)
      : opt(options()),
        settings(resolve_settings(opt, load_config(opt), choose_profile(opt, "cpu"), {})),
        rec(opt.out_dir, false, progress),
        children(std::move(script), log),
        runs(children, rec),
        job{settings, rec, runs, "cpu", "mp-work"} {
    rec.start({"aoti-bisect", "run"}, "inputs.pt", "");
  }

  static RunOptions options() {
    RunOptions o;
    o.package = "model.pt2";
    o.inputs = "inputs.pt";
    o.out_dir = "mp-out";
    o.runner = "/nonexistent/aoti-bisect-runner";
    return o;
  }

  std::vector<std::string> ids() const { return fake::ids(log); }
};

}  // namespace

TEST_SUITE_BEGIN("job/matrix_phase");

TEST_CASE(
    "MatrixPhase: a steady NaN: each step goes on, the runs that load the model again come last, the failure "
    "deterministic") {
  clear_interrupt();
  FakeModel nan_at_5;
  Bench b([&](const ChildRequest& req) { return nan_at_5.answer(req); });
  MatrixPhase matrix(b.job, b.model, "model");

  CHECK_FALSE(matrix.run_baseline().stopped());
  CHECK(b.ids() == std::vector<std::string>{"baseline"});
  CHECK(matrix.baseline().cls.kind == OutcomeKind::nonfinite);
  CHECK_FALSE(matrix.refuse_inputs().stopped());
  CHECK(matrix.answers_first());  // NaN: the search may run before the matrix

  CHECK_FALSE(matrix.run_stages().stopped());
  // Stage 1 forks from the baseline's server; stage 2 (after a steady
  // failure) the one-thread run; the variants that load the model again last.
  CHECK(b.ids() == std::vector<std::string>{"baseline", "repeat.1", "repeat.2", "repeat.3", "check_inputs.1",
                                            "poison.1", "perturb.1", "one_thread.1", "scalar_aten.1"});
  CHECK_FALSE(matrix.read().stopped());
  CHECK_FALSE(matrix.without_failure().stopped());
  CHECK(matrix.failure().kind == OutcomeKind::nonfinite);
  CHECK(matrix.failure().deterministic);
  CHECK(matrix.failure().runs == 9);
  CHECK(matrix.failure().reproduced == 9);
  CHECK(matrix.chosen_env() == matrix.baseline_run().env);
  CHECK(matrix.failure_text().find("reproduced in 9 of the flag matrix's 9 runs") != std::string::npos);
}

TEST_CASE("MatrixPhase: no failure in any run: without_failure ends the job clean, saying what was not checked") {
  clear_interrupt();
  FakeModel healthy;
  healthy.bad = 0;
  Bench b([&](const ChildRequest& req) { return healthy.answer(req); });
  MatrixPhase matrix(b.job, b.model, "model");
  CHECK_FALSE(matrix.run_baseline().stopped());
  CHECK_FALSE(matrix.answers_first());
  CHECK_FALSE(matrix.run_stages().stopped());
  CHECK_FALSE(matrix.read().stopped());
  auto clean = matrix.without_failure();
  REQUIRE(clean.stopped());
  CHECK(clean.stop().how == Stop::How::finish);
  CHECK(clean.stop().verdict == Verdict::clean);
  CHECK(clean.stop().message.find("no failure in ") == 0);
  CHECK(clean.stop().message.find("output values were not checked against a reference") != std::string::npos);
}

TEST_CASE("MatrixPhase: the runner refuses the inputs: refuse_inputs ends the job could_not_test, naming the file") {
  clear_interrupt();
  Bench b([&](const ChildRequest&) {
    ChildOutput out;
    out.events.push_back({{"event", "start"}, {"torch", "2.13.0"}});
    out.events.push_back({{"event", "input_mismatch"}, {"message", "input 0: expected 2 dims, got 3"}});
    out.status = fake::exited(static_cast<int>(RunnerExit::input_mismatch));
    return out;
  });
  MatrixPhase matrix(b.job, b.model, "model");
  CHECK_FALSE(matrix.run_baseline().stopped());
  auto refused = matrix.refuse_inputs();
  REQUIRE(refused.stopped());
  CHECK(refused.stop().how == Stop::How::fail);
  CHECK(refused.stop().verdict == Verdict::could_not_test);
  CHECK(refused.stop().message.find("inputs file 'inputs.pt' does not fit model 'model': ") == 0);
}

TEST_CASE("MatrixPhase: an interrupt during the stages ends the job interrupted, saying where") {
  clear_interrupt();
  FakeModel nan_at_5;
  Bench b([&](const ChildRequest& req) {
    if (req.id == "repeat.2") {
      request_interrupt();
    }
    return nan_at_5.answer(req);
  });
  MatrixPhase matrix(b.job, b.model, "model");
  CHECK_FALSE(matrix.run_baseline().stopped());
  auto ran = matrix.run_stages();
  REQUIRE(ran.stopped());
  CHECK(ran.stop().how == Stop::How::interrupted);
  CHECK(ran.stop().message == "during the flag matrix");
  clear_interrupt();
}
