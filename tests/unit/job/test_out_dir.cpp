// OutDir: an earlier run's reports, report.svg among them, move to previous/.

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "common/error.hpp"
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

TEST_CASE("OutDir: the lock holds the folder while the run lives and is gone after it") {
  fs::path dir = fs::temp_directory_path() / ("aoti-bisect-outdir-lock-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    OutDir held(dir);
    CHECK(fs::exists(dir / ".aoti-bisect.lock"));
    // Another run in the same folder is refused, naming this one's pid.
    bool refused = false;
    try {
      OutDir second(dir);
    } catch (const Error& e) {
      refused = std::string(e.what()).find("in use by another aoti-bisect run (pid " + std::to_string(::getpid())) !=
                std::string::npos;
    }
    CHECK(refused);
  }
  CHECK_FALSE(fs::exists(dir / ".aoti-bisect.lock"));  // no file left behind
  {
    OutDir again(dir);  // and the folder is free again
    CHECK(fs::exists(dir / ".aoti-bisect.lock"));
  }
  fs::remove_all(dir);
}

TEST_SUITE_END();
