// A flag-matrix variant that runs the runner under a tool (on CUDA:
// compute-sanitizer memcheck), through AOTI_BISECT_RUN_UNDER; a variant whose
// tool is not installed is left out with a note. Tried here with a wrapper
// script in place of the tool.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

TEST_SUITE_BEGIN("e2e/run_under");

TEST_CASE("run under: a variant's runner runs under its tool; a missing tool leaves the variant out") {
  fs::path wrap = fs::absolute("wrap-runner.sh");
  {
    std::ofstream f(wrap);
    f << "#!/bin/sh\necho \"$@\" > under-wrapper.txt\nexec \"$@\"\n";
  }
  fs::permissions(wrap, fs::perms::owner_all);
  fs::path config = fs::absolute("run-under.yaml");
  {
    std::ofstream f(config);
    f << "variants:\n"
      << "  - name: wrapped\n    description: under a wrapper script\n    repeats: 1\n"
      << "    env:\n      AOTI_BISECT_RUN_UNDER: \"" << wrap.string() << "\"\n"
      << "  - name: sanitized\n    description: under a tool that is not installed\n    repeats: 1\n"
      << "    env:\n      AOTI_BISECT_RUN_UNDER: \"no-such-sanitizer-here --tool memcheck\"\n";
  }
  auto r = run_tool({"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string(),
                     "--config", config.string(), "--repeats", "1"},
                    "out-under");
  CHECK(r.code() == 0);
  REQUIRE(r.report.is_object());
  bool wrapped = false, sanitized = false;
  for (const auto& run : r.report["runs"]) {
    wrapped = wrapped || run["variant"] == "wrapped";
    sanitized = sanitized || run["variant"] == "sanitized";
    if (run["variant"] == "wrapped") {
      CHECK(run["outcome"] == "ok");
    }
  }
  CHECK(wrapped);
  CHECK_FALSE(sanitized);
  // The wrapper ran in the run's folder with the runner's command line.
  std::string seen = e2e::read_text(fs::path("out-under") / "runs" / "wrapped.1" / "under-wrapper.txt");
  CHECK(seen.find("aoti-bisect-runner") != std::string::npos);
  CHECK_FALSE(fs::exists(fs::path("out-under") / "runs" / "baseline" / "under-wrapper.txt"));
  CHECK(r.report["notes"].dump().find("variant sanitized: no-such-sanitizer-here is not on PATH: left out of the "
                                      "flag matrix") != std::string::npos);
}

TEST_SUITE_END();
