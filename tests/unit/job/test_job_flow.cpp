// The job and the search driven through their seams: a scripted ChildRunner
// (no process, no LibTorch) and a run-time-probe source that hands over a
// ready model. What each test asserts is what the tool reports: verdict,
// exit code, culprit, runs, the report on disk.

#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "common/files.hpp"
#include "job/fake_children.hpp"
#include "search/instrumentation.hpp"
#include "job/job.hpp"
#include "package_fixture.hpp"
#include "process/process.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;
using fake::FakeModel;
using nlohmann::json;

namespace {

class QuietProgress : public Progress {
 public:
  void phase(const std::string& name, const std::string&) override { phases.push_back(name); }
  void run_started(const std::string&, int, int) override {}
  void run_finished(const std::string&, OutcomeKind, const std::string&, double, int, int) override {}
  void note(const std::string&) override {}
  std::vector<std::string> phases;
};

// A source whose model is ready: call sites k1..kN, no build; `branch`
// unprobed sites (a torch.cond branch) after probed site `branch_after`.
class ReadySource : public RunTimeProbeSource {
 public:
  explicit ReadySource(int sites, int branch_after = 0, int branch = 0)
      : m_sites(sites), m_branch_after(branch_after), m_branch(branch) {}
  std::string_view name() const override { return "ready"; }

 protected:
  std::variant<ProbedModel, std::string> prepare(JobEnv& env, const BisectSetup&, Predicate) override {
    ProbedModel m;
    m.model.dir = env.work_dir / "package";
    for (int k = 1; k <= m_sites; ++k) {
      m.wrapper.call_sites.push_back(CallSite{k, "k" + std::to_string(k), KernelKind::cpp, 0, "", {}, true});
      for (int b = 0; k == m_branch_after && b < m_branch; ++b) {
        m.wrapper.call_sites.push_back(CallSite{0, "branch" + std::to_string(b), KernelKind::cpp, 0, "", {}, false});
      }
    }
    m.wrapper.printer_level = 1;
    return m;
  }

 private:
  int m_sites;
  int m_branch_after;
  int m_branch;
};

struct Harness {
  RunOptions opt;
  std::vector<ChildRequest> log;
  QuietProgress progress;
  int sites = 9;
  int branch_after = 0;  // unprobed sites after this probed one
  int branch = 0;

  Harness() {
    fixture::make_package("model.pt2");
    std::ofstream("inputs.pt") << "stand-in";
    opt.package = "model.pt2";
    opt.inputs = "inputs.pt";
    opt.out_dir = "out";
    opt.runner = "/nonexistent/aoti-bisect-runner";
    clear_interrupt();
  }
  ~Harness() { clear_interrupt(); }

  JobResult run(fake::Script script) {
    JobSeams seams;
    seams.children = [&, script](const ChildSetup&) { return std::make_unique<fake::FakeChildren>(script, log); };
    int n = sites, after = branch_after, unprobed = branch;
    seams.source = [n, after, unprobed] { return std::make_unique<ReadySource>(n, after, unprobed); };
    return run_job(opt, progress, seams);
  }

  json report_on_disk() const { return json::parse(read_file("out/report.json", "report")); }

  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const auto& r : log) {
      out.push_back(r.id);
    }
    return out;
  }
};

}  // namespace

TEST_SUITE_BEGIN("job/flow");

TEST_CASE("job flow: a NaN at call site 5 of 9 is isolated there, with the evidence run's culprit") {
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.exit == ExitCode::isolated);
  CHECK(r.report.verdict == Verdict::isolated);
  REQUIRE(r.report.culprit.has_value());
  CHECK(r.report.culprit->call_index == 5);
  CHECK(r.report.culprit->kernel == "k5");
  CHECK(r.report.culprit->why == "introduced 4 NaN and 0 Inf in buf5 (not written under this name before launch)");
  REQUIRE(r.report.bisection.has_value());
  CHECK(r.report.bisection->status == "found");
  CHECK(r.report.bisection->predicate == "nonfinite");
  // baseline + 3 repeats, then (auto) the trace run probing every site,
  // which names site 5, and the evidence run, whose self-check confirms it.
  CHECK(h.ids() == std::vector<std::string>{"baseline", "repeat.1", "repeat.2", "repeat.3", "bisect.1.trace",
                                            "bisect.2.evidence"});
  REQUIRE(h.log[4].probe_plan.has_value());
  CHECK(h.log[4].probe_plan->mode_for(1) == ProbeMode::stats);
  CHECK(h.log[4].probe_plan->mode_for(9) == ProbeMode::stats);
  CHECK(r.report.bisection->strategy == "auto");
  CHECK(r.report.bisection->runs == 2);
  CHECK(r.report.bisection->runs <= r.report.bisection->planned_runs);
  const auto& steps = r.report.bisection->steps;
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].purpose == "trace");
  CHECK(steps[1].purpose == "all");
  CHECK(steps[1].runs == 0);
  CHECK(steps[1].verdict == "reproduces");
  CHECK(steps[2].purpose == "confirm");
  CHECK(steps[2].lo == 1);
  CHECK(steps[2].hi == 5);
  CHECK(steps[2].runs == 1);
  CHECK(steps[2].note.rfind("the evidence run's self-check: passed", 0) == 0);
  CHECK(h.report_on_disk()["verdict"] == "isolated");
  CHECK(h.report_on_disk()["culprit"]["call_index"] == 5);
}

TEST_CASE("job flow: probes that see fewer call sites than the wrapper runs never name a culprit") {
  // What an unseen site makes would be blamed on the next one seen (CPP GEMM
  // templates the wrapper parser once missed).
  Harness h;
  FakeModel model;
  model.sites = 7;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK_FALSE(r.report.culprit.has_value());
  CHECK(r.report.verdict_reason.find("the instrumented run showed 7 call sites, but the wrapper runs at least 9 "
                                     "(outside torch.cond branches): the probes do not see them all") !=
        std::string::npos);
}

TEST_CASE("job flow: a segfault at call site 3 on the CPU is named by the trace run") {
  Harness h;
  FakeModel model;
  model.bad = 3;
  model.fault = true;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.exit == ExitCode::isolated);
  REQUIRE(r.report.failure.has_value());
  CHECK(r.report.failure->kind == OutcomeKind::crash);
  REQUIRE(r.report.culprit.has_value());
  CHECK(r.report.culprit->call_index == 3);
  CHECK(r.report.culprit->phase == "launch");
  CHECK(r.report.bisection->strategy == "auto");
  CHECK(r.report.bisection->runs == 2);  // the trace run, the evidence run
}

TEST_CASE("job flow: --strategy bisect on a CPU fault is still one trace-named search (all)") {
  Harness h;
  h.opt.strategy = Strategy::bisect;
  FakeModel model;
  model.bad = 3;
  model.fault = true;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.exit == ExitCode::isolated);
  CHECK(r.report.culprit->call_index == 3);
  CHECK(r.report.bisection->strategy == "all");
}

TEST_CASE("job flow: auto, where probing every site changes how the run ends: traced again without, bisected") {
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    bool every_site = req.probe_plan && !req.probe_plan->ranges.empty() && req.probe_plan->mode_for(9) >= ProbeMode::stats &&
                      req.probe_plan->mode_for(1) >= ProbeMode::stats;
    if (req.id.find("trace") != std::string::npos && every_site) {
      FakeModel healthy = model;
      healthy.bad = 0;
      return healthy.answer(req);
    }
    return model.answer(req);
  });
  CHECK(r.exit == ExitCode::isolated);
  CHECK(r.report.culprit->call_index == 5);
  CHECK(r.report.bisection->strategy == "bisect");
  auto ids = h.ids();
  REQUIRE(ids.size() >= 7);
  CHECK(ids[4] == "bisect.1.trace");
  CHECK(ids[5] == "bisect.2.trace");
  CHECK_FALSE(h.log[5].probe_plan->ranges.size() > 0);
  const auto& steps = r.report.bisection->steps;
  CHECK(steps[0].purpose == "trace");
  CHECK(steps[0].verdict == "clean");
  CHECK(steps[1].purpose == "trace");
  CHECK(steps[1].verdict == "reproduces");
  CHECK(steps[2].purpose == "bisect");
  CHECK(r.report.bisection->runs <= r.report.bisection->planned_runs);
}

TEST_CASE("job flow: auto, where the evidence run does not show the trace run's site again: not isolated") {
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    FakeModel m = model;
    if (req.id.find("evidence") != std::string::npos) {
      m.bad = 0;  // the NaN did not come back
    }
    return m.answer(req);
  });
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK_FALSE(r.report.culprit.has_value());
  CHECK(r.report.bisection->status == "self_check_failed");
  CHECK(r.report.verdict_reason.find("the search named call site 5, but the self-check run") != std::string::npos);
  for (const auto& st : r.report.bisection->steps) {
    CHECK(st.purpose != "confirm");
  }
}

TEST_CASE("job flow: a CPU crash the self-check run sees only after its last site returned is not isolated, "
          "with the memory-corruption hint") {
  // A heap overrun shows where glibc next looks: at site 3 in the runs
  // before, but after every probed site in the evidence run.
  Harness h;
  FakeModel model;
  model.bad = 3;
  model.fault = true;
  JobResult r = h.run([&](const ChildRequest& req) {
    if (req.id.find("evidence") == std::string::npos) {
      return model.answer(req);
    }
    FakeModel late;
    late.bad = 0;
    bool crashed = false;
    ChildOutput out;
    out.events = late.run_events(req, crashed);
    out.events.resize(out.events.size() - 2);  // no outputs, no done
    out.status = fake::killed(6);
    return out;
  });
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK(r.report.verdict == Verdict::not_isolated);
  CHECK_FALSE(r.report.culprit.has_value());
  REQUIRE(r.report.bisection.has_value());
  CHECK(r.report.bisection->status == "self_check_failed");
  CHECK(r.report.verdict_reason.find("did not reproduce it inside a call site (on the CPU, likely memory corruption") !=
        std::string::npos);
}

TEST_CASE("job flow: mixed outcomes in the matrix: counted, not deterministic, three runs per step") {
  Harness h;
  FakeModel model;
  int matrix_run = 0;
  JobResult r = h.run([&](const ChildRequest& req) {
    ChildOutput out = model.answer(req);
    if (!req.probe_plan && ++matrix_run == 3) {
      FakeModel healthy = model;
      healthy.bad = 0;
      out = healthy.answer(req);  // the second repeat does not reproduce
    }
    return out;
  });
  REQUIRE(r.report.failure.has_value());
  CHECK(r.report.failure->kind == OutcomeKind::nonfinite);
  CHECK(r.report.failure->reproduced == 3);
  CHECK(r.report.failure->runs == 4);
  CHECK_FALSE(r.report.failure->deterministic);
  REQUIRE(r.report.matrix.size() == 2);
  CHECK(r.report.matrix[1].reproduced == 2);
  CHECK(r.report.matrix[1].runs == 3);
  // The verdict says why steps repeat; report.md lists the run that differed.
  CHECK(r.report.verdict_reason.find("flaky: not every run of the") != std::string::npos);
  CHECK(r.report.verdict_reason.find("each search step runs 3 times") != std::string::npos);
  std::string md = read_file("out/report.md", "report");
  CHECK(md.find("**Runs with another outcome (1):** `repeat.2` `ok` (exit 0)") != std::string::npos);
  // Not deterministic: every search step is run three times.
  REQUIRE(r.report.bisection.has_value());
  for (const auto& step : r.report.bisection->steps) {
    if (step.purpose != "trace") {
      CHECK(step.runs == 3);
    }
  }
  CHECK(r.exit == ExitCode::isolated);
}

TEST_CASE("job flow: runs of one step that disagree make the step and the verdict inconclusive") {
  Harness h;
  h.opt.bisect_repeats = 2;
  FakeModel model;
  int search_run = 0;
  JobResult r = h.run([&](const ChildRequest& req) {
    bool stats = req.probe_plan && !req.probe_plan->ranges.empty();
    FakeModel m = model;
    if (stats && ++search_run % 2 == 0) {
      m.bad = 1;  // every other probed run blames another site
    }
    return m.answer(req);
  });
  CHECK(r.report.verdict == Verdict::inconclusive);
  CHECK(r.exit == ExitCode::not_isolated);
  REQUIRE(r.report.bisection.has_value());
  CHECK(r.report.bisection->status == "inconclusive");
  CHECK_FALSE(r.report.culprit.has_value());
  CHECK(r.report.bisection->steps.back().verdict == "inconclusive");
  CHECK(r.report.bisection->steps.back().agreeing == 1);
}

TEST_CASE("job flow: a failure that vanishes with probes on is suppressed_by_instrumentation") {
  Harness h;
  FakeModel model;
  model.bad_after_probes = false;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.report.verdict == Verdict::suppressed_by_instrumentation);
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK(r.report.bisection->message == "the failure did not reproduce in the instrumented build");
  // auto: the trace run probing every site, then one without probes.
  CHECK(h.ids().back() == "bisect.2.trace");
}

TEST_CASE("job flow: probe calls that never reach the runner fall back to guide mode, which says what it needs") {
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    ChildOutput out = model.answer(req);
    if (req.probe_plan) {
      out.events.insert(out.events.end() - 1, json{{"event", "probes_missing"}});
    }
    return out;
  });
  CHECK(r.report.verdict == Verdict::not_isolated);
  REQUIRE(r.report.bisection.has_value());
  std::string message = r.report.bisection->message;
  CHECK(message.rfind("the instrumented model's probe calls did not reach the runner", 0) == 0);
  CHECK(message.find("fell back to guide mode") != std::string::npos);
  CHECK(message.find("needs the exported program") != std::string::npos);
  // Guide mode would print from the package's own wrapper where it could,
  // without the exported program; the fixture's kernel.cpp records no command.
  CHECK(message.find("(guide mode cannot print from the package's own wrapper: the package's sources do not record "
                     "their compile and link commands)") != std::string::npos);
}

TEST_CASE("job flow: an interrupt in each phase ends interrupted (130) with the report on disk") {
  struct Case {
    std::string phase;
    std::function<bool(const ChildRequest&)> at;
  };
  std::vector<Case> cases = {
      {"baseline", [](const ChildRequest& req) { return req.id == "baseline"; }},
      {"matrix", [](const ChildRequest& req) { return req.id == "repeat.2"; }},
      {"bisect trace", [](const ChildRequest& req) { return req.id.find("trace") != std::string::npos; }},
      {"bisect step", [](const ChildRequest& req) { return req.id.rfind("bisect.2.", 0) == 0; }},
      {"evidence", [](const ChildRequest& req) { return req.id.find("evidence") != std::string::npos; }},
  };
  for (const auto& c : cases) {
    CAPTURE(c.phase);
    Harness h;
    FakeModel model;
    JobResult r = h.run([&](const ChildRequest& req) {
      if (c.at(req)) {
        request_interrupt();
      }
      return model.answer(req);
    });
    CHECK(r.exit == ExitCode::interrupted);
    CHECK(r.report.verdict == Verdict::interrupted);
    CHECK(h.report_on_disk()["verdict"] == "interrupted");
    CHECK_FALSE(r.report.culprit.has_value());
  }
}

TEST_CASE("job flow: a runner that dies before its first event is an internal error (5), not a failure") {
  Harness h;
  JobResult r = h.run([](const ChildRequest&) {
    ChildOutput out;
    out.status = fake::exited(127);
    out.status.stderr_tail = "aoti-bisect-runner: error while loading shared libraries: libc10.so\n";
    return out;
  });
  CHECK(r.exit == ExitCode::internal);
  CHECK(r.report.verdict == Verdict::internal_error);
  CHECK(r.report.error.find("the runner ended before its first event (exit 127)") == 0);
  CHECK_FALSE(r.report.failure.has_value());
  CHECK(h.log.size() == 1);
}

TEST_CASE("job flow: never isolated past code that ran without probes (a torch.cond branch)") {
  Harness h;
  h.sites = 6;
  h.branch_after = 3;
  h.branch = 2;
  FakeModel model;
  model.sites = 6;
  SUBCASE("the first bad probed site comes after the branch: not isolated, the branch named") {
    model.bad = 4;
    JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
    CHECK(r.report.verdict == Verdict::not_isolated);
    CHECK(r.exit == ExitCode::not_isolated);
    CHECK_FALSE(r.report.culprit.has_value());
    REQUIRE(r.report.bisection.has_value());
    CHECK(r.report.bisection->status == "blind_spot");
    CHECK(r.report.verdict_reason.find("call sites without probes lie between call sites 3 and 4 (branch0, branch1), "
                                       "before the first bad probed site (call site 4 k4)") != std::string::npos);
  }
  SUBCASE("a bad site before the branch is still isolated") {
    model.bad = 2;
    JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
    CHECK(r.report.verdict == Verdict::isolated);
    REQUIRE(r.report.culprit.has_value());
    CHECK(r.report.culprit->call_index == 2);
  }
}

TEST_CASE("job flow: a healthy model is clean after the matrix; no search") {
  Harness h;
  FakeModel model;
  model.bad = 0;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.exit == ExitCode::clean);
  // Nothing was compared: the verdict says so, and how to compare.
  CHECK(r.report.verdict_reason.rfind("no failure in 4 runs (no crash, no NaN/Inf); output values were not checked "
                                      "against a reference", 0) == 0);
  CHECK(r.report.verdict_reason.find("--reference EXPECTED.pt or --against-eager") != std::string::npos);
  CHECK(h.log.size() == 4);
  CHECK_FALSE(r.report.bisection.has_value());
}

TEST_SUITE_END();
