// The job and the search driven through their seams: a scripted ChildRunner
// (no process, no LibTorch) and a run-time-probe source that hands over a
// ready model. What each test asserts is what the tool reports: verdict,
// exit code, culprit, runs, the report on disk.

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "common/files.hpp"
#include "common/text.hpp"
#include "job/fake_children.hpp"
#include "job/job.hpp"
#include "package_fixture.hpp"
#include "process/process.hpp"
#include "search/instrumentation.hpp"

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
  std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup&, Predicate) override {
    ProbedModel m;
    m.model.dir = job.work_dir / "package";
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

  explicit Harness(const std::string& device_key = "cpu") {
    fixture::make_package("model.pt2", "pkg/", device_key);
    // Read torch-free before any (scripted) child: a real torch.save file.
    std::filesystem::copy_file(std::filesystem::path(AOTI_BISECT_TEST_DATA) / "tensor_files" / "tf_plain.pt",
                               "inputs.pt", std::filesystem::copy_options::overwrite_existing);
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

  std::vector<std::string> ids() const { return fake::ids(log); }
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
  // The answer first: the baseline, probing every site, is the trace run
  // too and names site 5; the evidence run's self-check confirms it; then
  // the matrix: 3 repeats (the evidence run, made in the baseline's
  // environment with probes only reading, counts as the first, so 2 run),
  // the package's own input check, poisoned and perturbed allocations,
  // then one run with one thread (does the failure need several?), and
  // last (the baseline failed) scalar ATen, whose variable needs the model
  // loaded again. The failure is steady in the baseline's environment: the
  // answer stands.
  CHECK(h.ids() == std::vector<std::string>{"baseline", "bisect.1.evidence", "repeat.2", "repeat.3", "check_inputs.1",
                                            "poison.1", "perturb.1", "one_thread.1", "scalar_aten.1"});
  REQUIRE(h.log[0].probe_plan.has_value());
  CHECK(h.log[0].probe_plan->mode_for(1) == ProbeMode::stats);
  CHECK(h.log[0].probe_plan->mode_for(9) == ProbeMode::stats);
  CHECK_FALSE(h.log[2].probe_plan.has_value());  // repeat.2: plain
  REQUIRE(r.report.first_answer_seconds.has_value());
  CHECK(*r.report.first_answer_seconds <= r.report.total_seconds);
  CHECK(r.report.failure->reproduced == 9);  // the matrix's observations, the evidence run one of them
  CHECK(r.report.failure->runs == 9);
  REQUIRE(r.report.matrix.size() >= 2);
  CHECK(r.report.matrix[1].name == "repeat");
  CHECK(r.report.matrix[1].runs == 3);
  bool counted = false;
  for (const auto& n : r.report.notes) {
    counted = counted || n == "variant repeat: 1 of its runs is the kernel search's, made in the baseline's "
                              "environment with probes only reading (runs[].probe_plan); 2 made plain";
  }
  CHECK(counted);
  CHECK(r.report.runs[0].probe_plan == "trace; stats 1-9");
  CHECK(r.report.bisection->strategy == "auto");
  CHECK(r.report.bisection->runs == 1);  // the evidence run: the trace was the first run
  CHECK(r.report.bisection->runs <= r.report.bisection->planned_runs);
  const auto& steps = r.report.bisection->steps;
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].purpose == "trace");
  CHECK(steps[1].purpose == "all");
  CHECK(steps[1].runs == 0);
  CHECK(steps[1].verdict == "reproduces");
  CHECK(steps[2].purpose == "confirm");
  CHECK(steps[2].lo == 1);
  CHECK(steps[2].hi == 9);  // what the self-check saw: every call site, traced back to 5
  CHECK(steps[2].runs == 1);
  CHECK(steps[2].note.rfind("the evidence run's self-check: passed: one run probed call sites 1-9;", 0) == 0);
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

TEST_CASE("job flow: a fault isolated on a GPU gets one memcheck run aimed at the culprit, its addresses named") {
  // A stand-in compute-sanitizer on PATH (the runs are scripted: it only
  // has to be found); the sanitizer run's stderr is what memcheck writes.
  std::filesystem::create_directories("sanitizer-bin");
  std::ofstream("sanitizer-bin/compute-sanitizer") << "#!/bin/sh\nexit 0\n";
  std::filesystem::permissions("sanitizer-bin/compute-sanitizer", std::filesystem::perms::owner_all);
  const char* old_path = std::getenv("PATH");
  std::string saved = old_path ? old_path : "";
  ::setenv("PATH", (std::filesystem::absolute("sanitizer-bin").string() + ":" + saved).c_str(), 1);
  Harness h("cuda");
  FakeModel model;
  model.bad = 3;
  model.fault = true;
  JobResult r = h.run([&](const ChildRequest& req) {
    ChildOutput out = model.answer(req);
    if (req.id.find(".sanitizer") == std::string::npos) {
      return out;
    }
    fake::edit_events(out.events, [](auto& events) {
      for (auto& e : events) {  // the culprit's arguments, with their allocations
        if (e.value("event", "") == "probe" && e.value("site", 0) == 3 && e.value("phase", "") == "before") {
          e["storage"] = {{"address", e.value("tensor", "") == "buf3" ? "0x7f1200000800" : "0x7f1200004000"},
                          {"bytes", 1024}};
        }
      }
    });
    std::filesystem::create_directories("out/runs/" + req.id);
    std::ofstream("out/runs/" + req.id + "/stderr.txt") << "========= Invalid __global__ write of size 4 bytes\n"
                                                           "=========     at k3+0x1b0\n"
                                                           "=========     by thread (64,0,0) in block (12,0,0)\n"
                                                           "=========     Address 0x7f1200000c0c is out of bounds\n";
    return out;
  });
  ::setenv("PATH", saved.c_str(), 1);
  CHECK(r.exit == ExitCode::isolated);
  REQUIRE(r.report.culprit.has_value());
  CHECK(r.report.culprit->call_index == 3);
  // The sanitizer run: after the search, synchronous, no caching allocator,
  // probing the culprit alone (the fake's kernels are not Triton kernels,
  // so the pass is not filtered by name).
  const ChildRequest* aimed = nullptr;
  for (const auto& req : h.log) {
    if (req.id.find(".sanitizer") != std::string::npos) {
      aimed = &req;
    }
  }
  REQUIRE(aimed != nullptr);
  CHECK(h.log.back().id == aimed->id);
  CHECK(aimed->env.at("AOTI_BISECT_RUN_UNDER").find("--tool memcheck --padding 32") != std::string::npos);
  CHECK(aimed->env.at("AOTI_BISECT_RUN_UNDER").find("sanitizer-bin/compute-sanitizer") != std::string::npos);
  CHECK(aimed->env.at("AOTI_BISECT_RUN_UNDER").find("--kernel-name") == std::string::npos);
  CHECK(aimed->env.at("CUDA_LAUNCH_BLOCKING") == "1");
  CHECK(aimed->env.at("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1");
  REQUIRE(aimed->probe_plan.has_value());
  CHECK(aimed->probe_plan->mode_for(3) == ProbeMode::stats);
  CHECK(aimed->probe_plan->mode_for(2) < ProbeMode::stats);  // the others traced, not read
  REQUIRE(r.report.culprit->sanitizer.has_value());
  const SanitizerPass& pass = *r.report.culprit->sanitizer;
  CHECK(pass.run == aimed->id);
  REQUIRE(pass.errors.size() == 1);
  CHECK(pass.errors[0].what == "Invalid __global__ write of size 4 bytes");
  CHECK(pass.errors[0].address == "0x7f1200000c0c");
  CHECK(pass.errors[0].buffer == "12 bytes past the end of buf3 (float32 [4], 1024 bytes)");
  CHECK(h.report_on_disk()["culprit"]["sanitizer"]["errors"][0]["buffer"] ==
        "12 bytes past the end of buf3 (float32 [4], 1024 bytes)");
  CHECK(r.report.bisection->steps.back().purpose == "sanitizer");

  // The same fault on the CPU: no sanitizer run.
  Harness cpu;
  FakeModel m2 = model;
  JobResult c = cpu.run([&](const ChildRequest& req) { return m2.answer(req); });
  CHECK(c.exit == ExitCode::isolated);
  REQUIRE(c.report.culprit.has_value());
  CHECK_FALSE(c.report.culprit->sanitizer.has_value());
  for (const auto& req : cpu.log) {
    CHECK(req.id.find("sanitizer") == std::string::npos);
  }
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
    bool every_site = req.probe_plan && !req.probe_plan->ranges.empty() &&
                      req.probe_plan->mode_for(9) >= ProbeMode::stats &&
                      req.probe_plan->mode_for(1) >= ProbeMode::stats;
    if (every_site && (req.id == "baseline" || req.id.find("trace") != std::string::npos)) {
      FakeModel healthy = model;
      healthy.bad = 0;
      return healthy.answer(req);
    }
    return model.answer(req);
  });
  CHECK(r.exit == ExitCode::isolated);
  CHECK(r.report.culprit->call_index == 5);
  CHECK(r.report.bisection->strategy == "bisect");
  // The probed first run ended otherwise: a plain run decided; the search's
  // own trace probing every site ends otherwise too, then one without probes.
  auto ids = h.ids();
  REQUIRE(ids.size() >= 13);
  CHECK(ids[1] == "baseline.plain");
  CHECK(ids[2] == "bisect.1.trace");
  CHECK(ids[3] == "bisect.2.trace");
  CHECK_FALSE(h.log[3].probe_plan->ranges.size() > 0);
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

TEST_CASE(
    "job flow: a CPU crash the self-check run sees only after its last site returned is not isolated, "
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
    auto events = late.run_events(req, crashed);
    events.resize(events.size() - 2);  // no outputs, no done
    out.events = Events(events);
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

TEST_CASE(
    "job flow: a CPU crash that moves to an earlier site in the self-check run is not isolated, with the "
    "memory-corruption hint") {
  // The heap overrun at site 2 shows at site 3 in the search's runs and at
  // site 2 in the evidence run: the site moved, a kernel did not fault.
  Harness h;
  FakeModel model;
  model.bad = 3;
  model.fault = true;
  JobResult r = h.run([&](const ChildRequest& req) {
    FakeModel m = model;
    if (req.id.find("evidence") != std::string::npos) {
      m.bad = 2;
    }
    return m.answer(req);
  });
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK_FALSE(r.report.culprit.has_value());
  REQUIRE(r.report.bisection.has_value());
  CHECK(r.report.bisection->status == "self_check_failed");
  CHECK(
      r.report.verdict_reason.find("saw call site 2 faulted first (a CPU crash that moves between runs: likely memory "
                                   "corruption") != std::string::npos);
}

TEST_CASE("job flow: mixed outcomes in the matrix: counted, not deterministic, three runs per step") {
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    ChildOutput out = model.answer(req);
    if (req.id == "repeat.2" || req.id == "one_thread.2") {
      FakeModel healthy = model;
      healthy.bad = 0;
      out = healthy.answer(req);  // the second repeat and the second one-thread run do not reproduce
    }
    return out;
  });
  REQUIRE(r.report.failure.has_value());
  CHECK(r.report.failure->kind == OutcomeKind::nonfinite);
  // baseline, repeat x3, check_inputs, poison, perturb, (the baseline
  // environment disagreed) one_thread x5, and scalar_aten last (it loads
  // the model again): all but repeat.2 and one_thread.2 reproduce.
  CHECK(r.report.failure->reproduced == 11);
  CHECK(r.report.failure->runs == 13);
  CHECK_FALSE(r.report.failure->deterministic);
  REQUIRE(r.report.matrix.size() == 7);
  CHECK(r.report.matrix[5].name == "one_thread");
  CHECK(r.report.matrix[6].name == "scalar_aten");  // in the order they ran
  CHECK(r.report.matrix[1].reproduced == 2);
  CHECK(r.report.matrix[1].runs == 3);
  // The verdict says why steps repeat; report.md lists the run that differed.
  CHECK(r.report.verdict_reason.find("flaky: not every run of the one_thread environment") != std::string::npos);
  CHECK(r.report.verdict_reason.find("each search step runs 3 times") != std::string::npos);
  std::string md = read_file("out/report.md", "report");
  CHECK(md.find("**Runs with another outcome (2):** `repeat.2` `ok` (exit 0)") != std::string::npos);
  // Not deterministic: every search step is run three times.
  REQUIRE(r.report.bisection.has_value());
  for (const auto& step : r.report.bisection->steps) {
    if (step.purpose != "trace") {
      CHECK(step.runs == 3);
    }
  }
  CHECK(r.exit == ExitCode::isolated);
}

TEST_CASE(
    "job flow: a flaky baseline whose one-thread runs all fail is searched under one_thread, one run per step "
    "(a 1-of-1 variant is no evidence)") {
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    ChildOutput out = model.answer(req);
    if (req.id == "repeat.2") {
      FakeModel healthy = model;
      healthy.bad = 0;
      out = healthy.answer(req);  // the second repeat does not reproduce
    }
    return out;
  });
  REQUIRE(r.report.failure.has_value());
  CHECK(r.report.failure->reproducing_variant == "one_thread");  // 5 of 5 over check_inputs' 1 of 1
  CHECK(r.report.failure->deterministic);
  CHECK(r.report.verdict_reason.find("flaky:") == std::string::npos);
  REQUIRE(r.report.bisection.has_value());
  CHECK(r.report.bisection->variant == "one_thread");
  for (const auto& step : r.report.bisection->steps) {
    CHECK(step.runs <= 2);
  }
  CHECK(r.exit == ExitCode::isolated);
  REQUIRE(r.report.culprit.has_value());
  CHECK(r.report.culprit->call_index == model.bad);
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

TEST_CASE("job flow: a probed search run stopped at --timeout is said to be that, never 'did not reproduce'") {
  // The plain runs fail (NaN) within the limit; the evidence run, with
  // probes, is stopped at it (issue 68, item 7).
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    if (req.id.find(".evidence") == std::string::npos) {
      return model.answer(req);
    }
    ChildOutput out;
    out.events = Events(std::vector<json>{{{"event", "start"}, {"torch", "2.13.0"}}, {{"event", "run_begin"}}});
    out.status.how = ExitStatus::How::timed_out;
    out.status.signal = 9;
    out.status.limit_s = 300;
    out.status.seconds = 300.1;
    return out;
  });
  CHECK(r.report.verdict == Verdict::not_isolated);
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK(r.report.verdict_reason.find("the kernel search's evidence run, with probes, was stopped at its 300 s limit "
                                     "(--timeout), which the plain runs that failed kept within; probes make a run "
                                     "slower: give a larger --timeout") != std::string::npos);
  CHECK(r.report.verdict_reason.find("did not reproduce") == std::string::npos);
  CHECK(r.report.bisection->status == "error");
  CHECK_FALSE(r.report.culprit.has_value());
}

TEST_CASE("job flow: a failure that vanishes with probes on is suppressed_by_instrumentation") {
  Harness h;
  FakeModel model;
  model.bad_after_probes = false;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.report.verdict == Verdict::suppressed_by_instrumentation);
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK(r.report.bisection->message == "the failure did not reproduce in the instrumented build");
  // auto: the trace run probing every site, then one without probes; the
  // matrix after them finds the failure steady: that answer stands.
  // The first run probed every site and showed no failure: a plain run
  // decided (the failure); the search's own trace run then says the probes hide it.
  auto ids = h.ids();
  CHECK(ids[0] == "baseline");
  CHECK(ids[1] == "baseline.plain");
  CHECK(ids[2] == "bisect.1.trace");
  CHECK(ids[3] == "bisect.2.trace");
  CHECK(r.report.runs[0].probe_plan != "none");
  CHECK(r.report.runs[1].probe_plan == "none");
  CHECK(ids[ids.size() - 2] == "one_thread.1");
  CHECK(ids.back() == "scalar_aten.1");
}

TEST_CASE("job flow: probe calls that never reach the runner fall back to guide mode, which says what it needs") {
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    ChildOutput out = model.answer(req);
    if (req.probe_plan) {
      fake::edit_events(out.events, [](auto& events) {
        events.insert(events.end() - 1, json{{"event", "probes_missing"}});
      });
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
    if (c.phase.rfind("bisect", 0) == 0) {
      h.opt.source = ProbeSource::rewrite;  // a plain first run: the search makes its own trace and steps
    }
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
    if (c.phase == "matrix") {
      // The answer came first: it is kept, with the interrupted verdict.
      REQUIRE(r.report.culprit.has_value());
      CHECK(r.report.culprit->call_index == model.bad);
    } else {
      CHECK_FALSE(r.report.culprit.has_value());
    }
  }
}

TEST_CASE("job flow: --matrix-first runs the whole matrix before the search (the order before the answer came first)") {
  Harness h;
  h.opt.matrix_first = true;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.exit == ExitCode::isolated);
  CHECK(h.ids() == std::vector<std::string>{"baseline", "repeat.1", "repeat.2", "repeat.3", "check_inputs.1",
                                            "poison.1", "perturb.1", "one_thread.1", "scalar_aten.1", "bisect.1.trace",
                                            "bisect.2.evidence"});
  REQUIRE(r.report.culprit.has_value());
  CHECK(r.report.culprit->call_index == 5);
  REQUIRE(r.report.first_answer_seconds.has_value());  // with the verdict
}

TEST_CASE("job flow: an early answer the matrix does not bear out is set aside and searched again, run ids going on") {
  // The baseline fails; the repeats do not all fail, one_thread always does:
  // the early answer (baseline environment) is set aside, and the search
  // runs again under one_thread.
  Harness h;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    if (req.id == "repeat.2" || req.id == "repeat.3") {
      FakeModel healthy = model;
      healthy.bad = 0;
      return healthy.answer(req);
    }
    return model.answer(req);
  });
  auto ids = h.ids();
  CHECK(ids[1] == "bisect.1.evidence");  // the first run was the trace
  CHECK(std::find(ids.begin(), ids.end(), "bisect.2.trace") != ids.end());  // the second search
  CHECK(std::count(ids.begin(), ids.end(), "bisect.1.evidence") == 1);
  CHECK(r.report.failure->reproducing_variant == "one_thread");
  REQUIRE(r.report.bisection.has_value());
  CHECK(r.report.bisection->variant == "one_thread");
  bool said = false;
  std::string notes;
  for (const auto& n : r.report.notes) {
    notes += n + " | ";
  }
  INFO(notes);
  for (const auto& n : r.report.notes) {
    said = said || n.rfind(
                       "the first search's answer is set aside (the matrix chose one_thread to search under): "
                       "the search runs again",
                       0) == 0;
  }
  CHECK(said);
  CHECK(r.exit == ExitCode::isolated);
  REQUIRE(r.report.culprit.has_value());
  CHECK(r.report.culprit->call_index == 5);
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
  CHECK(h.log.size() == 1);  // the probed first run failed in the tool: the job stops there
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

TEST_CASE("job flow: batches: the third fails only after the two before it; they are fed first in every run") {
  Harness h;
  for (const char* f : {"a.pt", "b.pt", "c.pt", "d.pt"}) {
    std::filesystem::copy_file("inputs.pt", f, std::filesystem::copy_options::overwrite_existing);
  }
  h.opt.inputs_given = {"a.pt", "b.pt", "c.pt", "d.pt"};
  FakeModel model;
  // State kept between calls: the third call of a process makes the NaN.
  JobResult r = h.run([&](const ChildRequest& req) {
    return model.answer_batches(req, [](size_t i, const std::string&) { return i == 2; });
  });
  CHECK(r.exit == ExitCode::isolated);
  REQUIRE(r.report.culprit.has_value());
  CHECK(r.report.culprit->call_index == 5);
  REQUIRE(r.report.failure.has_value());
  REQUIRE(r.report.failure->batch.has_value());
  CHECK(r.report.failure->batch->index == 2);
  CHECK(r.report.failure->batch->file == "c.pt");
  CHECK(r.report.needs_history == true);
  REQUIRE(r.report.batches.size() == 4);
  CHECK(r.report.batches[1].outcome == "ok");
  CHECK(r.report.batches[2].outcome == "nonfinite");
  CHECK(r.report.batches[3].outcome == "not_run");
  // The loop, the batch alone (clean), then every run feeds a, b and c.
  auto ids = h.ids();
  REQUIRE(ids.size() >= 4);
  CHECK(ids[0] == "baseline");
  CHECK(h.log[0].batches.size() == 4);
  CHECK(ids[1] == "batch.alone");
  CHECK(h.log[1].batches == std::vector<fs::path>{"c.pt"});
  for (size_t i = 2; i < h.log.size(); ++i) {
    CAPTURE(ids[i]);
    CHECK(h.log[i].batches == std::vector<fs::path>{"a.pt", "b.pt", "c.pt"});
  }
  CHECK(r.report.reproduce_command.find("--inputs a.pt --inputs b.pt --inputs c.pt --no-matrix") != std::string::npos);
  std::string md = read_file("out/report.md", "report");
  CHECK(md.find("batch 3 of 4 (c.pt) failed first; it fails only after the batches before it (alone it does not)") !=
        std::string::npos);
}

TEST_CASE("job flow: --all-batches: every failing batch, grouped by signature; the first one is searched") {
  Harness h;
  for (const char* f : {"a.pt", "b.pt", "c.pt", "d.pt", "e.pt"}) {
    std::filesystem::copy_file("inputs.pt", f, std::filesystem::copy_options::overwrite_existing);
  }
  h.opt.inputs_given = {"a.pt", "b.pt", "c.pt", "d.pt", "e.pt"};
  h.opt.all_batches = true;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    return model.answer_batches(req, [](size_t, const std::string& file) { return file == "b.pt" || file == "d.pt"; });
  });
  CHECK(r.exit == ExitCode::isolated);
  CHECK(r.report.failure->batch->index == 1);
  CHECK(r.report.culprit->call_index == 5);
  REQUIRE(r.report.batch_groups.size() == 1);
  CHECK(r.report.batch_groups[0].batches == std::vector<int>{1, 3});
  CHECK(r.report.batch_groups[0].kind == "nonfinite");
  CHECK(r.report.batch_groups[0].signature.rfind("nonfinite/-/", 0) == 0);
  REQUIRE(r.report.batches.size() == 5);
  CHECK(r.report.batches[2].outcome == "ok");
  CHECK(r.report.batches[3].outcome == "nonfinite");
  CHECK(r.report.batches[4].outcome == "ok");
  auto ids = h.ids();
  REQUIRE(ids.size() >= 4);
  CHECK(ids[2] == "all-batches.1");
  CHECK(h.log[2].keep_going);
  CHECK(h.log[2].batches.size() == 5);
  std::string md = read_file("out/report.md", "report");
  CHECK(md.find("**Every failing batch** (`--all-batches`), by signature") != std::string::npos);
}

TEST_CASE("job flow: batches where none fails: clean, one run, with the count") {
  Harness h;
  for (const char* f : {"a.pt", "b.pt", "c.pt"}) {
    std::filesystem::copy_file("inputs.pt", f, std::filesystem::copy_options::overwrite_existing);
  }
  h.opt.inputs_given = {"a.pt", "b.pt", "c.pt"};
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    return model.answer_batches(req, [](size_t, const std::string&) { return false; });
  });
  CHECK(r.exit == ExitCode::clean);
  CHECK(r.report.verdict_reason == "no failure in 3 batches (one run; no crash, no NaN/Inf)");
  CHECK(h.ids() == std::vector<std::string>{"baseline"});
  REQUIRE(r.report.batches.size() == 3);
  CHECK(r.report.batches[2].outcome == "ok");
}

TEST_CASE("job flow: --calls 5: the fourth call fails alone too; the failing call's number is reported") {
  Harness h;
  h.opt.calls = 5;
  FakeModel model;
  JobResult r = h.run([&](const ChildRequest& req) {
    // The fourth call of the loop fails; a run of one call fails (no history needed).
    return model.answer_batches(req, [&](size_t i, const std::string&) { return req.batches.size() < 2 || i == 3; });
  });
  CHECK(r.exit == ExitCode::isolated);
  REQUIRE(r.report.failure->batch.has_value());
  CHECK(r.report.failure->batch->calls);
  CHECK(r.report.failure->batch->index == 3);
  CHECK(r.report.needs_history == false);
  CHECK(h.log[1].batches.size() == 1);  // alone
  CHECK(h.log.back().batches.size() == 1);
  std::string console = read_file("out/report.md", "report");
  CHECK(console.find("call 4 of 5 (inputs.pt) failed first; it fails alone too") != std::string::npos);
}

TEST_CASE("job flow: a healthy model is clean after the matrix; no search") {
  Harness h;
  FakeModel model;
  model.bad = 0;
  JobResult r = h.run([&](const ChildRequest& req) { return model.answer(req); });
  CHECK(r.exit == ExitCode::clean);
  // Nothing was compared: the verdict says so, and how to compare.
  // The first run probed every site and showed no failure: a plain run decided.
  CHECK(r.report.verdict_reason.rfind("no failure in 8 runs (no crash, no NaN/Inf); output values were not checked "
                                      "against a reference",
                                      0) == 0);
  CHECK(r.report.verdict_reason.find("--reference EXPECTED.pt or --against-eager") != std::string::npos);
  REQUIRE(h.log.size() == 8);
  CHECK(h.log[0].id == "baseline");
  REQUIRE(h.log[0].probe_plan.has_value());
  CHECK(h.log[0].probe_plan->mode_for(9) == ProbeMode::stats);
  CHECK(h.log[1].id == "baseline.plain");
  CHECK_FALSE(h.log[1].probe_plan.has_value());
  CHECK_FALSE(r.report.bisection.has_value());
}

namespace {

bool has_env(const ChildRequest& req, const std::string& key) {
  return req.env.count(key) > 0;
}

// The package's own input check refusing the inputs: its exception, as the
// runner reports a model's (exit 10, event "error").
ChildOutput package_refuses(const std::string& line) {
  ChildOutput out;
  out.events = {{{"event", "start"}, {"torch", "2.13.0"}},
                {{"event", "inputs"}, {"tensors", json::array()}},
                {{"event", "input_stats"}, {"tensors", {fake::stats("input0", 0)}}},
                {{"event", "run_begin"}},
                {{"event", "error"}, {"message", line}}};
  out.status = fake::exited(10);
  return out;
}

const char* const k_package_line = "input_handles[0]: unmatched stride value at 0, expected: 16, but got: 1";

// The runner's own input check refusing the inputs (exit 11, event "input_mismatch").
ChildOutput runner_refuses(const std::string& line) {
  ChildOutput out;
  out.events = {{{"event", "start"}, {"torch", "2.13.0"}},
                {{"event", "inputs"}, {"tensors", json::array()}, {"problems", {line}}},
                {{"event", "input_mismatch"}, {"message", line}, {"problems", {line}}}};
  out.status = fake::exited(11);
  return out;
}

std::vector<std::string> sentences_on_disk(const json& report) {
  std::vector<std::string> out;
  for (const auto& f : report["matrix"]["findings"]) {
    out.push_back(f["sentence"]);
  }
  return out;
}

}  // namespace

TEST_CASE("job flow, matrix reading: the package's own input check refuses the inputs: exit 4, its line, no search") {
  Harness h;
  FakeModel healthy;
  healthy.bad = 0;
  JobResult r = h.run([&](const ChildRequest& req) {
    return has_env(req, "AOTI_RUNTIME_CHECK_INPUTS") ? package_refuses(k_package_line) : healthy.answer(req);
  });
  CHECK(r.exit == ExitCode::cannot_test);
  CHECK(r.report.verdict == Verdict::could_not_test);
  CHECK(r.report.error ==
        std::string(
            "inputs file 'inputs.pt' does not fit model 'model': under check_inputs (AOTI_RUNTIME_CHECK_INPUTS=1) "
            "the package refuses them: ") +
            k_package_line + "; the kernels were not searched (it is the inputs)");
  for (const auto& id : h.ids()) {
    CHECK(id.rfind("bisect", 0) == std::string::npos);
  }
  CHECK(sentences_on_disk(h.report_on_disk()) ==
        std::vector<std::string>{std::string("the package's own input check (AOTI_RUNTIME_CHECK_INPUTS=1) refuses the "
                                             "inputs: ") +
                                 k_package_line});
  CHECK(h.report_on_disk()["matrix"]["findings"][0]["contrast"] == "refuses_inputs");
}

TEST_CASE("job flow, matrix reading: inputs the runner refuses get the package's own check as a second opinion") {
  Harness h;
  const std::string own = "input 0 (x, arg0_1): strides [1, 16], the package was compiled for strides [16, 1]";
  JobResult r = h.run([&](const ChildRequest& req) {
    return has_env(req, "AOTI_RUNTIME_CHECK_INPUTS") ? package_refuses(k_package_line) : runner_refuses(own);
  });
  CHECK(r.exit == ExitCode::cannot_test);
  CHECK(h.ids() == std::vector<std::string>{"baseline", "check_inputs.1"});
  CHECK(r.report.error == "inputs file 'inputs.pt' does not fit model 'model': " + own +
                              "; the package's own check (AOTI_RUNTIME_CHECK_INPUTS=1) agrees: " + k_package_line);
  CHECK(sentences_on_disk(h.report_on_disk()).size() == 1);
}

TEST_CASE("job flow, matrix reading: where the runner refuses again with its own line, the package is not quoted") {
  Harness h;
  const std::string own = "the inputs file holds 2 tensors, the model takes 1";
  JobResult r = h.run([&](const ChildRequest&) { return runner_refuses(own); });
  CHECK(r.exit == ExitCode::cannot_test);
  CHECK(h.ids() == std::vector<std::string>{"baseline", "check_inputs.1"});
  CHECK(r.report.error == "inputs file 'inputs.pt' does not fit model 'model': " + own);
  CHECK(h.report_on_disk()["matrix"]["findings"] == json::array());
}

TEST_CASE("job flow, matrix reading: outputs that change under MALLOC_PERTURB_ are not clean") {
  Harness h;
  FakeModel healthy;
  healthy.bad = 0;
  JobResult r = h.run([&](const ChildRequest& req) {
    ChildOutput out = healthy.answer(req);
    if (has_env(req, "MALLOC_PERTURB_")) {
      fake::edit_events(out.events, [](auto& events) {
        for (auto& e : events) {
          if (e["event"] == "outputs") {
            e["tensors"][0]["checksum"] = "y";
          }
        }
      });
    }
    return out;
  });
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK(r.report.verdict == Verdict::not_isolated);
  REQUIRE(r.report.failure.has_value());
  CHECK(r.report.failure->kind == OutcomeKind::mismatch);
  CHECK(r.report.failure->reproducing_variant == "perturb");
  CHECK(r.report.failure->first_line ==
        "the outputs under MALLOC_PERTURB_=128 differ from the baseline's, which its repeats reproduce bit for bit");
  const std::string sentence =
      "the outputs change under MALLOC_PERTURB_ (1 of 1 runs) while 4 runs without it agree "
      "exactly: a kernel reads memory nothing wrote";
  CHECK(sentences_on_disk(h.report_on_disk()) == std::vector<std::string>{sentence});
  CHECK(r.report.verdict_reason.rfind(sentence + "; the kernel search needs a failure to probe for", 0) == 0);
  CHECK(r.report.reproduce_command.rfind("MALLOC_PERTURB_=128 aoti-bisect run", 0) == 0);
}

TEST_CASE("job flow, matrix reading: NaN only under MALLOC_PERTURB_ is searched under it") {
  Harness h;
  FakeModel healthy;
  healthy.bad = 0;
  FakeModel uninit;
  JobResult r = h.run([&](const ChildRequest& req) {
    return has_env(req, "MALLOC_PERTURB_") ? uninit.answer(req) : healthy.answer(req);
  });
  CHECK(r.exit == ExitCode::isolated);
  REQUIRE(r.report.culprit.has_value());
  CHECK(r.report.culprit->kernel == "k5");
  CHECK(r.report.failure->reproducing_variant == "perturb");
  for (const auto& req : h.log) {
    if (req.id.rfind("bisect", 0) == 0) {
      CAPTURE(req.id);
      CHECK(has_env(req, "MALLOC_PERTURB_"));
    }
  }
  // scalar_aten runs only after a failing baseline: not here.
  const std::vector<std::string> ids = h.ids();
  CHECK(std::find(ids.begin(), ids.end(), "scalar_aten.1") == ids.end());
  CHECK(sentences_on_disk(h.report_on_disk()) ==
        std::vector<std::string>{"fails only under MALLOC_PERTURB_ (1/1; 0/4 without it): a kernel reads memory "
                                 "nothing wrote"});
}

TEST_CASE("job flow, matrix reading: a flaky baseline runs one_thread after the first stage; a race is stated") {
  Harness h;
  h.opt.no_bisect = true;
  FakeModel nan;
  FakeModel healthy;
  healthy.bad = 0;
  int base_runs = 0;
  JobResult r = h.run([&](const ChildRequest& req) {
    if (has_env(req, "OMP_NUM_THREADS")) {
      return healthy.answer(req);
    }
    if (req.env.empty()) {
      return base_runs++ % 2 == 0 ? nan.answer(req) : healthy.answer(req);  // 2 of the 4
    }
    return nan.answer(req);
  });
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK(h.ids() == std::vector<std::string>{"baseline", "repeat.1", "repeat.2", "repeat.3", "check_inputs.1",
                                            "poison.1", "perturb.1", "one_thread.1", "one_thread.2", "one_thread.3",
                                            "one_thread.4", "one_thread.5", "scalar_aten.1"});
  CHECK(sentences_on_disk(h.report_on_disk()) ==
        std::vector<std::string>{"fails 2/4 with several threads, 0/5 with one (OMP_NUM_THREADS=1): the failure "
                                 "needs several threads: how a parallel kernel splits its work (a sum in per-thread "
                                 "parts), or a race between its threads"});
  CHECK_FALSE(r.report.failure->deterministic);
}

TEST_CASE("job flow, matrix reading: ATen's vectorized kernels") {
  Harness h;
  h.opt.no_bisect = true;
  FakeModel nan;
  FakeModel healthy;
  healthy.bad = 0;
  JobResult r = h.run([&](const ChildRequest& req) {
    return has_env(req, "ATEN_CPU_CAPABILITY") ? healthy.answer(req) : nan.answer(req);
  });
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK(sentences_on_disk(h.report_on_disk()) ==
        std::vector<std::string>{"fails 4/4 with ATen's vectorized CPU kernels, 0/1 with ATEN_CPU_CAPABILITY=default: "
                                 "an ISA-specific ATen kernel, or a result that depends on its rounding"});
  // Deterministic: one_thread runs once (does the failure need several
  // threads? here it does not: no finding of it), not five times.
  const std::vector<std::string> ids = h.ids();
  CHECK(std::find(ids.begin(), ids.end(), "one_thread.1") != ids.end());
  CHECK(std::find(ids.begin(), ids.end(), "one_thread.2") == ids.end());
}

TEST_CASE("job flow, matrix reading: a steady failure that needs several threads is said to") {
  Harness h;
  h.opt.no_bisect = true;
  FakeModel nan;
  FakeModel healthy;
  healthy.bad = 0;
  JobResult r = h.run(
      [&](const ChildRequest& req) { return has_env(req, "OMP_NUM_THREADS") ? healthy.answer(req) : nan.answer(req); });
  CHECK(r.exit == ExitCode::not_isolated);
  CHECK(r.report.failure->deterministic);
  CHECK(sentences_on_disk(h.report_on_disk()) ==
        std::vector<std::string>{"fails 4/4 with several threads, 0/1 with one (OMP_NUM_THREADS=1): the failure "
                                 "needs several threads: how a parallel kernel splits its work (a sum in per-thread "
                                 "parts), or a race between its threads"});
}

TEST_CASE("job flow, matrix reading: a healthy model: no finding, clean") {
  Harness h;
  FakeModel healthy;
  healthy.bad = 0;
  JobResult r = h.run([&](const ChildRequest& req) { return healthy.answer(req); });
  CHECK(r.exit == ExitCode::clean);
  CHECK(h.ids() == std::vector<std::string>{"baseline", "baseline.plain", "repeat.1", "repeat.2", "repeat.3",
                                            "check_inputs.1", "poison.1", "perturb.1"});
  CHECK(h.report_on_disk()["matrix"]["findings"] == json::array());
}

TEST_CASE(
    "job flow, matrix reading: inputs outside the compiled range that the package's check refuses: clean, "
    "and the refusal said") {
  Harness h;
  FakeModel healthy;
  healthy.bad = 0;
  const std::string outside = "input0: dimension 0 is 1, the package was compiled for at least 2";
  JobResult r = h.run([&](const ChildRequest& req) {
    if (has_env(req, "AOTI_RUNTIME_CHECK_INPUTS")) {
      return package_refuses(k_package_line);
    }
    ChildOutput out = healthy.answer(req);
    fake::edit_events(out.events, [&](auto& events) {
      for (auto& e : events) {
        if (e["event"] == "inputs") {
          e["outside_range"] = {outside};
        }
      }
    });
    return out;
  });
  CHECK(r.exit == ExitCode::clean);
  CHECK(r.report.verdict == Verdict::clean);
  // Not "no failure in 8 runs": one of them refused the inputs, and says so.
  CHECK(r.report.verdict_reason.rfind("no failure of the model in 8 runs", 0) == 0);
  CHECK(r.report.verdict_reason.find("; 1 of them (check_inputs.1) refused the inputs: the package's own input check "
                                     "(AOTI_RUNTIME_CHECK_INPUTS=1) refuses the inputs: " +
                                     std::string(k_package_line)) != std::string::npos);
}

TEST_SUITE_END();
