#include <filesystem>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "triage/merge.hpp"
#include "triage/shard.hpp"
#include "triage/summary.hpp"

namespace ab = aoti_bisect;
namespace fs = std::filesystem;

namespace {

ab::CaseResult case_of(const std::string& name, int index, const std::string& verdict, const std::string& sig = "") {
  ab::CaseResult c;
  c.name = name;
  c.index = index;
  c.verdict = verdict;
  c.exit_code = verdict == "clean" ? 0 : verdict == "isolated" ? 1 : 4;
  c.report = "cases/" + name + "/report.json";
  if (!sig.empty()) {
    c.failure_kind = "nonfinite";
    c.signature = sig;
    c.culprit_call_index = 5;
    c.culprit_kernel = "cpp_fused_log_2";
  }
  return c;
}

// The manifest's cases as an unsharded triage would report them.
std::vector<ab::CaseResult> all_cases() {
  return {case_of("nan_a", 0, "isolated", "nonfinite/log/abc"),
          case_of("ok_b", 1, "clean"),
          case_of("nan_c", 2, "isolated", "nonfinite/log/abc"),
          case_of("crash_d", 3, "isolated", "crash/gather/def"),
          case_of("bad_e", 4, "could_not_test"),
          case_of("ok_f", 5, "clean")};
}

ab::Summary summary_for(const std::vector<ab::CaseResult>& cases, const std::string& shard,
                        const std::string& sha = "aaaa", const std::string& version = "0.9.0") {
  ab::Summary s;
  s.tool_version = version;
  s.command = "triage";
  s.manifest = "nightly.yaml";
  s.manifest_sha256 = sha;
  s.manifest_cases = 6;
  s.shard = shard;
  s.cases = cases;
  s.groups = ab::group_cases(s.cases);
  s.exit_code = ab::triage_exit_code(s.cases, false);
  return s;
}

// Writes shard K of N of all_cases() into DIR, as `triage --shard` would.
void write_shard(const fs::path& dir, int k, int n, const std::string& sha = "aaaa",
                 const std::string& version = "0.9.0") {
  std::vector<ab::CaseResult> mine;
  for (const auto& c : all_cases()) {
    if (ab::shard_of(c.name, n) == k) {
      mine.push_back(c);
    }
  }
  fs::create_directories(dir);
  ab::write_file_atomic(dir / "summary.json",
                        ab::summary_to_json(summary_for(mine, ab::Shard{k, n}.text(), sha, version)));
}

std::string merge_error(const std::vector<fs::path>& dirs) {
  try {
    std::vector<ab::ShardInput> in;
    for (const auto& d : dirs) {
      in.push_back(ab::read_shard(d));
    }
    ab::merge_shards(in, "merged", std::nullopt, "");
  } catch (const ab::Error& e) {
    CHECK(e.kind() == ab::ErrorKind::usage);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_SUITE_BEGIN("triage/merge");

TEST_CASE("triage-merge: three shards equal the unsharded summary in cases, groups and statuses") {
  for (int k = 0; k < 3; ++k) {
    write_shard("shards/s" + std::to_string(k), k, 3);
  }
  std::vector<ab::ShardInput> in;
  for (int k : {2, 0, 1}) {  // any order
    in.push_back(ab::read_shard("shards/s" + std::to_string(k)));
  }
  std::vector<ab::EarlierFailure> baseline = {{"crash/gather/def", "crash", 4, "k", {"crash_d"}, ""},
                                              {"mismatch/x/old", "mismatch", 2, "k", {"ok_f"}, ""}};
  ab::Summary m = ab::merge_shards(in, "merged", baseline, "last/summary.json");
  ab::Summary whole = summary_for(all_cases(), "");
  ab::mark_against_baseline(whole, baseline);
  REQUIRE(m.cases.size() == whole.cases.size());
  for (size_t i = 0; i < m.cases.size(); ++i) {
    CAPTURE(i);
    CHECK(m.cases[i].name == whole.cases[i].name);
    CHECK(m.cases[i].verdict == whole.cases[i].verdict);
    CHECK(m.cases[i].signature == whole.cases[i].signature);
    CHECK(m.cases[i].exit_code == whole.cases[i].exit_code);
  }
  REQUIRE(m.groups.size() == whole.groups.size());
  for (size_t i = 0; i < m.groups.size(); ++i) {
    CHECK(m.groups[i].signature == whole.groups[i].signature);
    CHECK(m.groups[i].cases == whole.groups[i].cases);
    CHECK(m.groups[i].status == whole.groups[i].status);
  }
  CHECK(m.groups[0].status == "new");
  CHECK(m.groups[1].status == "known");
  CHECK(m.groups[2].status == "fixed");
  CHECK(m.exit_code == 1);
  CHECK(m.shard.empty());
  CHECK(m.manifest_sha256 == "aaaa");
  // Each case's report path, valid from the merged folder.
  int shard_of_nan_a = ab::shard_of("nan_a", 3);
  CHECK(m.cases[0].report == "../shards/s" + std::to_string(shard_of_nan_a) + "/cases/nan_a/report.json");
  REQUIRE(m.merged_from.size() == 3);
  CHECK(m.merged_from[0].dir == "../shards/s0");
  CHECK(m.merged_from[0].shard == "0/3");
  // summary.json round-trips what the merge needs.
  ab::Summary back = ab::summary_from_json(nlohmann::json::parse(ab::summary_to_json(m)), "x");
  CHECK(back.cases.size() == 6);
  CHECK(back.cases[3].culprit_call_index == 5);
  CHECK(back.cases[3].index == 3);
}

TEST_CASE("triage-merge refuses, in one line: other manifests, other versions, a case twice, missing shards") {
  for (int k = 0; k < 3; ++k) {
    write_shard("ok/s" + std::to_string(k), k, 3);
  }
  write_shard("other/s1", 1, 3, "bbbb");
  CHECK(
      merge_error({"ok/s0", "other/s1", "ok/s2"}) ==
      "triage-merge: 'ok/s0' and 'other/s1' come from different manifests (sha256 aaaa and bbbb); merge the shards of "
      "one manifest");
  write_shard("newer/s1", 1, 3, "aaaa", "1.0.0");
  CHECK(merge_error({"ok/s0", "newer/s1", "ok/s2"}) ==
        "triage-merge: 'ok/s0' was written by aoti-bisect 0.9.0 and 'newer/s1' by 1.0.0; run every shard with one "
        "version");
  CHECK(merge_error({"ok/s0", "ok/s2"}) ==
        "triage-merge: missing shard 1 of 3 (given: 0, 2); merge every shard's folder");
  CHECK(merge_error({"ok/s0", "ok/s1", "ok/s1", "ok/s2"}) ==
        "triage-merge: shard 1/3 is given twice ('ok/s1' and 'ok/s1')");
  write_shard("four/s1", 1, 4);
  CHECK(merge_error({"ok/s0", "four/s1"}) ==
        "triage-merge: 'ok/s0' is shard 0/3 and 'four/s1' is shard 1/4: one manifest, one shard count");
  // The same case in two shards (a summary edited, or shards of two splits).
  ab::Summary twice = summary_for({case_of("nan_a", 0, "isolated", "nonfinite/log/abc")}, "1/3");
  fs::create_directories("dup/s1");
  ab::write_file_atomic("dup/s1/summary.json", ab::summary_to_json(twice));
  REQUIRE(ab::shard_of("nan_a", 3) == 0);
  CHECK(merge_error({"ok/s0", "dup/s1", "ok/s2"}) == "triage-merge: case 'nan_a' is in both 'ok/s0' and 'dup/s1'");
  CHECK(merge_error({"nowhere"}) ==
        "triage-merge: 'nowhere' holds no summary.json (give the --out folder of each `triage --shard K/N`)");
  ab::Summary verify = summary_for({}, "");
  verify.command = "verify";
  fs::create_directories("v");
  ab::write_file_atomic("v/summary.json", ab::summary_to_json(verify));
  CHECK(merge_error({"v"}) == "triage-merge: 'v/summary.json' is a verify summary, not a triage one");
}

TEST_SUITE_END();
