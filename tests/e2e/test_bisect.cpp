// End-to-end kernel bisection on real packages: the culprit each example's
// generator recorded (examples/make_examples.py, NAME.json "culprit",
// 0-based) must be the call site the tool names (1-based), with one build,
// and none on a second run (the build cache). These force the exported
// program as the source of probes; test_interpose.cpp covers the package
// alone.

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;
using e2e::warm_inductor;

namespace {

std::vector<std::string> bisect_args(const std::string& name, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run",
                                   example(name + ".pt2").string(),
                                   "--inputs",
                                   example(name + ".inputs.pt").string(),
                                   "--no-judge", "--exported-program",
                                   example(name + ".ep.pt2").string(),
                                   "--cache-dir",
                                   fs::absolute("build-cache").string(),
                                   "--repeats",
                                   "1",
                                   "--source",
                                   "exported_program"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

void check_culprit(const nlohmann::json& report, const nlohmann::json& meta) {
  REQUIRE(report.is_object());
  REQUIRE(report["culprit"].is_object());
  CHECK(report["verdict"] == "isolated");
  CHECK(report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  CHECK(report["bisection"]["status"] == "found");
  CHECK(report["bisection"]["runs"].get<int>() <= report["bisection"]["planned_runs"].get<int>());
}

}  // namespace

TEST_SUITE_BEGIN("e2e/bisect");

TEST_CASE("NaN midway: the log kernel, one build, then none from the cache; exit 1") {
  auto meta = meta_of("nan_midway");
  auto r = run_tool(bisect_args("nan_midway"), "out", warm_inductor());
  CHECK(r.code() == 1);
  check_culprit(r.report, meta);
  CHECK(r.report["culprit"]["kernel"].get<std::string>().find("log") != std::string::npos);
  CHECK(r.report["culprit"]["kind"] == "cpp");
  CHECK(r.report["culprit"]["phase"] == "after_launch");
  CHECK(r.report["culprit"]["why"].get<std::string>().find("NaN") != std::string::npos);
  CHECK(r.report["builds"]["count"] == 1);
  CHECK(r.report["builds"]["cache_hits"] == 0);
  CHECK(r.report["builds"]["call_sites_match"] == true);
  // auto (the default): the trace run probed every site and named the
  // culprit; the evidence run, probing every site up to it, confirmed it.
  int k = r.report["culprit"]["call_index"].get<int>();
  const auto& steps = r.report["bisection"]["steps"];
  CHECK(r.report["bisection"]["strategy"] == "auto");
  REQUIRE(steps.size() == 3);
  CHECK(steps[0]["purpose"] == "trace");
  CHECK(steps[1]["purpose"] == "all");
  CHECK(steps[1]["runs"] == 0);  // answered by the trace run
  CHECK(steps[1]["verdict"] == "reproduces");
  CHECK(steps[2]["purpose"] == "confirm");
  CHECK(steps[2]["lo"] == 1);
  // The call sites its self-check probed: all of them, the outputs' NaN
  // traced back to k (issue 51: the range is what its note says).
  CHECK(steps[2]["hi"] == r.report["package"]["call_sites"]);
  CHECK(steps[2]["hi"].get<int>() > k);
  CHECK(steps[2]["runs"] == 1);
  CHECK(r.report["bisection"]["runs"] == 2);
  // Output checksums are 16 hex digits (XXH3-64 of the bytes).
  std::string sum = r.report["runs"][0]["outputs"][0]["checksum"];
  CHECK(sum.size() == 16);
  CHECK(sum.find_first_not_of("0123456789abcdef") == std::string::npos);
  // The saved inputs of the culprit, for a reproducer.
  REQUIRE(r.report["repro"].is_object());
  CHECK(r.report["repro"]["files"].size() >= 1);
  CHECK(fs::exists(fs::path("out/repro") / r.report["repro"]["files"][0].get<std::string>()));
  std::ifstream md("out/report.md");
  std::string text((std::istreambuf_iterator<char>(md)), {});
  CHECK(text.find("## Culprit") < text.find("## What failed"));

  auto again = run_tool(bisect_args("nan_midway"), "out2", warm_inductor());
  CHECK(again.code() == 1);
  check_culprit(again.report, meta);
  CHECK(again.report["builds"]["count"] == 0);
  CHECK(again.report["builds"]["cache_hits"] == 1);
}

TEST_CASE("--strategy bisect: halvings, then the culprit and its neighbour confirmed in one run") {
  auto meta = meta_of("nan_midway");
  auto r = run_tool(bisect_args("nan_midway", {"--strategy", "bisect"}), "out", warm_inductor());
  CHECK(r.code() == 1);
  check_culprit(r.report, meta);
  int k = r.report["culprit"]["call_index"].get<int>();
  const auto& steps = r.report["bisection"]["steps"];
  REQUIRE(steps.size() >= 3);
  CHECK(steps[1]["purpose"] == "bisect");
  CHECK(steps.back()["purpose"] == "confirm");
  CHECK(steps.back()["lo"] == k - 1);
  CHECK(steps.back()["hi"] == k);
  for (const auto& st : steps) {
    CHECK(st["purpose"] != "neighbour");
  }
}

TEST_CASE("strategies linear and all name the same call site as auto") {
  auto meta = meta_of("nan_midway");
  for (std::string strategy : {"linear", "all"}) {
    CAPTURE(strategy);
    auto r = run_tool(bisect_args("nan_midway", {"--strategy", strategy}), "out-" + strategy, warm_inductor());
    CHECK(r.code() == 1);
    check_culprit(r.report, meta);
    CHECK(r.report["bisection"]["strategy"] == strategy);
    const int k = meta["culprit"]["call_index"].get<int>() + 1;
    std::vector<nlohmann::json> searched;  // the steps after the trace run, the self-check's aside
    for (const auto& st : r.report["bisection"]["steps"]) {
      if (st["purpose"] == strategy) {
        searched.push_back(st);
      }
    }
    if (strategy == "linear") {
      // One site at a time from the first, each its own run, clean until the culprit.
      REQUIRE(searched.size() == static_cast<size_t>(k));
      for (int i = 1; i <= k; ++i) {
        CAPTURE(i);
        CHECK(searched[i - 1]["lo"] == i);
        CHECK(searched[i - 1]["hi"] == i);
        CHECK(searched[i - 1]["verdict"] == (i < k ? "clean" : "reproduces"));
        CHECK(searched[i - 1]["runs"].get<int>() >= 1);
      }
    } else {
      // One answer over every call site.
      REQUIRE(searched.size() == 1);
      CHECK(searched[0]["lo"] == 1);
      CHECK(searched[0]["hi"].get<int>() >= k);
      CHECK(searched[0]["verdict"] == "reproduces");
    }
  }
}

TEST_CASE("wild gather: the gather kernel faulted, its index input shown out of range") {
  auto meta = meta_of("wild_gather");
  auto r = run_tool(bisect_args("wild_gather", {"--inductor-config", "assert_indirect_indexing=false"}), "out",
                    warm_inductor());
  CHECK(r.code() == 1);
  check_culprit(r.report, meta);
  CHECK(r.report["builds"]["count"] == 1);
  CHECK(r.report["culprit"]["phase"] == "launch");
  CHECK(r.report["bisection"]["predicate"] == "fault");
  auto producer = r.report["culprit"]["producer"];
  REQUIRE(producer.is_object());
  CHECK(producer["tensor"].get<std::string>().rfind("arg", 0) == 0);
  CHECK(producer["call_index"].is_null());
  bool wild_index_seen = false;
  for (const auto& a : r.report["culprit"]["args"]) {
    if (a["before"].is_object() && a["before"]["dtype"] == "int64") {
      wild_index_seen = wild_index_seen || a["before"]["max"].get<double>() >= double(1LL << 40);
    }
  }
  CHECK(wild_index_seen);
}

TEST_CASE("class index: the kernel holding the index check, and the offending input value") {
  auto meta = meta_of("class_index");
  auto r = run_tool(bisect_args("class_index"), "out", warm_inductor());
  CHECK(r.code() == 1);
  check_culprit(r.report, meta);
  CHECK(r.report["builds"]["count"] == 1);
  auto producer = r.report["culprit"]["producer"];
  REQUIRE(producer.is_object());
  std::string why = producer["why"];
  CHECK(why.find("graph input 1") == 0);
  CHECK(why.find("outside [0, 5)") != std::string::npos);
  CHECK(r.report["failure"]["first_line"].get<std::string>().find("index out of bounds") != std::string::npos);
}

TEST_CASE("NaN/Inf first made by an extern call (an overflowing matmul)") {
  auto meta = meta_of("extern_overflow");
  auto r = run_tool(bisect_args("extern_overflow"), "out", warm_inductor());
  CHECK(r.code() == 1);
  check_culprit(r.report, meta);
  CHECK(r.report["builds"]["count"] == 1);
  CHECK(r.report["culprit"]["kind"] == "extern");
  CHECK(r.report["culprit"]["why"].get<std::string>().find("Inf") != std::string::npos);
}

TEST_CASE("a late bug in a model of 30+ call sites: that kernel, not the last one") {
  auto meta = meta_of("deep_late_nan");
  REQUIRE(meta["kernels"].size() >= 30);
  auto r = run_tool(bisect_args("deep_late_nan"), "out", warm_inductor());
  CHECK(r.code() == 1);
  check_culprit(r.report, meta);
  CHECK(r.report["builds"]["count"] == 1);
  CHECK(r.report["culprit"]["call_index"].get<size_t>() < meta["kernels"].size());
  // ceil(log2 37) = 6 halvings at most, plus trace, confirm, neighbour, evidence.
  CHECK(r.report["bisection"]["runs"].get<int>() <= 10);
}

TEST_CASE("the exported program inside the package (package_pt2) is found without --exported-program") {
  auto meta = meta_of("nan_midway");
  auto r = run_tool(
      {"run", example("nan_midway.combined.pt2").string(), "--inputs", example("nan_midway.inputs.pt").string(),
       "--cache-dir", fs::absolute("build-cache").string(), "--repeats", "1"},
      "out", warm_inductor());
  CHECK(r.code() == 1);
  CHECK(r.report["package"]["has_exported_program"] == true);
  check_culprit(r.report, meta);
}

TEST_CASE("--source exported_program without one: reproduced, not isolated, and the tool says what it needs") {
  auto r = run_tool({"run", example("nan_midway.pt2").string(), "--inputs", example("nan_midway.inputs.pt").string(),
                     "--repeats", "1", "--source", "exported_program"},
                    "out");
  CHECK(r.code() == 3);
  CHECK(r.report["verdict"] == "not_isolated");
  CHECK(r.report["verdict_reason"].get<std::string>().find("--exported-program") != std::string::npos);
  CHECK(r.report["culprit"].is_null());
}

TEST_CASE("aoti-bisect bisect: the phase alone, under given flags") {
  auto meta = meta_of("nan_midway");
  std::vector<std::string> args = bisect_args("nan_midway", {"--env", "OMP_NUM_THREADS=1"});
  args[0] = "bisect";
  auto repeats = std::find(args.begin(), args.end(), "--repeats");
  args.erase(repeats, repeats + 2);  // no --repeats for bisect
  auto r = run_tool(args, "out", warm_inductor());
  CHECK(r.code() == 1);
  check_culprit(r.report, meta);
  CHECK(r.report["matrix"]["variants"].size() == 1);
  CHECK(r.report["runs"][0]["env"]["OMP_NUM_THREADS"] == "1");
}

TEST_CASE("the build fails clearly when the Python torch is missing") {
  auto r = run_tool(bisect_args("nan_midway"), "out", {{"AOTI_BISECT_PYTHON", "/nonexistent/python3"}});
  CHECK(r.code() == 3);
  CHECK(r.report["verdict"] == "not_isolated");
  // The one line names the Python tried and what to do.
  const std::string note = r.report["builds"]["note"];
  CHECK(note.find("python '/nonexistent/python3' does not exist (set AOTI_BISECT_PYTHON or install torch)") !=
        std::string::npos);
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("e2e/bisect");

TEST_CASE("an exception thrown inside a kernel (relu runtime_error bug): that kernel") {
  auto meta = meta_of("relu_runtime_error");
  auto r = run_tool(
      bisect_args("relu_runtime_error", {"--inductor-config", "cpp.inject_relu_bug_TESTING_ONLY=runtime_error"}), "out",
      warm_inductor());
  CHECK(r.code() == 1);
  check_culprit(r.report, meta);
  CHECK(r.report["culprit"]["kernel"].get<std::string>().find("relu") != std::string::npos);
  CHECK(r.report["culprit"]["why"] == "the launch never returned: Unknown exception");
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("e2e/bisect");

TEST_CASE("a compiled package given as the exported program: one clear line, not a Python traceback") {
  auto r = run_tool({"build", example("healthy.pt2").string(), "--cache-dir", "build-cache-misuse"}, "");
  CHECK(r.code() == 4);
  CHECK(r.err.find("is an AOTInductor package without an exported program inside") != std::string::npos);
}

TEST_SUITE_END();
