// Nightly triage end to end: `triage MANIFEST` over real example packages
// (signatures, groups, summaries, a bad manifest, a baseline night, Ctrl-C),
// and `verify` on a healthy and a buggy package.

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::read_text;
using e2e::run_tool;
using Json = nlohmann::json;

namespace {

struct Case {
  std::string name, package, inputs;
};

// A manifest in `dir` (relative paths are relative to it).
fs::path write_manifest(const fs::path& dir, const std::vector<Case>& cases) {
  fs::create_directories(dir);
  std::string text = "# nightly\ncases:\n";
  for (const auto& c : cases) {
    text += "  - name: " + c.name + "\n    package: " + c.package + "\n    inputs: " + c.inputs + "\n";
  }
  fs::path path = dir / "nightly.yaml";
  std::ofstream(path) << text;
  return path;
}

Json read_json(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), path.string() << " is missing");
  return Json::parse(in);
}

const Json& case_of(const Json& summary, const std::string& name) {
  for (const auto& c : summary["cases"]) {
    if (c["name"] == name) {
      return c;
    }
  }
  FAIL("no case " << name);
  static Json none;
  return none;
}

const Json* group_of(const Json& summary, const std::string& kind) {
  for (const auto& g : summary["groups"]) {
    if (g["kind"] == kind) {
      return &g;
    }
  }
  return nullptr;
}

std::string s(const fs::path& p) {
  return p.string();
}

}  // namespace

TEST_CASE("triage: two nights; a copied and a renumbered package share the signature; a baseline marks groups") {
  fs::path dir = fs::absolute("triage-nights");
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(example("nan_midway.pt2"), dir / "nan_copy.pt2");
  fs::path manifest = write_manifest(
      dir, {{"nan", s(example("nan_midway.pt2")), s(example("nan_midway.inputs.pt"))},
            {"nan_copy", "nan_copy.pt2", s(example("nan_midway.inputs.pt"))},
            {"nan_renumbered", s(example("nan_midway_renumbered.pt2")), s(example("nan_midway_renumbered.inputs.pt"))},
            {"healthy", s(example("healthy.pt2")), s(example("healthy.inputs.pt"))},
            {"gather", s(example("wild_gather.pt2")), s(example("wild_gather.inputs.pt"))}});
  fs::path out = dir / "out";
  auto r = run_tool({"triage", s(manifest), "--jobs", "2", "--out", s(out)}, "");
  CHECK_MESSAGE(r.code() == 1, r.err);
  Json sum = read_json(out / "summary.json");
  CHECK(sum["exit_code"] == 1);
  CHECK(sum["interrupted"] == false);
  REQUIRE(sum["cases"].size() == 5);

  const Json& nan = case_of(sum, "nan");
  const Json& copy = case_of(sum, "nan_copy");
  const Json& renum = case_of(sum, "nan_renumbered");
  CHECK(nan["verdict"] == "isolated");
  CHECK(nan["exit_code"] == 1);
  CHECK(nan["failure_kind"] == "nonfinite");
  REQUIRE(nan["signature"].is_string());
  std::string sig = nan["signature"];
  CHECK(sig.rfind("nonfinite/cpp_fused_log/", 0) == 0);
  CHECK(copy["signature"] == sig);
  // The rebuilt package numbers its kernels and buffers differently...
  REQUIRE(renum["culprit"].is_object());
  CHECK(renum["culprit"]["kernel"] != nan["culprit"]["kernel"]);
  CHECK(renum["culprit"]["call_index"] != nan["culprit"]["call_index"]);
  // ...and names the same bug.
  CHECK(renum["signature"] == sig);
  // The case's own report carries the signature the summary shows.
  Json nan_report = read_json(out / nan["report"].get<std::string>());
  CHECK(nan_report["failure"]["signature"] == sig);
  CHECK(read_text(out / "cases" / "nan" / "report.md").find(sig) != std::string::npos);

  CHECK(case_of(sum, "healthy")["verdict"] == "clean");
  CHECK(case_of(sum, "healthy")["signature"].is_null());
  const Json& gather = case_of(sum, "gather");
  CHECK(gather["failure_kind"] == "crash");
  CHECK(gather["signature"] != sig);

  REQUIRE(sum["groups"].size() == 2);
  const Json* nan_group = group_of(sum, "nonfinite");
  REQUIRE(nan_group != nullptr);
  CHECK((*nan_group)["signature"] == sig);
  CHECK((*nan_group)["cases"] == Json::array({"nan", "nan_copy", "nan_renumbered"}));
  CHECK((*nan_group)["status"].is_null());
  const Json* crash_group = group_of(sum, "crash");
  REQUIRE(crash_group != nullptr);
  CHECK((*crash_group)["cases"] == Json::array({"gather"}));

  std::string md = read_text(out / "summary.md");
  CHECK(md.find("2 failure groups in 5 cases") != std::string::npos);
  CHECK(md.find("| `" + sig + "` | `nonfinite` |") != std::string::npos);
  std::string junit = read_text(out / "junit.xml");
  CHECK(junit.find("tests=\"5\" failures=\"4\" errors=\"0\"") != std::string::npos);
  CHECK(junit.find("name=\"healthy\"") != std::string::npos);
  CHECK(r.out.find("5 cases: 1 clean, 4 failed") != std::string::npos);

  // Night two, same folder: gather is fixed (its case now runs a healthy
  // package), class_index is new, nan is known. The baseline is last night's
  // summary in the very folder this run reuses.
  manifest = write_manifest(dir, {{"nan", s(example("nan_midway.pt2")), s(example("nan_midway.inputs.pt"))},
                                  {"gather", s(example("healthy.pt2")), s(example("healthy.inputs.pt"))},
                                  {"class_index", s(example("class_index.pt2")), s(example("class_index.inputs.pt"))}});
  r = run_tool({"triage", s(manifest), "--out", s(out), "--baseline", s(out / "summary.json")}, "");
  CHECK_MESSAGE(r.code() == 1, r.err);
  Json night2 = read_json(out / "summary.json");
  CHECK(fs::exists(out / "previous" / "summary.json"));
  CHECK(night2["baseline"].is_string());
  REQUIRE(night2["groups"].size() == 3);
  const Json* known = group_of(night2, "nonfinite");
  const Json* fresh = group_of(night2, "device_assert");
  const Json* fixed = group_of(night2, "crash");
  REQUIRE(known != nullptr);
  REQUIRE(fresh != nullptr);
  REQUIRE(fixed != nullptr);
  CHECK((*known)["status"] == "known");
  CHECK((*known)["cases"] == Json::array({"nan"}));
  CHECK((*fresh)["status"] == "new");
  CHECK((*fixed)["status"] == "fixed");
  CHECK((*fixed)["signature"] == gather["signature"]);
  CHECK(read_text(out / "summary.md").find("**fixed**") != std::string::npos);
}

TEST_CASE("triage: a bad manifest is exit 2 with file:line:col, and nothing runs") {
  fs::path dir = fs::absolute("triage-bad");
  fs::remove_all(dir);
  fs::create_directories(dir);
  struct Bad {
    std::string text, where, what;
  } cases[] = {
      {"cases:\n  - name: a\n    package: a.pt2\n    inputs: a.pt\n    refrence: r.pt\n",
       ":5:5: error: ", "unknown key 'refrence'"},
      {"cases:\n  - name: a\n    inputs: a.pt\n", ":2:5: error: ", "a case needs 'package'"},
      {"cases:\n  - name: a\n    package: a.pt2\n    inputs: a.pt\n  - name: a\n    package: b.pt2\n    inputs: b.pt\n",
       ":5:11: error: ", "duplicate case name 'a'"},
      {"cases:\n  - name: ../up\n    package: a.pt2\n    inputs: a.pt\n", ":2:11: error: ", "case name '../up'"},
      {"cases: [\n", ":2:1: error: ", ""},
      {"cases: []\n", ":1:8: error: ", "non-empty list"},
  };
  for (const auto& bad : cases) {
    CAPTURE(bad.text);
    std::ofstream(dir / "m.yaml") << bad.text;
    auto r = run_tool({"triage", s(dir / "m.yaml"), "--out", s(dir / "out")}, "");
    CHECK(r.code() == 2);
    CHECK_MESSAGE(r.err.find("m.yaml" + bad.where) != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find(bad.what) != std::string::npos, r.err);
    CHECK(!fs::exists(dir / "out" / "summary.json"));
  }
  auto r = run_tool({"triage", s(dir / "absent.yaml")}, "");
  CHECK(r.code() == 2);
  CHECK(r.err.find("absent.yaml") != std::string::npos);
}

TEST_CASE("triage: a case that cannot be tested never stops the others; exit 4 when none failed") {
  fs::path dir = fs::absolute("triage-untested");
  fs::remove_all(dir);
  fs::path manifest = write_manifest(dir, {{"gone", "missing.pt2", s(example("healthy.inputs.pt"))},
                                           {"healthy", s(example("healthy.pt2")), s(example("healthy.inputs.pt"))}});
  auto r = run_tool({"triage", s(manifest), "--out", s(dir / "out")}, "");
  CHECK_MESSAGE(r.code() == 4, r.err);
  Json sum = read_json(dir / "out" / "summary.json");
  CHECK(case_of(sum, "gone")["verdict"] == "could_not_test");
  CHECK(case_of(sum, "gone")["exit_code"] == 4);
  CHECK(case_of(sum, "gone")["error"].get<std::string>().find("missing.pt2") != std::string::npos);
  CHECK(case_of(sum, "healthy")["verdict"] == "clean");
  CHECK(sum["groups"].empty());
  CHECK(read_text(dir / "out" / "junit.xml").find("errors=\"1\"") != std::string::npos);
}

TEST_CASE("triage: Ctrl-C stops the running case, marks the rest not run, and writes the partial summary") {
  fs::path dir = fs::absolute("triage-interrupt");
  fs::remove_all(dir);
  std::vector<Case> cases;
  for (const char* name : {"a", "b", "c"}) {
    cases.push_back({name, s(example("nan_midway.pt2")), s(example("nan_midway.inputs.pt"))});
  }
  fs::path manifest = write_manifest(dir, cases);
  aoti_bisect::SpawnSpec spec;
  spec.argv = {AOTI_BISECT_BIN, "triage", s(manifest), "--out", s(dir / "out")};
  spec.env = aoti_bisect::current_environment();
  spec.env["AOTI_BISECT_RUNNER"] = AOTI_BISECT_RUNNER_BIN;
  spec.stdout_path = dir / "stdout.txt";
  spec.stderr_path = dir / "stderr.txt";
  spec.timeout_s = 600;
  aoti_bisect::ProcessSet set;
  set.start(spec);
  // Once case b has started (its folder exists), interrupt the triage.
  bool started = false;
  for (int i = 0; i < 1200 && !started; ++i) {
    started = fs::exists(dir / "out" / "cases" / "b");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(started);
  // The triage runs in its own process group (ProcessSet): signal the group,
  // as a terminal's Ctrl-C would.
  std::string pid_text = read_text(dir / "out" / ".aoti-bisect.lock");
  pid_t pid = static_cast<pid_t>(std::stol(pid_text));
  ::kill(-::getpgid(pid), SIGINT);
  auto [token, status] = set.wait_any();
  CHECK_MESSAGE(status.exit_code == 130, status.describe() << " " << status.stderr_tail);
  Json sum = read_json(dir / "out" / "summary.json");
  CHECK(sum["interrupted"] == true);
  CHECK(sum["exit_code"] == 130);
  CHECK(case_of(sum, "a")["verdict"] == "isolated");
  CHECK(case_of(sum, "c")["verdict"] == "not_run");
  std::string b = case_of(sum, "b")["verdict"];
  CHECK((b == "interrupted" || b == "isolated"));
  CHECK(read_text(dir / "out" / "junit.xml").find("<skipped") != std::string::npos);
}

TEST_CASE("triage --shard: three shards as separate processes, merged, equal the unsharded triage") {
  fs::path dir = fs::absolute("triage-shards");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Per-case overrides keep it short: one run per variant.
  std::string text = "cases:\n";
  std::vector<Case> cases = {
      {"nan", s(example("nan_midway.pt2")), s(example("nan_midway.inputs.pt"))},
      {"nan_renumbered", s(example("nan_midway_renumbered.pt2")), s(example("nan_midway_renumbered.inputs.pt"))},
      {"healthy", s(example("healthy.pt2")), s(example("healthy.inputs.pt"))},
      {"gather", s(example("wild_gather.pt2")), s(example("wild_gather.inputs.pt"))},
      {"class_index", s(example("class_index.pt2")), s(example("class_index.inputs.pt"))},
      {"gone", "missing.pt2", s(example("healthy.inputs.pt"))}};
  for (const auto& c : cases) {
    text += "  - name: " + c.name + "\n    package: " + c.package + "\n    inputs: " + c.inputs +
            "\n    repeats: 1\n    options: [--strategy, auto]\n";
  }
  fs::path manifest = dir / "nightly.yaml";
  std::ofstream(manifest) << text;
  std::map<std::string, int> shard_of;
  for (int k = 0; k < 3; ++k) {
    fs::path out = dir / ("shard-" + std::to_string(k));
    // The CI-matrix way for shard 2, --shard for the others.
    auto r = k == 2 ? run_tool({"triage", s(manifest), "--shard-from-env", "--out", s(out)}, "",
                               {{"AOTI_BISECT_SHARD_INDEX", "2"}, {"AOTI_BISECT_SHARD_COUNT", "3"}})
                    : run_tool({"triage", s(manifest), "--shard", std::to_string(k) + "/3", "--out", s(out)}, "");
    CHECK(r.err.find("shard " + std::to_string(k) + "/3: ") != std::string::npos);
    Json sum = read_json(out / "summary.json");
    CHECK(sum["shard"] == std::to_string(k) + "/3");
    CHECK(sum["manifest_cases"] == 6);
    bool failed = false, untested = false;
    for (const auto& c : sum["cases"]) {
      shard_of[c["name"].get<std::string>()] = k;
      failed = failed || c["state"] == "failed";
      untested = untested || c["state"] == "could_not_test";
    }
    // docs/triage.md: 1 when some case failed, else 4 when some could not be
    // tested, else 0; the summary says the same.
    const int expected = failed ? 1 : untested ? 4 : 0;
    CHECK_MESSAGE(r.code() == expected, r.err);
    CHECK(sum["exit_code"] == expected);
  }
  CHECK(shard_of.size() == 6);  // every case in one shard
  // A baseline from the shards' own groups: the gather's signature known,
  // one signature that no case has (fixed).
  std::string gather_sig =
      case_of(read_json(dir / ("shard-" + std::to_string(shard_of["gather"])) / "summary.json"), "gather")["signature"];
  Json baseline = {
      {"groups",
       Json::array({Json{{"signature", gather_sig}, {"kind", "crash"}, {"cases", {"gather"}}},
                    Json{{"signature", "mismatch/-/000000000000"}, {"kind", "mismatch"}, {"cases", {"healthy"}}}})}};
  std::ofstream(dir / "baseline.json") << baseline.dump();
  auto whole = run_tool({"triage", s(manifest), "--out", s(dir / "whole"), "--baseline", s(dir / "baseline.json")}, "");
  CHECK_MESSAGE(whole.code() == 1, whole.err);
  auto merged = run_tool({"triage-merge", s(dir / "shard-1"), s(dir / "shard-0"), s(dir / "shard-2"), "--out",
                          s(dir / "merged"), "--baseline", s(dir / "baseline.json")},
                         "");
  CHECK_MESSAGE(merged.code() == whole.code(), merged.err);
  Json a = read_json(dir / "whole" / "summary.json");
  Json b = read_json(dir / "merged" / "summary.json");
  REQUIRE(a["cases"].size() == 6);
  REQUIRE(b["cases"].size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CAPTURE(a["cases"][i]["name"]);
    for (const char* key : {"name", "index", "verdict", "state", "exit_code", "failure_kind", "signature", "culprit"}) {
      CAPTURE(key);
      CHECK(a["cases"][i][key] == b["cases"][i][key]);
    }
    // The report path is valid from the merged folder.
    if (b["cases"][i]["report"].is_string()) {
      CHECK(fs::exists(dir / "merged" / b["cases"][i]["report"].get<std::string>()));
    }
  }
  CHECK(a["groups"] == b["groups"]);
  CHECK(a["exit_code"] == b["exit_code"]);
  CHECK(a["manifest_sha256"] == b["manifest_sha256"]);
  REQUIRE(b["groups"].size() == 4);  // nan (both copies), gather, class_index, the fixed one
  CHECK(b["groups"][0]["cases"] == Json({"nan", "nan_renumbered"}));
  CHECK(b["groups"][0]["status"] == "new");
  CHECK(group_of(b, "crash") != nullptr);
  CHECK((*group_of(b, "crash"))["status"] == "known");
  CHECK((*group_of(b, "mismatch"))["status"] == "fixed");
  CHECK(case_of(b, "gone")["verdict"] == "could_not_test");
  CHECK(read_text(dir / "merged" / "summary.md").find("Merged from") != std::string::npos);
  CHECK(read_text(dir / "merged" / "junit.xml").find("tests=\"6\"") != std::string::npos);

  // A shard missing: one line, exit 2.
  auto missing = run_tool({"triage-merge", s(dir / "shard-0"), s(dir / "shard-2"), "--out", s(dir / "m2")}, "");
  CHECK(missing.code() == 2);
  CHECK_MESSAGE(missing.err.find("triage-merge: missing shard 1 of 3 (given: 0, 2)") != std::string::npos, missing.err);
  // The scheduler's variables missing: one line naming them, exit 2.
  auto noenv = run_tool({"triage", s(manifest), "--shard-from-env", "--out", s(dir / "x")}, "");
  CHECK(noenv.code() == 2);
  CHECK(noenv.err.find("none of SLURM_ARRAY_TASK_ID") != std::string::npos);
  auto k8s =
      run_tool({"triage", s(manifest), "--shard-from-env", "--out", s(dir / "x")}, "", {{"JOB_COMPLETION_INDEX", "1"}});
  CHECK(k8s.code() == 2);
  CHECK_MESSAGE(k8s.err.find("AOTI_BISECT_SHARD_COUNT is not set") != std::string::npos, k8s.err);
  // A case's options that `run` does not take: located, exit 2, nothing runs.
  std::ofstream(dir / "bad.yaml") << "cases:\n  - name: a\n    package: a.pt2\n    inputs: a.pt\n"
                                     "    options: [--strategy, sideways]\n";
  auto bad = run_tool({"triage", s(dir / "bad.yaml"), "--out", s(dir / "y")}, "");
  CHECK(bad.code() == 2);
  CHECK_MESSAGE(bad.err.find("bad.yaml:5:14: error: 'options': not options of `aoti-bisect run`") != std::string::npos,
                bad.err);
  CHECK_FALSE(fs::exists(dir / "y" / "summary.json"));
}

TEST_CASE("verify: 0 on a healthy package over neighbouring inputs, 1 when an earlier signature reproduces") {
  fs::path dir = fs::absolute("verify");
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(example("healthy.inputs.pt"), dir / "failing.pt");
  // Another inputs file of the same model, not a copy: its tensor a view at
  // a storage offset (the example's offset inputs).
  fs::copy_file(example("healthy.offset.inputs.pt"), dir / "neighbour.pt");
  REQUIRE(e2e::read_text(dir / "failing.pt") != e2e::read_text(dir / "neighbour.pt"));
  auto r = run_tool({"verify", s(example("healthy.pt2")), "--inputs", s(dir / "failing.pt"), "--inputs",
                     s(dir / "neighbour.pt"), "--no-neighbours", "--out", s(dir / "ok")},
                    "");
  CHECK_MESSAGE(r.code() == 0, r.err);
  Json sum = read_json(dir / "ok" / "summary.json");
  CHECK(sum["command"] == "verify");
  CHECK(case_of(sum, "failing")["verify"] == "clean");
  CHECK(case_of(sum, "neighbour")["verify"] == "clean");

  // The bug's signature, from the failing run's report.
  auto first =
      run_tool({"run", s(example("nan_midway.pt2")), "--inputs", s(example("nan_midway.inputs.pt")), "--no-matrix"},
               s(dir / "first"));
  REQUIRE(first.code() == 1);
  std::string sig = first.report["failure"]["signature"];
  r = run_tool({"verify", s(example("nan_midway.pt2")), "--inputs", s(example("nan_midway.inputs.pt")), "--baseline",
                s(dir / "first" / "report.json"), "--out", s(dir / "bad")},
               "");
  CHECK_MESSAGE(r.code() == 1, r.err);
  sum = read_json(dir / "bad" / "summary.json");
  CHECK(sum["cases"][0]["verify"] == "reproduces");
  CHECK(sum["cases"][0]["signature"] == sig);
  CHECK(r.out.find("reproduces") != std::string::npos);

  // Another earlier signature: the failure is new, still exit 1.
  r = run_tool({"verify", s(example("nan_midway.pt2")), "--inputs", s(example("nan_midway.inputs.pt")), "--signature",
                "crash/cpp_fused_x/000000000000", "--out", s(dir / "new")},
               "");
  CHECK(r.code() == 1);
  CHECK(read_json(dir / "new" / "summary.json")["cases"][0]["verify"] == "new_failure");

  r = run_tool({"verify", s(example("healthy.pt2")), "--inputs", s(dir / "failing.pt"), "--reference", "x.pt",
                "--reference", "y.pt"},
               "");
  CHECK(r.code() == 2);
  CHECK(r.err.find("one --reference per --inputs") != std::string::npos);
}
