#include <doctest/doctest.h>

#include "common/error.hpp"
#include "triage/manifest.hpp"
#include "triage/summary.hpp"

namespace ab = aoti_bisect;
using Json = nlohmann::json;

namespace {

ab::CaseResult failed(const std::string& name, const std::string& sig, const std::string& kind = "nonfinite") {
  ab::CaseResult c;
  c.name = name;
  c.verdict = "isolated";
  c.exit_code = 1;
  c.failure_kind = kind;
  c.signature = sig;
  c.culprit_call_index = 3;
  c.culprit_kernel = "cpp_fused_log_2";
  return c;
}

ab::CaseResult with_verdict(const std::string& name, const std::string& verdict) {
  ab::CaseResult c;
  c.name = name;
  c.verdict = verdict;
  return c;
}

}  // namespace

TEST_CASE("cases group by signature in case order; clean and untested cases stay out") {
  std::vector<ab::CaseResult> cases = {failed("a", "S1"), with_verdict("h", "clean"), failed("b", "S2", "crash"),
                                       failed("c", "S1"), with_verdict("x", "could_not_test")};
  auto groups = ab::group_cases(cases);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].signature == "S1");
  CHECK(groups[0].cases == std::vector<std::string>{"a", "c"});
  CHECK(groups[1].kind == "crash");
  CHECK(ab::triage_exit_code(cases, false) == 1);
  CHECK(ab::triage_exit_code({with_verdict("h", "clean"), with_verdict("x", "no_report")}, false) == 4);
  CHECK(ab::triage_exit_code({with_verdict("h", "clean")}, false) == 0);
  CHECK(ab::triage_exit_code({with_verdict("h", "clean")}, true) == 130);
  // not_isolated still means the failure reproduced.
  ab::CaseResult ni = failed("n", "S3");
  ni.verdict = "not_isolated";
  CHECK(ab::triage_exit_code({ni}, false) == 1);
}

TEST_CASE("cases by the torch that built their package: read from each report, in the summary and back") {
  Json r1 = {{"verdict", "isolated"},
             {"package", {{"torch_version", "2.14.1"}}},
             {"environment", {{"torch_version", "2.14.1+cu130"}}}};
  Json r2 = {{"verdict", "clean"},
             {"package", {{"torch_version", "2.13.0"}}},
             {"environment", {{"torch_version", "2.13.0+cpu"}}}};
  Json r3 = {{"verdict", "could_not_test"}, {"package", {{"torch_version", nullptr}}}};
  ab::CaseResult a, b, c, d;
  a.name = "zoo_a";
  b.name = "zoo_b";
  c.name = "zoo_c";
  d.name = "zoo_d";
  ab::read_case_report(r1, a);
  ab::read_case_report(r2, b);
  ab::read_case_report(r3, c);
  ab::read_case_report(r1, d);
  CHECK(a.package_torch == "2.14.1");
  CHECK(a.runner_torch == "2.14.1+cu130");
  CHECK(c.package_torch.empty());
  auto groups = ab::group_by_torch({a, b, c, d});
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].torch == "2.14.1");
  CHECK(groups[0].cases == std::vector<std::string>{"zoo_a", "zoo_d"});
  CHECK(groups[0].runners == std::vector<std::string>{"2.14.1+cu130"});
  CHECK(groups[1].torch == "2.13.0");
  CHECK(groups[2].torch.empty());
  CHECK(groups[2].runners.empty());

  ab::Summary s;
  s.command = "triage";
  s.cases = {a, b, c, d};
  Json j = Json::parse(ab::summary_to_json(s));
  REQUIRE(j["torches"].size() == 3);
  CHECK(j["torches"][0]["torch"] == "2.14.1");
  CHECK(j["torches"][0]["cases"] == Json::array({"zoo_a", "zoo_d"}));
  CHECK(j["torches"][2]["torch"].is_null());
  CHECK(j["cases"][0]["package_torch"] == "2.14.1");
  CHECK(j["cases"][0]["runner_torch"] == "2.14.1+cu130");
  // A merged summary keeps them (triage-merge reads summaries back).
  ab::Summary back = ab::summary_from_json(j, "summary.json");
  CHECK(back.cases[1].package_torch == "2.13.0");
  CHECK(back.cases[1].runner_torch == "2.13.0+cpu");
  std::string md = ab::summary_to_markdown(s);
  CHECK(md.find("## Cases by torch") != std::string::npos);
  CHECK(md.find("| 2.14.1 | 2.14.1+cu130 | `zoo_a`, `zoo_d` |") != std::string::npos);
  CHECK(md.find("| not recorded |  | `zoo_c` |") != std::string::npos);
}

TEST_CASE("a baseline marks groups new and known, and earlier ones fixed or untested") {
  ab::Summary s;
  s.cases = {failed("a", "S1"), failed("b", "S4"), with_verdict("gone_clean", "clean"),
             with_verdict("gone_broken", "could_not_test")};
  s.groups = ab::group_cases(s.cases);
  Json baseline = Json::parse(R"({"groups": [
      {"signature": "S1", "kind": "nonfinite", "cases": ["a"], "culprit": null},
      {"signature": "S2", "kind": "crash", "cases": ["gone_clean"], "culprit": {"call_index": 4, "kernel": "k_1"}},
      {"signature": "S3", "kind": "crash", "cases": ["gone_broken"]},
      {"signature": "S5", "kind": "crash", "cases": ["x"], "status": "fixed"}]})");
  auto earlier = ab::earlier_failures(baseline, "b.json");
  REQUIRE(earlier.size() == 3);  // an earlier night's fixed group is not a failure
  ab::mark_against_baseline(s, earlier);
  REQUIRE(s.groups.size() == 4);
  CHECK(s.groups[0].status == "known");
  CHECK(s.groups[1].status == "new");
  CHECK(s.groups[2].signature == "S2");
  CHECK(s.groups[2].status == "fixed");
  CHECK(s.groups[2].culprit_kernel == "k_1");
  CHECK(s.groups[3].status == "untested");

  Json out = Json::parse(ab::summary_to_json(s));
  CHECK(out["groups"][2]["status"] == "fixed");
  CHECK(out["cases"][0]["culprit"]["kernel"] == "cpp_fused_log_2");
  CHECK(ab::summary_to_markdown(s).find("**untested**") != std::string::npos);
}

TEST_CASE("earlier failures come from a report.json too; anything else is a usage error naming the file") {
  Json report = Json::parse(R"({"verdict": "isolated", "failure": {"kind": "crash", "signature": "crash/k/abc"},
                                "culprit": {"call_index": 2, "kernel": "k_1"}})");
  auto e = ab::earlier_failures(report, "r.json");
  REQUIRE(e.size() == 1);
  CHECK(e[0].signature == "crash/k/abc");
  CHECK(e[0].culprit_call_index == 2);
  CHECK_THROWS_WITH_AS(ab::earlier_failures(Json::parse("[1]"), "x.json"), doctest::Contains("'x.json'"), ab::Error);
  CHECK_THROWS_WITH_AS(ab::earlier_failures(Json::parse(R"({"a": 1})"), "x.json"),
                       doctest::Contains("neither 'groups' nor 'failure'"), ab::Error);
}

TEST_CASE("verify judges each input against the earlier signatures") {
  ab::Summary s;
  s.cases = {failed("same", "S1"), failed("other", "S9"), with_verdict("ok", "clean"),
             with_verdict("broken", "could_not_test")};
  ab::judge_verify(s, {ab::EarlierFailure{"S1", "", std::nullopt, "", {}, ""}});
  CHECK(s.cases[0].verify == "reproduces");
  CHECK(s.cases[1].verify == "new_failure");
  CHECK(s.cases[2].verify == "clean");
  CHECK(s.cases[3].verify == "could_not_test");
  ab::judge_verify(s, {});
  CHECK(s.cases[0].verify == "fails");
}

TEST_CASE("junit: one testcase per case; failures, errors and skipped counted") {
  ab::Summary s;
  s.command = "triage";
  s.cases = {failed("a", "S1"), with_verdict("h", "clean"), with_verdict("x", "could_not_test"),
             with_verdict("n", "not_run")};
  std::string x = ab::summary_to_junit(s);
  CHECK(x.find("tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\"") != std::string::npos);
  CHECK(x.find("message=\"nonfinite at call site 3 cpp_fused_log_2\"") != std::string::npos);
}

TEST_CASE("manifest: paths resolve against its folder; mistakes are located") {
  ab::Manifest m = ab::parse_manifest(
      "cases:\n  - name: a\n    package: p.pt2\n    inputs: /abs/i.pt\n    against_eager: true\n    exported_program: "
      "ep.pt2\n",
      "m.yaml", "/nightly");
  REQUIRE(m.cases.size() == 1);
  CHECK(m.cases[0].package == "/nightly/p.pt2");
  CHECK(m.cases[0].inputs == std::vector<std::filesystem::path>{"/abs/i.pt"});
  // Several inputs: the batches of a loop, each resolved against the manifest's folder.
  ab::Manifest batches =
      ab::parse_manifest("cases:\n  - name: loop\n    package: p.pt2\n    inputs: [b0.pt, epoch3/, 'epoch4/*.pt']\n",
                         "m.yaml", "/nightly");
  CHECK(batches.cases[0].inputs ==
        std::vector<std::filesystem::path>{"/nightly/b0.pt", "/nightly/epoch3/", "/nightly/epoch4/*.pt"});
  CHECK_THROWS_WITH_AS(ab::parse_manifest("cases:\n  - name: a\n    package: p\n    inputs: []\n", "m.yaml", "."),
                       doctest::Contains("m.yaml:4:13: error: 'inputs' must be a path or a non-empty list of paths"),
                       ab::Error);
  CHECK(m.cases[0].against_eager);
  CHECK(m.cases[0].exported_program == "/nightly/ep.pt2");
  // Custom operator libraries, resolved like the other paths; no inputs: the package's sample inputs.
  ab::Manifest ops = ab::parse_manifest(
      "cases:\n  - name: op\n    package: p.pt2\n    load_library: [lib/libops.so, /opt/libmore.so]\n", "m.yaml",
      "/nightly");
  CHECK(ops.cases[0].load_libraries == std::vector<std::filesystem::path>{"/nightly/lib/libops.so", "/opt/libmore.so"});
  CHECK(ops.cases[0].inputs.empty());
  CHECK_THROWS_WITH_AS(
      ab::parse_manifest("cases:\n  - name: a\n    package: p\n    inputs: i\n    against_eager: yes!\n", "m.yaml",
                         "."),
      doctest::Contains("m.yaml:5:20: error: 'against_eager' must be true or false"), ab::Error);
  CHECK_THROWS_WITH_AS(ab::parse_manifest("casez: []\n", "m.yaml", "."),
                       doctest::Contains("m.yaml:1:1: error: unknown key 'casez'"), ab::Error);
  CHECK_THROWS_WITH_AS(ab::parse_manifest("", "m.yaml", "."), doctest::Contains("needs 'cases:'"), ab::Error);
  CHECK(ab::valid_case_name("resnet50.fp16-b8"));
  CHECK(!ab::valid_case_name(".."));
  CHECK(!ab::valid_case_name("a/b"));
}

TEST_CASE("the trigger shrunk and a batch-dependent finding: read from each report, in the summary and back") {
  Json r = {{"verdict", "isolated"},
            {"inputs",
             {{"minimal", {{"sentence", "sample 5 of 8 fails alone"}}},
              {"batch_dependence", {{"finding", "batch_dependent"}}}}}};
  Json plain = {
      {"verdict", "isolated"},
      {"inputs",
       {{"minimal", {{"sentence", "sample 9 of 12 fails alone"}}}, {"batch_dependence", {{"finding", nullptr}}}}}};
  ab::CaseResult a = failed("norm", "S1");
  ab::CaseResult b = failed("rowlog", "S2");
  ab::read_case_report(r, a);
  ab::read_case_report(plain, b);
  CHECK(a.minimal_inputs == "sample 5 of 8 fails alone");
  CHECK(a.batch_dependent);
  CHECK_FALSE(b.batch_dependent);
  ab::Summary s;
  s.command = "triage";
  s.cases = {a, b};
  Json j = Json::parse(ab::summary_to_json(s));
  CHECK(j["cases"][0]["batch_dependent"] == true);
  CHECK(j["cases"][1]["batch_dependent"] == false);
  ab::Summary back = ab::summary_from_json(j, "summary.json");
  CHECK(back.cases[0].batch_dependent);
  std::string md = ab::summary_to_markdown(s);
  CHECK(md.find("| sample 5 of 8 fails alone; `batch_dependent` |") != std::string::npos);
  CHECK(md.find("| sample 9 of 12 fails alone |") != std::string::npos);
}
