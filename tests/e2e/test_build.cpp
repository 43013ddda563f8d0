#include <cstdlib>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"
#include "inductor/build.hpp"
#include "package/package.hpp"
#include "process/process.hpp"

using e2e::example;
using namespace aoti_bisect;

namespace {

// The torch version of the python the build uses ($AOTI_BISECT_PYTHON, else
// python3 on PATH), as the runner's would be checked.
std::string python_torch_version() {
  SpawnSpec spec;
  const char* chosen = std::getenv("AOTI_BISECT_PYTHON");
  std::string python = chosen != nullptr && *chosen != '\0' ? chosen : "python3";
  spec.argv = {"/usr/bin/env", python, "-c", "import importlib.metadata as m; print(m.version('torch'))"};
  spec.env = current_environment();
  spec.stdout_path = std::filesystem::absolute("torch_version.txt");
  spec.timeout_s = 60;
  ExitStatus status = run_process(spec);
  REQUIRE(status.ok());
  std::string v = status.stdout_tail;
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) {
    v.pop_back();
  }
  return v;
}

std::vector<std::string> kernels_of(const std::filesystem::path& package, WrapperInfo* info_out) {
  Package p = Package::open(package);
  WrapperInfo info = p.wrapper_info(p.select_model(""));
  std::vector<std::string> kernels;
  for (const auto& site : info.call_sites) {
    kernels.push_back(site.kernel);
  }
  if (info_out != nullptr) {
    *info_out = info;
  }
  return kernels;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/build");

TEST_CASE("build_instrumented: a real level-1 build of nan_midway, then a cache hit") {
  BuildRequest r;
  r.exported_program = example("nan_midway.ep.pt2");
  r.printer_level = 1;
  r.cache_dir = "build-cache-of-build-test";  // not shared with other tests in this binary
  r.timeout_s = 900;
  r.expected_torch_version = python_torch_version();

  BuildResult first = build_instrumented(r);
  MESSAGE("real build: ", first.seconds, " s (compile ", first.compile_seconds, " s), torch ", first.torch_version);
  CHECK_FALSE(first.cache_hit);
  CHECK(first.compile_seconds > 0);

  WrapperInfo info;
  std::vector<std::string> instrumented = kernels_of(first.package, &info);
  CHECK(info.instrumented);
  CHECK(info.printer_level == 1);
  // The same kernels in the same order as the plain package.
  std::vector<std::string> plain = kernels_of(example("nan_midway.pt2"), nullptr);
  REQUIRE_FALSE(plain.empty());
  CHECK(instrumented == plain);

  BuildResult second = build_instrumented(r);
  MESSAGE("cache hit: ", second.seconds, " s");
  CHECK(second.cache_hit);
  CHECK(second.package == first.package);
  CHECK(second.compile_seconds == doctest::Approx(first.compile_seconds));
}

TEST_SUITE_END();
