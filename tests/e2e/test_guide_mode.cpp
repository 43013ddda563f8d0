// End-to-end guide mode (--rebuild-per-step): one level-2 rebuild per search
// step must name the same call site as the default path (one level-1 build,
// probes switched at run time). One model only: each rebuild takes 10-20 s.

#include <doctest/doctest.h>

#include <filesystem>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;
using e2e::warm_inductor;

namespace {

std::vector<std::string> nan_midway_args(const std::string& cache, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run",          example("nan_midway.pt2").string(),
                                   "--inputs",     example("nan_midway.inputs.pt").string(),
                                   "--exported-program", example("nan_midway.ep.pt2").string(),
                                   "--cache-dir",  fs::absolute(cache).string(),
                                   "--repeats",    "1"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/guide_mode");

TEST_CASE("NaN midway: guide mode names the call site the default path names, one rebuild per step") {
  auto probes = run_tool(nan_midway_args("cache-default"), "out-default", warm_inductor());
  REQUIRE(probes.code() == 1);
  REQUIRE(probes.report["culprit"].is_object());

  auto guide = run_tool(nan_midway_args("cache-guide", {"--rebuild-per-step"}), "out", warm_inductor(), 1200);
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
  for (const auto& item : guide.report["builds"]["items"]) {
    CHECK(item["purpose"].get<std::string>().rfind("guide ", 0) == 0);
  }
  // The printer wrote to each run's stdout, which the tool kept.
  CHECK(fs::file_size(fs::path("out/runs") / guide.report["runs"].back()["id"].get<std::string>() / "stdout.txt") > 0);
  MESSAGE("default: runs ", probes.report["runs"].size(), ", builds ", probes.report["builds"]["count"], ", ",
          probes.report["total_seconds"], " s; guide: runs ", guide.report["runs"].size(), ", builds ",
          guide.report["builds"]["count"], ", ", guide.report["total_seconds"], " s");
}

TEST_SUITE_END();
