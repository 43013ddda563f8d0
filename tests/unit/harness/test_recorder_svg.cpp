// Recorder::save with report.svg: written with the other reports, and gone
// with them when a report cannot be written.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "harness/recorder.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

struct QuietProgress : Progress {
  void phase(const std::string&, const std::string&) override {}
  void run_started(const std::string&, int, int) override {}
  void run_finished(const std::string&, OutcomeKind, const std::string&, double, int, int) override {}
  void note(const std::string&) override {}
};

Bisection three_sites() {
  Bisection b;
  b.status = "running";
  b.sites = {{1, "cpp_fused_0", "cpp"}, {2, "triton_poi_1", "triton"}, {3, "aoti_torch_cpu_mm_out", "extern"}};
  b.steps.push_back({1, 3, "trace", "reproduces", 1, 1, ""});
  return b;
}

}  // namespace

TEST_SUITE_BEGIN("harness/recorder");

TEST_CASE("Recorder: report.svg beside report.md once the bisection has call sites") {
  QuietProgress progress;
  Recorder rec("out-rec1", false, progress);
  rec.finish(Verdict::running, "");
  CHECK(fs::exists("out-rec1/report.md"));
  CHECK(!fs::exists("out-rec1/report.svg"));
  rec.bisection(three_sites());
  rec.finish(Verdict::running, "");  // written at once (a bisection's update waits up to a second)
  REQUIRE(fs::exists("out-rec1/report.svg"));
  std::ifstream in("out-rec1/report.svg");
  std::string svg((std::istreambuf_iterator<char>(in)), {});
  CHECK(svg.find("id=\"site-3\"") != std::string::npos);
}

TEST_CASE("Recorder: a report that cannot be written leaves no report.svg behind") {
  QuietProgress progress;
  Recorder rec("out-rec2", false, progress);
  rec.bisection(three_sites());
  REQUIRE(fs::exists("out-rec2/report.svg"));
  // report.md cannot replace a folder that holds something.
  fs::remove("out-rec2/report.md");
  fs::create_directories("out-rec2/report.md/x");
  rec.bisection(three_sites());  // within a second of the last save: written later
  CHECK(fs::exists("out-rec2/report.svg"));
  CHECK_THROWS_WITH_AS(rec.finish(Verdict::not_isolated, "why"), doctest::Contains("the reports cannot be written"),
                       Error);
  CHECK(!fs::exists("out-rec2/report.svg"));
  CHECK(!fs::exists("out-rec2/report.json"));
  for (const auto& e : fs::directory_iterator("out-rec2")) {
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  }
}
