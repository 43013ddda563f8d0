// End-to-end guide mode (--rebuild-per-step, --source guide): one printing
// build per search step must name the same call site as the default path
// (one instrumented model, probes switched at run time). Where it can, the
// build is the package's own wrapper with level-2 print calls around the
// step's call sites (no exported program needed; after the first step only
// the wrapper object is compiled, a few seconds each); else the exported
// program rebuilt by Inductor at level 2 (10-20 s per step).

#include <filesystem>

#include <doctest/doctest.h>

#include "common/text.hpp"
#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;
using e2e::warm_inductor;

namespace {

std::vector<std::string> nan_midway_args(const std::string& cache, std::vector<std::string> more = {},
                                         const std::string& package = example("nan_midway.pt2").string()) {
  std::vector<std::string> args = {"run",
                                   package,
                                   "--inputs",
                                   example("nan_midway.inputs.pt").string(),
                                   "--no-judge", "--exported-program",
                                   example("nan_midway.ep.pt2").string(),
                                   "--cache-dir",
                                   fs::absolute(cache).string(),
                                   "--repeats",
                                   "1"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// "14.8, 11.5, 12.8": each build's seconds, in order.
// The last run of the search (the matrix may run after it: the answer first).
std::string last_search_run(const nlohmann::json& report) {
  std::string id;
  for (const auto& run : report["runs"]) {
    const std::string run_id = run["id"];
    if (run_id.rfind("bisect.", 0) == 0 || run_id.rfind("guide.", 0) == 0) {
      id = run["id"].get<std::string>();
    }
  }
  return id;
}

std::string step_seconds(const nlohmann::json& report) {
  std::vector<std::string> v;
  for (const auto& item : report["builds"]["items"]) {
    v.push_back(std::to_string(item["seconds"].get<double>()).substr(0, 4));
  }
  return aoti_bisect::join(v, ", ");
}

// The package alone, guide mode: no exported program, no config.
std::vector<std::string> guide_package_only(const std::string& name, const std::string& cache) {
  return {"run",         example(name + ".pt2").string(),
          "--inputs",    example(name + ".inputs.pt").string(),
          "--source",    "guide",
          "--repeats",   "1",
          "--cache-dir", fs::absolute(cache).string()};
}

}  // namespace

TEST_SUITE_BEGIN("e2e/guide_mode");

TEST_CASE("NaN midway: guide mode's Inductor rebuilds name the call site the default path names, one per step") {
  auto probes = run_tool(nan_midway_args("cache-default"), "out-default", warm_inductor());
  REQUIRE(probes.code() == 1);
  REQUIRE(probes.report["culprit"].is_object());

  // A kernel.cpp without its recorded compile command: the package's wrapper
  // cannot be rebuilt, so each step rebuilds the exported program.
  fs::path pkg = fs::absolute("no-kernel-cmd.pt2");
  e2e::rewrite_package(example("nan_midway.pt2"), pkg, [](const std::string& name, std::string& bytes) {
    if (name.ends_with(".kernel.cpp")) {
      // Every one: a package built on a warm Inductor cache records its
      // commands twice (the cached source already held them).
      REQUIRE(bytes.find("// Compile cmd") != std::string::npos);
      for (size_t at; (at = bytes.find("// Compile cmd")) != std::string::npos;) {
        bytes.replace(at, 14, "// (no command)");
      }
    }
    return true;
  });
  auto guide =
      run_tool(nan_midway_args("cache-guide", {"--rebuild-per-step"}, pkg.string()), "out", warm_inductor(), 1200);
  CHECK(guide.code() == 1);
  REQUIRE(guide.report.is_object());
  REQUIRE(guide.report["culprit"].is_object());
  CHECK(guide.report["verdict"] == "isolated");
  CHECK(guide.report["culprit"]["kernel"] == probes.report["culprit"]["kernel"]);
  CHECK(guide.report["culprit"]["call_index"] == probes.report["culprit"]["call_index"]);
  CHECK(guide.report["culprit"]["kind"] == probes.report["culprit"]["kind"]);
  CHECK(guide.report["culprit"]["phase"] == "after_launch");
  CHECK(guide.report["culprit"]["why"].get<std::string>().find("introduced NaN in buf") == 0);
  CHECK(guide.report["bisection"]["predicate"] == "nonfinite");
  CHECK(guide.report["bisection"]["strategy"] == "bisect");
  CHECK(guide.report["bisection"]["status"] == "found");
  CHECK(guide.report["builds"]["count"].get<int>() >= 2);
  const std::string why = "the package's sources do not record their compile and link commands";
  for (const auto& item : guide.report["builds"]["items"]) {
    CHECK(item["purpose"].get<std::string>().rfind("guide ", 0) == 0);
    CHECK(item["source"] == "guide");
    CHECK(item["fidelity"] ==
          "an Inductor rebuild with the level-2 printer (the package's wrapper was not "
          "rewritten: " +
              why + ")");
    CHECK(item["objects_compiled"].is_null());
  }
  CHECK(guide.report["bisection"]["message"].get<std::string>().find("the package's wrapper was not rewritten (" + why +
                                                                     ")") != std::string::npos);
  // The printer wrote to each run's stdout, which the tool kept.
  CHECK(fs::file_size(fs::path("out/runs") / last_search_run(guide.report) / "stdout.txt") > 0);
  MESSAGE("default: runs ", probes.report["runs"].size(), ", builds ", probes.report["builds"]["count"], ", ",
          probes.report["total_seconds"], " s; guide (Inductor): runs ", guide.report["runs"].size(), ", builds ",
          guide.report["builds"]["count"], ", ", guide.report["total_seconds"], " s, seconds per step ",
          step_seconds(guide.report));
}

TEST_CASE("guide mode from the package alone: its wrapper with print calls per range isolates NaN and a fault") {
  SUBCASE("nan_midway: one wrapper rebuild per step, the kernel and weights objects from the cache after the first") {
    auto meta = meta_of("nan_midway");
    auto r = run_tool(guide_package_only("nan_midway", "cache-nan"), "out-nan");
    CHECK(r.code() == 1);
    REQUIRE(r.report["culprit"].is_object());
    CHECK(r.report["verdict"] == "isolated");
    CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
    CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
    CHECK(r.report["culprit"]["why"].get<std::string>().find("introduced NaN in buf") == 0);
    const auto& bis = r.report["bisection"];
    CHECK(bis["source"] == "guide");
    CHECK(bis["predicate"] == "nonfinite");
    CHECK(bis["status"] == "found");
    CHECK(bis["message"].get<std::string>().rfind(
              "guide mode: the package's wrapper with level-2 print calls per range", 0) == 0);
    const auto& items = r.report["builds"]["items"];
    REQUIRE(items.size() >= 2);
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& item = items[i];
      std::string purpose = item["purpose"].get<std::string>();
      CHECK(purpose.rfind("guide call site", 0) == 0);
      CHECK(item["source"] == "guide");
      std::string fidelity = item["fidelity"].get<std::string>();
      CHECK(fidelity.rfind("the package's wrapper recompiled with level-2 print calls around " + purpose.substr(6),
                           0) == 0);
      // Print calls change nothing the model computes.
      CHECK(fidelity.find("; outputs bit-identical to the package's first run (checksums)") != std::string::npos);
      CHECK(item["cache_hit"] == false);
      // Wrapper, kernel and weights the first time; then only the wrapper.
      CHECK(item["objects_compiled"] == (i == 0 ? 3 : 1));
    }
    // The printer wrote to each run's stdout, which the tool kept.
    CHECK(fs::file_size(fs::path("out-nan/runs") / last_search_run(r.report) / "stdout.txt") > 0);
    MESSAGE("guide via the wrapper rewrite, nan_midway: ", items.size(), " builds, seconds per step ",
            step_seconds(r.report), "; total ", r.report["total_seconds"], " s");
  }
  SUBCASE("wild_gather: a run printing every site names the one that never returned") {
    auto meta = meta_of("wild_gather");
    auto r = run_tool(guide_package_only("wild_gather", "cache-fault"), "out-fault");
    CHECK(r.code() == 1);
    REQUIRE(r.report["culprit"].is_object());
    CHECK(r.report["verdict"] == "isolated");
    CHECK(r.report["failure"]["kind"] == "crash");
    CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
    CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
    CHECK(r.report["bisection"]["source"] == "guide");
    CHECK(r.report["bisection"]["predicate"] == "fault");
    CHECK(r.report["bisection"]["steps"][0]["purpose"] == "all");
    CHECK(r.report["bisection"]["steps"][0]["verdict"] == "reproduces");
    int k = meta["culprit"]["call_index"].get<int>() + 1;
    CHECK(r.report["bisection"]["steps"][1]["purpose"] == "confirm");
    CHECK(r.report["bisection"]["steps"][1]["lo"] == k - 1);
    CHECK(r.report["bisection"]["steps"][1]["hi"] == k);
    // One build printing every site, then one per confirming step (the site
    // with its neighbour in one run: "guide call sites 4-5"), each compiling
    // only the wrapper.
    const auto& items = r.report["builds"]["items"];
    REQUIRE(items.size() >= 1);
    CHECK(items[0]["purpose"] == "guide call sites 1-9");
    CHECK(items[0]["fidelity"] ==
          "the package's wrapper recompiled with level-2 print calls around call sites 1-9; "
          "outputs not compared (the runs returned none)");
    CHECK(items[0]["objects_compiled"] == 3);
    for (size_t i = 1; i < items.size(); ++i) {
      CHECK(items[i]["purpose"].get<std::string>().rfind("guide call site", 0) == 0);
      CHECK(items[i]["objects_compiled"] == 1);
    }
  }
}

TEST_SUITE_END();
