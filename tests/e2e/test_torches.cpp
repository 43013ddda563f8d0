// End-to-end: one aoti-bisect for packages of several torch releases
// (issue 38). The packages here are built by another torch than the one
// this build's runner is built against (scripts/other-torch-examples, ctest
// fixture other_torch): the tool picks a runner built against the package's
// own torch (building it once, cached by torch and sources), and where that
// torch is gone or another is asked for, says so in one line, exit 4.
// Run by ctest e2e_torches (the suite e2e/torches), not by ctest e2e.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::read_text;
using e2e::run_tool;

namespace {

fs::path other(const std::string& file) {
  return fs::path(AOTI_BISECT_OTHER_TORCH_EXAMPLES) / file;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) {
    s.pop_back();
  }
  return s;
}

// "2.14.1+cu130" -> "2.14.1"
std::string release(const std::string& v) {
  return v.substr(0, v.find('+'));
}

// The runner beside the tool, not the one the other e2e tests name outright.
const std::map<std::string, std::string> k_pick = {{"AOTI_BISECT_RUNNER", ""}, {"AOTI_BISECT_PYTHON", ""}};

std::map<std::string, std::string> pick_with(const std::string& key, const std::string& value) {
  auto env = k_pick;
  env[key] = value;
  return env;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/torches");

TEST_CASE("a package another torch built: the tool runs it with a runner built against that torch, and isolates") {
  const std::string built_by = trimmed(read_text(other("torch-version")));
  REQUIRE(!built_by.empty());
  auto r = run_tool({"run", other("nan_midway.pt2").string(), "--inputs", other("nan_midway.inputs.pt").string()},
                    "out", k_pick, 1800);
  INFO(r.err);
  CHECK(r.code() == 1);
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["culprit"]["kernel"] == "cpp_fused_log_2");
  CHECK(r.report["package"]["torch_version"] == release(built_by));
  // The runs ran on the package's torch, not on this build's.
  CHECK(release(r.report["environment"]["torch_version"].get<std::string>()) == release(built_by));
  bool runner_build = false;
  for (const auto& b : r.report["builds"]["items"]) {
    if (b["purpose"] == "runner") {
      runner_build = true;
      CHECK(release(b["torch_version"].get<std::string>()) == release(built_by));
      CHECK(b["source"] == "the package's own torch");
    }
  }
  CHECK(runner_build);
  CHECK(r.err.find("runner: against torch " + release(built_by)) != std::string::npos);
  CHECK(r.err.find(" (the package's own torch), ") != std::string::npos);
  for (const auto& n : r.report["notes"]) {
    CHECK(n.get<std::string>().find("the package was built by torch") == std::string::npos);
  }

  SUBCASE("inspect names the package's torch and the runner it would use") {
    auto i = run_tool({"inspect", other("nan_midway.pt2").string()}, "", k_pick);
    CHECK(i.code() == 0);
    CHECK(i.out.find("built with   torch " + release(built_by) + " (") != std::string::npos);
    CHECK(i.out.find("runner       torch " + release(built_by)) != std::string::npos);
    CHECK(i.out.find(" (the package's own torch): built, in ") != std::string::npos);
  }

  SUBCASE("triage of a zoo built by two torches: each case on its own torch, and the summary groups them") {
    std::ofstream("zoo.yaml") << "cases:\n"
                              << "  - name: ours\n    package: " << example("nan_midway.pt2").string()
                              << "\n    inputs: " << example("nan_midway.inputs.pt").string() << "\n"
                              << "  - name: theirs\n    package: " << other("nan_midway.pt2").string()
                              << "\n    inputs: " << other("nan_midway.inputs.pt").string() << "\n";
    auto t = run_tool({"triage", "zoo.yaml", "--out", "zoo"}, "", k_pick, 1800);
    INFO(t.err);
    CHECK(t.code() == 1);
    auto s = nlohmann::json::parse(read_text("zoo/summary.json"));
    REQUIRE(s["torches"].size() == 2);
    CHECK(s["torches"][0]["cases"] == nlohmann::json::array({"ours"}));
    CHECK(s["torches"][1]["torch"] == release(built_by));
    CHECK(s["torches"][1]["cases"] == nlohmann::json::array({"theirs"}));
    REQUIRE(s["torches"][1]["runners"].size() == 1);
    CHECK(release(s["torches"][1]["runners"][0].get<std::string>()) == release(built_by));
    CHECK(s["torches"][0]["torch"] != s["torches"][1]["torch"]);
    for (const auto& c : s["cases"]) {
      CHECK(c["culprit"]["kernel"] == "cpp_fused_log_2");
    }
    CHECK(read_text("zoo/summary.md").find("## Cases by torch") != std::string::npos);
  }
}

TEST_CASE("the package's torch gone, or another torch asked for: one line naming both, exit 4") {
  // The runner beside this tool: which torch it is.
  auto ours = run_tool(
      {"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string(), "--no-matrix"},
      "ours", k_pick);
  REQUIRE(ours.code() == 0);
  const std::string runner = ours.report["environment"]["torch_version"].get<std::string>();
  const std::string built_by = trimmed(read_text(other("torch-version")));
  // A 2.13 LibTorch cannot load a package of a later torch (its library
  // needs libtorch.so); later LibTorches may load an earlier package.
  const bool loads = release(runner) > "2.13.0";

  SUBCASE("gone: the torch folder its compile command names holds no torch now") {
    auto r = run_tool({"run", other("gone/nan_midway.pt2").string(), "--inputs",
                       other("gone/nan_midway.inputs.pt").string(), "--no-matrix"},
                      "out", k_pick);
    INFO(r.err);
    CHECK(r.report["package"]["torch_version"].is_null());
    CHECK(r.report["package"]["torch_dir"].get<std::string>().find("venv-link/lib/") != std::string::npos);
    if (!loads) {
      CHECK(r.code() == 4);
      std::string line = e2e::error_line(r);
      CHECK(line.find("was built by the torch at ") != std::string::npos);
      CHECK(line.find("venv-link/lib/") != std::string::npos);
      CHECK(line.find("(no longer installed there, it links libtorch.so") != std::string::npos);
      CHECK(line.find("and this runner's LibTorch is " + runner + ": the model cannot be loaded: ") !=
            std::string::npos);
      CHECK(
          line.ends_with("install that torch again, or give --python PATH: a Python whose torch built the "
                         "package; aoti-bisect builds a runner against it once"));
    } else {
      CHECK(r.code() == 1);
      CHECK(r.report["culprit"]["kernel"] == "cpp_fused_log_2");
    }
  }

  SUBCASE("--python names this torch for a package of another: the line names both versions") {
    auto r = run_tool({"run", other("nan_midway.pt2").string(), "--inputs", other("nan_midway.inputs.pt").string(),
                       "--no-matrix", "--python", "python3"},
                      "out", k_pick);
    INFO(r.err);
    CHECK(r.report["package"]["torch_version"] == release(built_by));
    if (!loads) {
      CHECK(r.code() == 4);
      std::string line = e2e::error_line(r);
      CHECK(line.find("was built by torch " + release(built_by) + " (it links libtorch.so") != std::string::npos);
      CHECK(line.find("and this runner's LibTorch is " + runner + ": the model cannot be loaded: ") !=
            std::string::npos);
      CHECK(line.ends_with("give --python PATH: a Python with torch " + release(built_by) +
                           "; aoti-bisect builds a runner against it once"));
    } else {
      CHECK(r.code() == 1);
    }
  }

  SUBCASE("--python naming no Python: a usage line, exit 2") {
    auto r = run_tool({"run", other("nan_midway.pt2").string(), "--inputs", other("nan_midway.inputs.pt").string(),
                       "--python", "/nonexistent/python3"},
                      "out", k_pick);
    CHECK(r.code() == 2);
    CHECK(e2e::error_line(r) ==
          "aoti-bisect: error: python '/nonexistent/python3' does not exist (--python): its "
          "torch runs the package; name a Python that has torch installed");
  }
}

TEST_SUITE_END();
