// OutDir: an earlier run's reports, report.svg among them, move to previous/.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "job/out_dir.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

TEST_SUITE_BEGIN("job/out_dir");

TEST_CASE("OutDir: an earlier run's report.svg moves to previous/ with report.md") {
  fs::create_directories("out-dir");
  for (const char* name : {"report.json", "report.md", "report.svg", "unrelated.txt"}) {
    std::ofstream(fs::path("out-dir") / name) << name;
  }
  {
    OutDir dir("out-dir");
    REQUIRE(dir.notes().size() == 1);
    CHECK(dir.notes()[0].find("moved to previous/") != std::string::npos);
  }
  CHECK(fs::exists("out-dir/previous/report.svg"));
  CHECK(fs::exists("out-dir/previous/report.md"));
  CHECK(!fs::exists("out-dir/report.svg"));
  CHECK(fs::exists("out-dir/unrelated.txt"));
}
