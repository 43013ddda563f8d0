#include <algorithm>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "matrix/matrix.hpp"

using namespace aoti_bisect;

namespace {

using enum OutcomeKind;  // ok, crash, nonfinite, ...

using Env = std::map<std::string, std::string>;

Profile two_variant_profile() {
  Profile p;
  p.backend = "cuda";
  p.repeats = 2;
  p.variants = {
      Variant{"both", {{"CUDA_LAUNCH_BLOCKING", "1"}, {"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"}}, std::nullopt, ""},
      Variant{"blocking", {{"CUDA_LAUNCH_BLOCKING", "1"}}, std::nullopt, ""},
  };
  return p;
}

std::vector<std::string> ids_of(const std::vector<PlannedRun>& runs) {
  std::vector<std::string> ids;
  for (const PlannedRun& r : runs) {
    ids.push_back(r.id);
  }
  return ids;
}

// Runs of one variant with the given kinds, in order.
void add_runs(std::vector<RunOutcome>& runs, const std::string& variant, std::vector<OutcomeKind> kinds) {
  for (OutcomeKind kind : kinds) {
    // The baseline and plain repeats share the base environment; other variants set a variable.
    std::map<std::string, std::string> env;
    if (variant != "baseline" && variant != "repeat") {
      env["VARIANT"] = variant;
    }
    runs.push_back(RunOutcome{variant, env, kind});
  }
}

const VariantResult& result_of(const MatrixSummary& s, const std::string& variant) {
  auto it =
      std::find_if(s.variants.begin(), s.variants.end(), [&](const VariantResult& r) { return r.variant == variant; });
  REQUIRE_MESSAGE(it != s.variants.end(), "no result for variant " << variant);
  return *it;
}

}  // namespace

TEST_SUITE_BEGIN("matrix");

TEST_CASE("plan_matrix: baseline first, then each variant repeated") {
  UserConfig user;
  user.env = {{"TORCH_LOGS", "+dynamo"}, {"CUDA_LAUNCH_BLOCKING", "0"}};
  std::vector<PlannedRun> runs = plan_matrix(two_variant_profile(), user, std::nullopt);

  CHECK(ids_of(runs) == std::vector<std::string>{"baseline", "both.1", "both.2", "blocking.1", "blocking.2"});
  REQUIRE(runs.size() == 5);
  CHECK(runs[0].variant == "baseline");
  CHECK(runs[0].repeat == 0);
  CHECK(runs[0].env == user.env);
  CHECK(runs[1].variant == "both");
  CHECK(runs[1].repeat == 1);
  CHECK(runs[2].repeat == 2);
  SUBCASE("variant env goes on top of the user env and wins over it") {
    CHECK(runs[1].env ==
          Env{{"TORCH_LOGS", "+dynamo"}, {"CUDA_LAUNCH_BLOCKING", "1"}, {"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"}});
    CHECK(runs[3].env == Env{{"TORCH_LOGS", "+dynamo"}, {"CUDA_LAUNCH_BLOCKING", "1"}});
  }
}

TEST_CASE("plan_matrix: user variants come after the profile's, or replace them") {
  UserConfig user;
  user.variants = {Variant{"mine", {{"X", "1"}}, 1, ""}};
  SUBCASE("add") {
    CHECK(ids_of(plan_matrix(two_variant_profile(), user, std::nullopt)) ==
          std::vector<std::string>{"baseline", "both.1", "both.2", "blocking.1", "blocking.2", "mine.1"});
  }
  SUBCASE("replace") {
    user.replace_variants = true;
    std::vector<PlannedRun> runs = plan_matrix(two_variant_profile(), user, std::nullopt);
    CHECK(ids_of(runs) == std::vector<std::string>{"baseline", "mine.1"});
    CHECK(runs[1].env == Env{{"X", "1"}});
  }
  SUBCASE("replace with no variants leaves the baseline") {
    user.replace_variants = true;
    user.variants.clear();
    CHECK(ids_of(plan_matrix(two_variant_profile(), user, std::nullopt)) == std::vector<std::string>{"baseline"});
  }
}

TEST_CASE("plan_matrix: repeats precedence") {
  Profile profile = two_variant_profile();  // repeats 2
  profile.variants[1].repeats = 4;          // "blocking"
  UserConfig user;
  auto count = [](const std::vector<PlannedRun>& runs, const std::string& variant) {
    return std::count_if(runs.begin(), runs.end(), [&](const PlannedRun& r) { return r.variant == variant; });
  };
  SUBCASE("profile default; the variant's own value wins over it") {
    auto runs = plan_matrix(profile, user, std::nullopt);
    CHECK(count(runs, "baseline") == 1);
    CHECK(count(runs, "both") == 2);
    CHECK(count(runs, "blocking") == 4);
    CHECK(runs.back().id == "blocking.4");
  }
  SUBCASE("user repeats win over the profile, not over the variant") {
    user.repeats = 3;
    auto runs = plan_matrix(profile, user, std::nullopt);
    CHECK(count(runs, "both") == 3);
    CHECK(count(runs, "blocking") == 4);
  }
  SUBCASE("--repeats wins over everything") {
    user.repeats = 3;
    auto runs = plan_matrix(profile, user, 1);
    CHECK(count(runs, "baseline") == 1);
    CHECK(count(runs, "both") == 1);
    CHECK(count(runs, "blocking") == 1);
  }
}

TEST_CASE("plan_matrix, error handling") {
  UserConfig user;
  user.path = "nightly.yaml";
  SUBCASE("a user variant named like a profile variant") {
    user.variants = {Variant{"blocking", {}, std::nullopt, ""}};
    user.variants[0].line = 4;
    user.variants[0].column = 11;
    REQUIRE_THROWS_WITH(plan_matrix(two_variant_profile(), user, std::nullopt),
                        "nightly.yaml:4:11: error: variant 'blocking' is already in the cuda profile "
                        "(rename it, or set 'variants_mode: replace')");
  }
  SUBCASE("the same name is fine when it replaces the profile's") {
    user.variants = {Variant{"blocking", {}, std::nullopt, ""}};
    user.replace_variants = true;
    CHECK(ids_of(plan_matrix(two_variant_profile(), user, std::nullopt)).size() == 3);
  }
  SUBCASE("--repeats 0") {
    REQUIRE_THROWS_WITH(plan_matrix(two_variant_profile(), user, 0), "--repeats must be at least 1, got 0");
  }
}

TEST_CASE("summarize_matrix: counts per variant and in total") {
  std::vector<RunOutcome> runs;
  runs.push_back(RunOutcome{"baseline", {{"A", "1"}}, crash});
  runs.push_back(RunOutcome{"both", {{"A", "1"}, {"B", "2"}}, crash});
  add_runs(runs, "both", {crash, ok});
  add_runs(runs, "blocking", {OutcomeKind::timeout, ok, ok});

  MatrixSummary s = summarize_matrix(runs);
  REQUIRE(s.variants.size() == 3);
  CHECK(s.variants[0].variant == "baseline");
  CHECK(s.variants[1].variant == "both");
  CHECK(s.variants[2].variant == "blocking");
  CHECK(s.variants[1].env == Env{{"A", "1"}, {"B", "2"}});
  CHECK(s.variants[1].runs == 3);
  CHECK(s.variants[1].reproduced == 2);
  CHECK(s.variants[1].outcomes == std::map<std::string, int>{{"crash", 2}, {"ok", 1}});
  CHECK(s.variants[2].runs == 3);
  CHECK(s.variants[2].reproduced == 0);  // a timeout is a failure, not this one
  CHECK(s.variants[2].outcomes == std::map<std::string, int>{{"timeout", 1}, {"ok", 2}});
  CHECK(s.total_runs == 7);
  CHECK(s.total_reproduced == 3);
  CHECK(s.failure == crash);
}

TEST_CASE(
    "summarize_matrix: at equal rates the variant with more runs is chosen (a flaky failure's lucky run is "
    "not evidence)") {
  std::vector<RunOutcome> runs;
  add_runs(runs, "baseline", {OutcomeKind::nonfinite});
  add_runs(runs, "repeat", {ok, OutcomeKind::nonfinite, ok});
  add_runs(runs, "check_inputs", {OutcomeKind::nonfinite});  // 1 of 1 by chance
  add_runs(runs, "one_thread",
           {OutcomeKind::nonfinite, OutcomeKind::nonfinite, OutcomeKind::nonfinite, OutcomeKind::nonfinite,
            OutcomeKind::nonfinite});
  MatrixSummary s = summarize_matrix(runs);
  CHECK(s.chosen == "one_thread");
  // The rule's last comparison: check_inputs' lucky 1 of 1 outranked the
  // baseline environment's 2 of 4, and 5 of 5 outranks it.
  CHECK(s.chosen_because == "it reproduces more reliably than check_inputs");
  CHECK(s.deterministic);
}

TEST_CASE("summarize_matrix: at equal smoothed rates, the variant that reproduced every run (5 of 5 over 11 of 12)") {
  std::vector<RunOutcome> runs;
  add_runs(runs, "baseline", {ok});
  add_runs(runs, "repeat", std::vector<OutcomeKind>(11, OutcomeKind::nonfinite));
  add_runs(runs, "one_thread", std::vector<OutcomeKind>(5, OutcomeKind::nonfinite));
  MatrixSummary s = summarize_matrix(runs);  // (11 + 1) / (12 + 2) == (5 + 1) / (5 + 2)
  CHECK(s.chosen == "one_thread");
  CHECK(s.chosen_because == "every run of it reproduced, not every run of the baseline environment");
  CHECK(s.deterministic);
}

TEST_CASE("summarize_matrix: the failure kind") {
  std::vector<RunOutcome> runs;
  SUBCASE("is that of the first failing run in order") {
    add_runs(runs, "baseline", {ok});
    add_runs(runs, "a", {ok, OutcomeKind::device_assert, crash});
    MatrixSummary s = summarize_matrix(runs);
    CHECK(s.failure == OutcomeKind::device_assert);
    CHECK(result_of(s, "a").reproduced == 1);
  }
  SUBCASE("skips input_mismatch, which is not a model failure") {
    add_runs(runs, "baseline", {OutcomeKind::input_mismatch});
    add_runs(runs, "a", {OutcomeKind::nonfinite});
    MatrixSummary s = summarize_matrix(runs);
    CHECK(s.failure == OutcomeKind::nonfinite);
    CHECK(result_of(s, "baseline").reproduced == 0);
    CHECK(s.chosen == "a");
  }
  SUBCASE("is none when every run is input_mismatch") {
    add_runs(runs, "baseline", {OutcomeKind::input_mismatch});
    add_runs(runs, "a", {OutcomeKind::input_mismatch, OutcomeKind::input_mismatch});
    MatrixSummary s = summarize_matrix(runs);
    CHECK_FALSE(s.failure.has_value());
    CHECK_FALSE(s.chosen.has_value());
    CHECK_FALSE(s.deterministic);
    CHECK(s.total_reproduced == 0);
    CHECK(result_of(s, "a").outcomes == std::map<std::string, int>{{"input_mismatch", 2}});
  }
  SUBCASE("is none when every run is ok") {
    add_runs(runs, "baseline", {ok});
    add_runs(runs, "a", {ok, ok});
    MatrixSummary s = summarize_matrix(runs);
    CHECK_FALSE(s.failure.has_value());
    CHECK_FALSE(s.chosen.has_value());
    CHECK_FALSE(s.deterministic);
    CHECK(s.total_runs == 3);
  }
  SUBCASE("no runs at all") {
    MatrixSummary s = summarize_matrix(runs);
    CHECK_FALSE(s.failure.has_value());
    CHECK(s.variants.empty());
    CHECK_FALSE(s.chosen.has_value());
  }
}

TEST_CASE("summarize_matrix: the chosen variant") {
  std::vector<RunOutcome> runs;
  SUBCASE("has the highest rate") {
    add_runs(runs, "baseline", {ok});
    add_runs(runs, "a", {crash, ok, ok});
    add_runs(runs, "b", {crash, crash, crash});
    add_runs(runs, "c", {crash, crash, ok});
    MatrixSummary s = summarize_matrix(runs);
    CHECK(s.chosen == "b");
    CHECK(s.deterministic);
  }
  SUBCASE("ties go to the earlier variant") {
    add_runs(runs, "baseline", {ok});
    add_runs(runs, "a", {ok, crash, crash});
    add_runs(runs, "b", {crash, ok, crash});
    MatrixSummary s = summarize_matrix(runs);
    CHECK(s.chosen == "a");
    CHECK_FALSE(s.deterministic);
  }
  SUBCASE("the baseline counts as a variant, and wins a tie") {
    add_runs(runs, "baseline", {crash});
    add_runs(runs, "a", {crash, crash, crash});
    MatrixSummary s = summarize_matrix(runs);
    CHECK(s.chosen == "baseline");
    CHECK(s.deterministic);
  }
  SUBCASE("for a crash, a variant that localizes faults wins its ties, and only its ties") {
    add_runs(runs, "baseline", {crash});
    add_runs(runs, "repeat", {crash, crash});
    add_runs(runs, "guard", {crash});
    for (auto& r : runs) {
      r.localizes_faults = r.variant == "guard";
    }
    CHECK(summarize_matrix(runs).chosen == "guard");
    CHECK(summarize_matrix(runs).chosen_because ==
          "it localizes faults (a crash happens inside the kernel that makes it) and reproduces as often as the "
          "baseline environment");
    CHECK(summarize_matrix(runs).deterministic);  // one run, after a steady crash
    runs.back().kind = ok;                        // did not reproduce: no tie
    CHECK(summarize_matrix(runs).chosen == "baseline");
  }
  SUBCASE("for another failure kind, it is an ordinary variant") {
    add_runs(runs, "baseline", {OutcomeKind::nonfinite});
    add_runs(runs, "guard", {OutcomeKind::nonfinite});
    runs.back().localizes_faults = true;
    CHECK(summarize_matrix(runs).chosen == "baseline");
  }
  SUBCASE("a 1-of-1 baseline is not deterministic when repeats in the same environment did not reproduce") {
    add_runs(runs, "baseline", {crash});
    add_runs(runs, "repeat", {ok, ok, ok});
    MatrixSummary s = summarize_matrix(runs);
    CHECK(s.chosen == "baseline");
    CHECK_FALSE(s.deterministic);
  }
  SUBCASE("flaky: 2 of 3 is not deterministic") {
    add_runs(runs, "baseline", {ok});
    add_runs(runs, "a", {crash, ok, crash});
    MatrixSummary s = summarize_matrix(runs);
    CHECK(s.chosen == "a");
    CHECK(result_of(s, "a").rate() == doctest::Approx(2.0 / 3.0));
    CHECK_FALSE(result_of(s, "a").deterministic());
    CHECK_FALSE(s.deterministic);
  }
  SUBCASE("runs of one variant need not be adjacent") {
    add_runs(runs, "a", {crash});
    add_runs(runs, "b", {crash});
    add_runs(runs, "a", {ok});
    MatrixSummary s = summarize_matrix(runs);
    REQUIRE(s.variants.size() == 2);
    CHECK(result_of(s, "a").runs == 2);
    CHECK(s.chosen == "b");
  }
}

TEST_CASE("plan_matrix: a variant run under a tool that is not installed is left out, and says why") {
  Profile p = two_variant_profile();
  p.variants.push_back(Variant{"memcheck", {{k_run_under_env, "no-such-sanitizer-here --tool memcheck"}}, 1, ""});
  p.variants.push_back(Variant{"under_env", {{k_run_under_env, "  env  "}}, 1, ""});
  auto runs = plan_matrix(p, UserConfig{}, std::nullopt);
  CHECK(ids_of(runs) ==
        std::vector<std::string>{"baseline", "both.1", "both.2", "blocking.1", "blocking.2", "under_env.1"});
  CHECK(unavailable_variants(p, UserConfig{}) ==
        std::vector<std::string>{"memcheck: no-such-sanitizer-here is not on PATH"});
}

TEST_SUITE_END();
