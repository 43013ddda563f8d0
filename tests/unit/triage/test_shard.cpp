#include <map>
#include <set>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "triage/manifest.hpp"
#include "triage/shard.hpp"

namespace ab = aoti_bisect;

namespace {

ab::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

std::vector<ab::ManifestCase> cases(int n, const std::string& prefix = "case") {
  std::vector<ab::ManifestCase> out;
  for (int i = 0; i < n; ++i) {
    ab::ManifestCase c;
    c.name = prefix + std::to_string(i);
    c.index = i;
    out.push_back(c);
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("triage/shard");

TEST_CASE("--shard K/N: 0-based, one line for every mistake") {
  CHECK(ab::parse_shard("0/1") == ab::Shard{0, 1});
  CHECK(ab::parse_shard("15/16") == ab::Shard{15, 16});
  CHECK(ab::parse_shard("2/3").text() == "2/3");
  CHECK_THROWS_WITH_AS(ab::parse_shard("3/3"), "--shard '3/3': shards are 0-based, so K must be below 3 (0..2)",
                       ab::Error);
  CHECK_THROWS_WITH_AS(ab::parse_shard("1/0"), "--shard '1/0': the shard count must be at least 1", ab::Error);
  for (const char* bad : {"", "1", "a/b", "-1/3", "1/3/4", "1 /3", "1/"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(ab::parse_shard(bad), doctest::Contains("is not K/N (shard K of N, 0-based"), ab::Error);
  }
  try {
    ab::parse_shard("9/4");
  } catch (const ab::Error& e) {
    CHECK(e.kind() == ab::ErrorKind::usage);  // exit 2
  }
}

TEST_CASE("every case in exactly one shard; adding a case moves no other") {
  auto all = cases(200);
  for (int n : {1, 2, 3, 16}) {
    CAPTURE(n);
    std::multiset<std::string> seen;
    for (int k = 0; k < n; ++k) {
      for (const auto& c : ab::cases_of_shard(all, ab::Shard{k, n})) {
        seen.insert(c.name);
      }
    }
    CHECK(seen.size() == all.size());
    for (const auto& c : all) {
      CHECK(seen.count(c.name) == 1);
    }
  }
  // Adding cases (anywhere in the manifest) leaves every old case's shard.
  auto more = cases(200);
  auto extra = cases(50, "new");
  more.insert(more.begin() + 17, extra.begin(), extra.end());
  auto shard_holding = [](const std::vector<ab::ManifestCase>& manifest, const std::string& name) {
    for (int k = 0; k < 16; ++k) {
      for (const auto& d : ab::cases_of_shard(manifest, ab::Shard{k, 16})) {
        if (d.name == name) {
          return k;
        }
      }
    }
    return -1;
  };
  for (const auto& c : all) {
    CAPTURE(c.name);
    const int before = shard_holding(all, c.name);
    CHECK(before >= 0);
    CHECK(shard_holding(more, c.name) == before);
  }
  // The shards keep manifest order.
  auto shard0 = ab::cases_of_shard(all, ab::Shard{0, 3});
  for (size_t i = 1; i < shard0.size(); ++i) {
    CHECK(shard0[i - 1].index < shard0[i].index);
  }
  // The hash is documented, so a user can compute a case's shard.
  CHECK(ab::fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(ab::fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(ab::shard_of("resnet_nan", 16) == static_cast<int>(ab::fmix64(ab::fnv1a64("resnet_nan")) % 16));
  CHECK(ab::fmix64(0xaf63dc4c8601ec8cULL) == 0x82a2a958a9bece5bULL);
  // Names that differ in one letter's parity split over 2 shards, not by it.
  int odd = 0;
  for (int i = 0; i < 64; ++i) {
    odd += ab::shard_of("case" + std::to_string(i), 2);
  }
  CHECK(odd > 16);
  CHECK(odd < 48);
  // 200 names over 16 shards: none empty, none more than twice its share.
  for (int k = 0; k < 16; ++k) {
    auto n = ab::cases_of_shard(all, ab::Shard{k, 16}).size();
    CHECK(n >= 1);
    CHECK(n <= 25);
  }
}

TEST_CASE("--shard-from-env: Slurm, a Kubernetes Indexed Job, any other scheduler") {
  SUBCASE("Slurm arrays, 0-based and 1-based") {
    CHECK(ab::shard_from_env(env_of({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "16"}}), std::nullopt) ==
          ab::Shard{3, 16});
    CHECK(ab::shard_from_env(
              env_of({{"SLURM_ARRAY_TASK_ID", "16"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "16"}}),
              std::nullopt) == ab::Shard{15, 16});
    CHECK_THROWS_WITH_AS(ab::shard_from_env(env_of({{"SLURM_ARRAY_TASK_ID", "3"}}), std::nullopt),
                         "--shard-from-env: SLURM_ARRAY_TASK_COUNT is not set (Slurm sets it for job arrays; or give "
                         "--shard-count N)",
                         ab::Error);
    CHECK_THROWS_WITH_AS(
        ab::shard_from_env(env_of({{"SLURM_ARRAY_TASK_ID", "16"}, {"SLURM_ARRAY_TASK_COUNT", "16"}}), std::nullopt),
        "--shard-from-env: SLURM_ARRAY_TASK_ID gives shard 16, but SLURM_ARRAY_TASK_COUNT says there are 16 (shards "
        "are 0..15)",
        ab::Error);
  }
  SUBCASE("Kubernetes: the index from JOB_COMPLETION_INDEX, the count given") {
    CHECK(ab::shard_from_env(env_of({{"JOB_COMPLETION_INDEX", "2"}}), 4) == ab::Shard{2, 4});
    CHECK(ab::shard_from_env(env_of({{"JOB_COMPLETION_INDEX", "2"}, {"AOTI_BISECT_SHARD_COUNT", "5"}}), std::nullopt) ==
          ab::Shard{2, 5});
    CHECK_THROWS_WITH_AS(ab::shard_from_env(env_of({{"JOB_COMPLETION_INDEX", "2"}}), std::nullopt),
                         doctest::Contains("AOTI_BISECT_SHARD_COUNT is not set (an Indexed Job does not say how many "
                                           "completions it has: give --shard-count N"),
                         ab::Error);
    CHECK_THROWS_WITH_AS(ab::shard_from_env(env_of({{"JOB_COMPLETION_INDEX", "x1"}}), 4),
                         "--shard-from-env: JOB_COMPLETION_INDEX='x1' is not a whole number", ab::Error);
  }
  SUBCASE("a CI matrix: AOTI_BISECT_SHARD_INDEX and _COUNT") {
    CHECK(ab::shard_from_env(env_of({{"AOTI_BISECT_SHARD_INDEX", "0"}, {"AOTI_BISECT_SHARD_COUNT", "3"}}),
                             std::nullopt) == ab::Shard{0, 3});
    CHECK_THROWS_WITH_AS(
        ab::shard_from_env(env_of({{"AOTI_BISECT_SHARD_INDEX", "1"}, {"AOTI_BISECT_SHARD_COUNT", "0"}}), std::nullopt),
        "--shard-from-env: AOTI_BISECT_SHARD_COUNT is 0: the shard count must be at least 1", ab::Error);
  }
  SUBCASE("nothing set") {
    CHECK_THROWS_WITH_AS(ab::shard_from_env(env_of({}), 3),
                         doctest::Contains("none of SLURM_ARRAY_TASK_ID (Slurm), JOB_COMPLETION_INDEX"), ab::Error);
  }
}

TEST_CASE("manifest: per-case timeout, repeats, jobs and run options, validated with their location") {
  std::string text =
      "cases:\n"
      "  - name: a\n"
      "    package: p.pt2\n"
      "    inputs: i.pt\n"
      "    timeout: 90\n"
      "    repeats: 2\n"
      "    jobs: 1\n"
      "    options: [--strategy, bisect, --no-matrix]\n"
      "  - name: b\n"
      "    package: p.pt2\n"
      "    inputs: i.pt\n";
  std::vector<std::vector<std::string>> checked;
  ab::RunOptionCheck check = [&](const std::vector<std::string>& o) -> std::optional<std::string> {
    checked.push_back(o);
    return std::nullopt;
  };
  ab::Manifest m = ab::parse_manifest(text, "m.yaml", ".", check);
  REQUIRE(m.cases.size() == 2);
  CHECK(m.cases[0].index == 0);
  CHECK(m.cases[1].index == 1);
  CHECK(m.cases[0].timeout_s == 90.0);
  CHECK(m.cases[0].repeats == 2);
  CHECK(m.cases[0].jobs == 1);
  CHECK(m.cases[0].options == std::vector<std::string>{"--strategy", "bisect", "--no-matrix"});
  CHECK_FALSE(m.cases[1].timeout_s.has_value());
  CHECK(checked.size() == 1);

  auto error_of = [&](const std::string& yaml) {
    try {
      ab::parse_manifest(yaml, "m.yaml", ".", [](const std::vector<std::string>& o) -> std::optional<std::string> {
        if (!o.empty() && o[0] == "--tmeout") {
          return std::string("not options of `aoti-bisect run`: The following argument was not expected: --tmeout");
        }
        return std::nullopt;
      });
    } catch (const ab::Error& e) {
      CHECK(e.kind() == ab::ErrorKind::usage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string head = "cases:\n  - name: a\n    package: p\n    inputs: i\n";
  CHECK(error_of(head + "    timeout: -3\n") ==
        "m.yaml:5:14: error: 'timeout' must be a positive number of seconds, got '-3'");
  CHECK(error_of(head + "    repeats: 0\n") == "m.yaml:5:14: error: 'repeats' must be a positive integer, got '0'");
  CHECK(error_of(head + "    tmeout: 3\n")
            .rfind("m.yaml:5:5: error: unknown key 'tmeout' (known keys: name, package", 0) == 0);
  CHECK(error_of(head + "    options: --strategy bisect\n") ==
        "m.yaml:5:14: error: 'options' must be a list of `aoti-bisect run` options, e.g. [--strategy, bisect]; got "
        "'--strategy bisect'");
  CHECK(error_of(head + "    options: [--strategy, bisect, --out, x]\n") ==
        "m.yaml:5:35: error: option '--out' is set by the manifest itself");
  CHECK(error_of(head + "    options: [--timeout=5]\n") ==
        "m.yaml:5:15: error: option '--timeout' is set by the manifest itself: use the case's 'timeout' key");
  CHECK(error_of(head + "    options: [--tmeout, 5]\n") ==
        "m.yaml:5:14: error: 'options': not options of `aoti-bisect run`: The following argument was not expected: "
        "--tmeout");
}

TEST_SUITE_END();
