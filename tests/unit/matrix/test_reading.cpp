#include <algorithm>

#include <doctest/doctest.h>

#include "config/config.hpp"
#include "matrix/matrix.hpp"
#include "matrix/reading.hpp"

using namespace aoti_bisect;

namespace {

using enum OutcomeKind;  // ok, crash, nonfinite, ...

// Runs of one variant: the baseline and `repeat` share the base environment.
void add(std::vector<MatrixRunFacts>& runs, const std::string& variant, std::vector<OutcomeKind> kinds,
         std::vector<std::string> outputs = {"aaaa"}, const std::string& line = "") {
  for (OutcomeKind kind : kinds) {
    std::map<std::string, std::string> env = {{"USER_VAR", "1"}};
    if (variant != "baseline" && variant != "repeat") {
      env["V_" + variant] = "1";
    }
    runs.push_back({variant, env, kind, kind == ok ? "" : line, kind == ok ? outputs : std::vector<std::string>{}});
  }
}

std::vector<FindingRule> every_contrast(const std::string& variant) {
  return {
      {variant, "refuses_inputs", "refuses: {line}"},
      {variant, "passes_with", "passes with {env}: {k}/{n} vs {base_k}/{base_n}"},
      {variant, "fails_with", "fails with {env}: {k}/{n} vs {base_k}/{base_n}"},
      {variant, "more_reliable", "more reliable: {k}/{n} vs {base_k}/{base_n}"},
      {variant, "outputs_change", "outputs change in {changed} of {n} ({base_n} agree)"},
  };
}

std::vector<std::string> sentences(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) {
    out.push_back(f.sentence);
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("matrix");

TEST_CASE("read_matrix: passes_with, when the variant's clean runs would be unlikely at the baseline's rate") {
  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {nonfinite});
  add(runs, "repeat", {nonfinite, nonfinite, nonfinite, nonfinite});
  add(runs, "one_thread", {ok, ok, ok, ok, ok});
  auto fs = read_matrix(every_contrast("one_thread"), runs, nonfinite);
  CHECK(sentences(fs) == std::vector<std::string>{"passes with V_one_thread=1: 0/5 vs 5/5"});
  CHECK(fs[0].variant == "one_thread");
  CHECK(fs[0].contrast == "passes_with");
}

TEST_CASE("read_matrix: passes_with is not stated when the runs do not support it") {
  SUBCASE("a flaky baseline (1 of 4) and 3 clean runs: 0.75^3 = 0.42 > 0.2") {
    std::vector<MatrixRunFacts> runs;
    add(runs, "baseline", {nonfinite});
    add(runs, "repeat", {ok, ok, ok});
    add(runs, "one_thread", {ok, ok, ok});
    CHECK(read_matrix(every_contrast("one_thread"), runs, nonfinite).empty());
  }
  SUBCASE("the variant fails otherwise (a crash is not a pass)") {
    std::vector<MatrixRunFacts> runs;
    add(runs, "baseline", {nonfinite});
    add(runs, "repeat", {nonfinite, nonfinite});
    add(runs, "one_thread", {crash}, {}, "SIGSEGV");
    CHECK(read_matrix(every_contrast("one_thread"), runs, nonfinite).empty());
  }
  SUBCASE("a half-flaky baseline (2 of 4) with 3 clean runs: 0.5^3 = 0.125, supported") {
    std::vector<MatrixRunFacts> runs;
    add(runs, "baseline", {nonfinite});
    add(runs, "repeat", {ok, nonfinite, ok});
    add(runs, "one_thread", {ok, ok, ok});
    CHECK(sentences(read_matrix(every_contrast("one_thread"), runs, nonfinite)) ==
          std::vector<std::string>{"passes with V_one_thread=1: 0/3 vs 2/4"});
  }
}

TEST_CASE("read_matrix: fails_with, only where the baseline environment never fails often enough to tell") {
  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {ok});
  add(runs, "repeat", {ok, ok, ok});
  add(runs, "perturb", {nonfinite});
  CHECK(sentences(read_matrix(every_contrast("perturb"), runs, nonfinite)) ==
        std::vector<std::string>{"fails with V_perturb=1: 1/1 vs 0/4"});
  SUBCASE("one clean baseline run does not make a contrast with a variant that fails 1 of 3") {
    std::vector<MatrixRunFacts> few;
    add(few, "baseline", {ok});
    add(few, "no_caching", {nonfinite, ok, ok});
    CHECK(read_matrix(every_contrast("no_caching"), few, nonfinite).empty());
  }
  SUBCASE("not when the baseline environment fails too") {
    std::vector<MatrixRunFacts> both;
    add(both, "baseline", {ok});
    add(both, "repeat", {nonfinite, ok, ok});
    add(both, "perturb", {nonfinite});
    auto fs = read_matrix(every_contrast("perturb"), both, nonfinite);
    CHECK(std::none_of(fs.begin(), fs.end(), [](const Finding& f) { return f.contrast == "fails_with"; }));
  }
}

TEST_CASE("read_matrix: more_reliable, a variant that always reproduces against a baseline that sometimes does") {
  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {crash}, {}, "illegal memory access");
  add(runs, "repeat", {ok, ok}, {"x"});
  add(runs, "launch_blocking", {crash, crash, crash}, {}, "illegal memory access");
  CHECK(sentences(read_matrix(every_contrast("launch_blocking"), runs, crash)) ==
        std::vector<std::string>{"more reliable: 3/3 vs 1/3"});
  SUBCASE("not when all of few runs could fail at the baseline's rate: 5/5 against 3/4 (0.75^5 = 0.24)") {
    std::vector<MatrixRunFacts> close;
    add(close, "baseline", {crash});
    add(close, "repeat", {crash, ok, crash});
    add(close, "launch_blocking", {crash, crash, crash, crash, crash});
    CHECK(read_matrix(every_contrast("launch_blocking"), close, crash).empty());
  }
  SUBCASE("not when the baseline always reproduces too") {
    std::vector<MatrixRunFacts> always;
    add(always, "baseline", {crash});
    add(always, "launch_blocking", {crash, crash, crash});
    CHECK(read_matrix(every_contrast("launch_blocking"), always, crash).empty());
  }
}

TEST_CASE("read_matrix: refuses_inputs names the package's line") {
  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {ok});
  add(runs, "check_inputs", {OutcomeKind::input_mismatch}, {},
      "input_handles[0]: unmatched stride value at 0, expected: 16, but got: 1");
  CHECK(sentences(read_matrix(every_contrast("check_inputs"), runs, std::nullopt)) ==
        std::vector<std::string>{"refuses: input_handles[0]: unmatched stride value at 0, expected: 16, but got: 1"});
}

TEST_CASE("read_matrix: outputs_change needs repeatable baseline outputs") {
  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {ok}, {"aa", "bb"});
  add(runs, "repeat", {ok, ok, ok}, {"aa", "bb"});
  add(runs, "perturb", {ok}, {"aa", "cc"});
  CHECK(sentences(read_matrix(every_contrast("perturb"), runs, std::nullopt)) ==
        std::vector<std::string>{"outputs change in 1 of 1 (4 agree)"});
  SUBCASE("not when the baseline's own runs disagree") {
    std::vector<MatrixRunFacts> noisy;
    add(noisy, "baseline", {ok}, {"aa"});
    add(noisy, "repeat", {ok}, {"ab"});
    add(noisy, "perturb", {ok}, {"cc"});
    CHECK(read_matrix(every_contrast("perturb"), noisy, std::nullopt).empty());
  }
  SUBCASE("not from one baseline run: its outputs may vary anyway") {
    std::vector<MatrixRunFacts> one;
    add(one, "baseline", {ok}, {"aa"});
    add(one, "perturb", {ok}, {"cc"});
    CHECK(read_matrix(every_contrast("perturb"), one, std::nullopt).empty());
  }
  SUBCASE("not when the variant's outputs are the baseline's") {
    std::vector<MatrixRunFacts> same;
    add(same, "baseline", {ok}, {"aa"});
    add(same, "repeat", {ok, ok}, {"aa"});
    add(same, "perturb", {ok}, {"aa"});
    CHECK(read_matrix(every_contrast("perturb"), same, std::nullopt).empty());
  }
}

TEST_CASE("read_matrix: a rule for a variant that did not run states nothing; a healthy matrix states nothing") {
  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {ok});
  add(runs, "repeat", {ok, ok, ok});
  add(runs, "perturb", {ok});
  add(runs, "check_inputs", {ok});
  std::vector<FindingRule> rules = every_contrast("perturb");
  for (const auto& r : every_contrast("check_inputs")) {
    rules.push_back(r);
  }
  for (const auto& r : every_contrast("one_thread")) {
    rules.push_back(r);
  }
  CHECK(read_matrix(rules, runs, std::nullopt).empty());
}

TEST_CASE("stable_with: the baseline's outputs differ run to run, one thread's agree") {
  Profile cpu = builtin_profile("cpu");
  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {ok}, {"a1"});
  add(runs, "repeat", {ok}, {"a2"});
  add(runs, "repeat", {ok}, {"a1"});
  add(runs, "repeat", {ok}, {"a3"});
  add(runs, "one_thread", {ok, ok, ok, ok, ok}, {"s"});
  CHECK(sentences(read_matrix(cpu.findings, runs, std::nullopt)) ==
        std::vector<std::string>{"outputs differ between runs only with several threads (3 different outputs in 4 "
                                 "runs; 5 runs with OMP_NUM_THREADS=1 agree): parallel accumulation order (atomic "
                                 "adds, per-thread partial sums) or a race"});
  // One thread's outputs differ too: not stated.
  std::vector<MatrixRunFacts> still;
  add(still, "baseline", {ok}, {"a1"});
  add(still, "repeat", {ok}, {"a2"});
  add(still, "one_thread", {ok}, {"s1"});
  add(still, "one_thread", {ok}, {"s2"});
  CHECK(read_matrix(cpu.findings, still, std::nullopt).empty());
  // The baseline's outputs agree: nothing to explain.
  std::vector<MatrixRunFacts> steady;
  add(steady, "baseline", {ok}, {"a1"});
  add(steady, "repeat", {ok, ok}, {"a1"});
  add(steady, "one_thread", {ok, ok}, {"a1"});
  CHECK(read_matrix(cpu.findings, steady, std::nullopt).empty());
}

TEST_CASE("the built-in CPU profile's findings read a race, a refusal and memory nothing wrote") {
  Profile cpu = builtin_profile("cpu");
  std::vector<MatrixRunFacts> race;
  add(race, "baseline", {nonfinite});
  add(race, "repeat", {nonfinite, ok, nonfinite});
  add(race, "one_thread", {ok, ok, ok, ok, ok});
  CHECK(sentences(read_matrix(cpu.findings, race, nonfinite)) ==
        std::vector<std::string>{"fails 3/4 with several threads, 0/5 with one (OMP_NUM_THREADS=1): the failure "
                                 "needs several threads: how a parallel kernel splits its work (a sum in per-thread "
                                 "parts), or a race between its threads"});
  std::vector<MatrixRunFacts> uninit;
  add(uninit, "baseline", {ok}, {"aa"});
  add(uninit, "repeat", {ok, ok, ok}, {"aa"});
  add(uninit, "perturb", {ok}, {"bb"});
  auto fs = read_matrix(cpu.findings, uninit, std::nullopt);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].sentence ==
        "the outputs change under MALLOC_PERTURB_ (1 of 1 runs) while 4 runs without it agree "
        "exactly: a kernel reads memory nothing wrote");
}

TEST_CASE("runs_at_stage: when each variant runs") {
  auto run = [](RunWhen when) {
    PlannedRun r;
    r.variant = "v";
    r.when = when;
    return r;
  };
  MatrixStage clean{ok, false, false};
  CHECK(runs_at_stage(run(RunWhen::always), clean, 1));
  CHECK_FALSE(runs_at_stage(run(RunWhen::failure), clean, 1));
  CHECK_FALSE(runs_at_stage(run(RunWhen::fault), clean, 1));
  CHECK_FALSE(runs_at_stage(run(RunWhen::flaky), clean, 1));
  CHECK_FALSE(runs_at_stage(run(RunWhen::flaky), clean, 2));
  MatrixStage nan{nonfinite, false, true};
  CHECK(runs_at_stage(run(RunWhen::failure), nan, 1));
  CHECK_FALSE(runs_at_stage(run(RunWhen::fault), nan, 1));
  CHECK(runs_at_stage(run(RunWhen::flaky), nan, 2));
  CHECK_FALSE(runs_at_stage(run(RunWhen::always), nan, 2));
  MatrixStage crashed{crash, false, false};
  CHECK(runs_at_stage(run(RunWhen::fault), crashed, 1));
  MatrixStage gpu_error{OutcomeKind::error, true, false};
  CHECK(runs_at_stage(run(RunWhen::fault), gpu_error, 1));
  MatrixStage cpu_error{OutcomeKind::error, false, false};
  CHECK_FALSE(runs_at_stage(run(RunWhen::fault), cpu_error, 1));
  PlannedRun base;
  base.variant = "baseline";
  CHECK_FALSE(runs_at_stage(base, clean, 1));
}

TEST_CASE("baseline_env_flaky: outcomes or ok outputs that differ in the baseline's environment") {
  std::vector<MatrixRunFacts> steady;
  add(steady, "baseline", {ok});
  add(steady, "repeat", {ok, ok});
  add(steady, "one_thread", {ok}, {"bbbb"});  // another environment: not counted
  CHECK_FALSE(baseline_env_flaky(steady));
  std::vector<MatrixRunFacts> mixed;
  add(mixed, "baseline", {nonfinite});
  add(mixed, "repeat", {nonfinite, ok});
  CHECK(baseline_env_flaky(mixed));
  std::vector<MatrixRunFacts> drifting;
  add(drifting, "baseline", {ok});
  add(drifting, "repeat", {ok}, {"cccc"});
  CHECK(baseline_env_flaky(drifting));
  CHECK_FALSE(baseline_env_flaky({}));
}

TEST_CASE("outputs_change: the first outputs_change finding, with its variant's environment and runs") {
  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {ok});
  add(runs, "repeat", {ok, ok});
  add(runs, "poison", {ok, ok}, {"ffff"});
  std::vector<Finding> findings = {{"one_thread", "passes_with", "x"}, {"poison", "outputs_change", "changes"}};
  auto change = outputs_change(findings, runs);
  REQUIRE(change);
  CHECK(change->variant == "poison");
  CHECK(change->env.at("V_poison") == "1");
  CHECK(change->runs == 5);
  CHECK(change->reproduced == 2);
  CHECK(change->sentence == "changes");
  CHECK_FALSE(outputs_change({{"one_thread", "passes_with", "x"}}, runs));
}

TEST_CASE("outputs_differ: distinct outputs of the baseline environment's ok runs, and which run was first") {
  std::vector<MatrixRunFacts> same;
  add(same, "baseline", {ok});
  add(same, "repeat", {ok, ok});
  CHECK_FALSE(outputs_differ(same));

  std::vector<MatrixRunFacts> runs;
  add(runs, "baseline", {ok}, {"a"});
  add(runs, "repeat", {ok}, {"a"});
  add(runs, "repeat", {ok}, {"b"});
  add(runs, "repeat", {ok}, {"c"});
  add(runs, "one_thread", {ok}, {"d"});  // another environment: not counted
  runs[0].id = "baseline";
  auto d = outputs_differ(runs);
  REQUIRE(d);
  CHECK(d->distinct == 3);
  CHECK(d->runs == 4);
  CHECK(d->agreeing == 2);
  CHECK(d->first_id == "baseline");
  CHECK(d->differing.at("repeat") == 2);    // b and c are not the first run's
  CHECK(d->differing.at("baseline") == 1);  // the baseline counts as one
  CHECK(d->differing.count("one_thread") == 0);
}

TEST_SUITE_END();
