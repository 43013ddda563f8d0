// End-to-end: the torch a package was built with, as far as it shows it
// (issue 38): the report names it beside the runner's LibTorch, and a
// package this runner cannot load because another torch built it gets one
// line naming both versions and how to get a matching runner.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "common/text.hpp"
#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using aoti_bisect::replace_all;
using e2e::example;
using e2e::read_text;
using e2e::run_tool;

TEST_SUITE_BEGIN("e2e/versions");

TEST_CASE("the package's torch in the report, and a package another torch built: one line naming both") {
  // nan_midway as another torch would have built it: its compile command
  // names a torch folder that holds 2.99.0, and its library needs a
  // LibTorch library this one does not have (libtorch_cpu.so renamed
  // libtorch_xpu.so in its dynamic section, the same length).
  fs::create_directories("other/site-packages/torch/include");
  std::ofstream("other/site-packages/torch/version.py") << "__version__ = '2.99.0+cpu'\n";
  const std::string other = fs::absolute("other/site-packages/torch").string();
  e2e::rewrite_package(
      example("nan_midway.pt2"), fs::absolute("other.pt2"), [&](const std::string& name, std::string& bytes) {
        if (name.ends_with(".wrapper.cpp") || name.ends_with(".kernel.cpp")) {
          size_t at = bytes.rfind("// Compile cmd");
          REQUIRE(at != std::string::npos);
          bytes = bytes.substr(0, at) + "// Compile cmd\n// g++ x.cpp -I" + other + "/include -c -o x.o\n";
        } else if (name.ends_with(".so")) {
          std::string renamed =
              replace_all(bytes, std::string("libtorch_cpu.so\0", 16), std::string("libtorch_xpu.so\0", 16));
          REQUIRE(renamed != bytes);
          bytes = renamed;
        }
        return true;
      });
  auto r = run_tool({"run", "other.pt2", "--inputs", example("nan_midway.inputs.pt").string(), "--no-matrix"}, "out");
  CHECK(r.code() == 4);
  CHECK(r.report["verdict"] == "could_not_test");
  CHECK(r.report["package"]["torch_version"] == "2.99.0");
  // 2.15's packages also link libtorch.so; 2.13's libtorch_cpu.so alone (here renamed).
  bool renamed = false;
  for (const auto& lib : r.report["package"]["torch_libraries"]) {
    renamed = renamed || lib == "libtorch_xpu.so";
  }
  CHECK(renamed);
  const std::string runner = r.report["environment"]["torch_version"].get<std::string>();
  REQUIRE(!runner.empty());
  std::string line = e2e::error_line(r);
  CHECK(line.rfind("aoti-bisect: error: package 'other.pt2' was built by torch 2.99.0 (it links ", 0) == 0);
  CHECK(line.find("libtorch_xpu.so), and this runner's LibTorch is " + runner + ": the model cannot be loaded: ") !=
        std::string::npos);
  CHECK(line.find("libtorch_xpu.so") != std::string::npos);
  CHECK(
      line.ends_with("; give --python PATH: a Python with torch 2.99.0; aoti-bisect builds a runner against it "
                     "once"));
  CHECK(read_text("out/report.md").find("**built with torch:** 2.99.0") != std::string::npos);

  SUBCASE("inspect names it too") {
    auto i = run_tool({"inspect", "other.pt2"}, "");
    CHECK(i.code() == 0);
    CHECK(i.out.find("built with   torch 2.99.0 (") != std::string::npos);
  }
}

TEST_CASE("a package of this runner's own torch: the report names the same torch, and no note of versions apart") {
  auto r = run_tool({"run", example("nan_midway.pt2").string(), "--inputs", example("nan_midway.inputs.pt").string(),
                     "--no-matrix", "--no-bisect"},
                    "out");
  CHECK(r.code() == 3);  // reproduced, not searched (--no-bisect)
  CHECK(r.report["package"]["torch_version"] == r.report["environment"]["torch_version"]);
  const auto& libs = r.report["package"]["torch_libraries"];
  REQUIRE(libs.is_array());
  CHECK(!libs.empty());
  for (const auto& n : r.report["notes"]) {
    CHECK(n.get<std::string>().find("the package was built by torch") == std::string::npos);
  }
}
