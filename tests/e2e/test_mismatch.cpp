// End-to-end search for wrong finite values (issue 4): each probed call
// site's outputs are compared with the eager value of the graph node they
// hold; the culprit is the first site whose output leaves the tolerance while
// its inputs are within it. Real packages from examples/make_examples.py.

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

// A fresh build cache per test run (builds.count is then what the test
// expects); Inductor's own compile cache is kept across runs.
std::vector<std::string> mismatch_args(const std::string& name, std::vector<std::string> more) {
  std::vector<std::string> args = {"run",
                                   example(name + ".pt2").string(),
                                   "--inputs",
                                   example(name + ".inputs.pt").string(),
                                   "--exported-program",
                                   example(name + ".ep.pt2").string(),
                                   "--config",
                                   example(name + ".config.yaml").string(),
                                   "--cache-dir",
                                   fs::absolute("build-cache").string(),
                                   "--repeats",
                                   "1"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The culprit the example's generator recorded (0-based), named by the tool
// (1-based), with the divergence evidence a bug report needs.
bool computes(const nlohmann::json& culprit, const std::string& node) {
  for (const auto& n : culprit["graph_nodes"]) {
    if (n["name"] == node) {
      return n["source"].get<std::string>().find("make_examples.py:") == 0;
    }
  }
  return false;
}

int exported_program_builds(const nlohmann::json& report) {
  int n = 0;
  for (const auto& item : report["builds"]["items"]) {
    n += item["source"] == "exported_program";
  }
  return n;
}

void check_divergent_culprit(const e2e::Result& r, const nlohmann::json& meta, const std::string& node_op) {
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["failure"]["kind"] == "mismatch");
  REQUIRE(r.report["culprit"].is_object());
  const auto& c = r.report["culprit"];
  CHECK(c["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(c["kernel"] == meta["culprit"]["kernel"]);
  CHECK(c["phase"] == "after_launch");
  CHECK(r.report["bisection"]["predicate"] == "mismatch");
  CHECK(r.report["bisection"]["status"] == "found");
  // The package's own code probed (interposition); one build of the
  // exported program, for its map from buffers to graph nodes.
  CHECK(r.report["bisection"]["source"] == "interpose");
  CHECK(exported_program_builds(r.report) == 1);
  REQUIRE(c["divergence"].is_object());
  const auto& d = c["divergence"];
  // The error is far outside what the tolerance allows, and the worst
  // element is named with both values.
  CHECK(d["max_abs_error"].get<double>() > 100 * d["allowed_abs_error"].get<double>());
  CHECK(d["worst_index"].size() >= 1);
  CHECK_FALSE(d["worst_actual"].get<std::string>().empty());
  CHECK_FALSE(d["worst_expected"].get<std::string>().empty());
  CHECK(d["dtype"] == "float32");
  CHECK(d["atol"].get<double>() > 0);
  // Graph nodes with the op and where the model's source made it.
  REQUIRE(d["graph_nodes"].size() >= 1);
  bool found_op = false;
  for (const auto& n : d["graph_nodes"]) {
    found_op = found_op || n["op"].get<std::string>().find(node_op) != std::string::npos;
    CHECK(n["source"].get<std::string>().find("make_examples.py:") == 0);
  }
  CHECK(found_op);
  CHECK(r.report["bisection"]["mapped_sites"].get<int>() >= 1);
  // Inductor's injected bug: eager and float64 agree, the package does not.
  REQUIRE(c["judgement"].is_object());
  CHECK(c["judgement"]["kind"] == "compiler");
  CHECK(c["judgement"]["alone"]["verdict"] == "wrong_on_its_own");
}

}  // namespace

TEST_SUITE_BEGIN("e2e/mismatch");

TEST_CASE("relu accuracy bug (relu computed as x + 1): the relu kernel, one build; report.md shows it first") {
  auto meta = meta_of("relu_accuracy");
  auto r = run_tool(mismatch_args("relu_accuracy", {"--reference", example("relu_accuracy.expected.pt").string()}),
                    "out", warm_inductor());
  check_divergent_culprit(r, meta, "aten.relu");
  CHECK(r.report["culprit"]["kernel"].get<std::string>().find("relu") != std::string::npos);
  CHECK(r.report["culprit"]["divergence"]["graph_nodes"][0]["name"] == "relu");
  CHECK(computes(r.report["culprit"], "relu"));
  std::string md = read_text("out/report.md");
  CHECK(md.find("## Culprit") < md.find("## What failed"));
  CHECK(md.find("| compiled vs eager |") < md.find("## What failed"));
  CHECK(md.find("`relu` (`aten.relu.default`) at `make_examples.py:") != std::string::npos);
  CHECK(md.find("| worst element |") != std::string::npos);
  CHECK(md.find("**Computes:** `relu`") != std::string::npos);
}

TEST_CASE("log1p accuracy bug, reference from --against-eager: the log1p kernel, one build") {
  auto meta = meta_of("log1p_accuracy");
  auto r = run_tool(mismatch_args("log1p_accuracy", {"--against-eager"}), "out", warm_inductor());
  check_divergent_culprit(r, meta, "aten.log1p");
  CHECK(r.report["culprit"]["kernel"].get<std::string>().find("log1p") != std::string::npos);
  CHECK(computes(r.report["culprit"], "log1p"));
}

TEST_CASE("a bug late in 37 call sites: that kernel, not the last one nor the first one to inherit it") {
  auto meta = meta_of("late_accuracy");
  REQUIRE(meta["kernels"].size() >= 30);
  auto r = run_tool(mismatch_args("late_accuracy", {"--against-eager"}), "out", warm_inductor());
  check_divergent_culprit(r, meta, "aten.add");
  int site = r.report["culprit"]["call_index"].get<int>();
  CHECK(site >= 20);
  CHECK(site < static_cast<int>(meta["kernels"].size()));
  CHECK(r.report["culprit"]["kernel"].get<std::string>().find("log1p") != std::string::npos);
  CHECK(computes(r.report["culprit"], "log1p"));
  // Halves, not every site: far fewer runs than call sites.
  CHECK(r.report["bisection"]["runs"].get<int>() <= 12);
}

TEST_CASE("float rounding only (long reductions, fused chains): clean against eager, no false alarm") {
  auto r = run_tool(
      {"run", example("rounding_healthy.pt2").string(), "--inputs", example("rounding_healthy.inputs.pt").string(),
       "--against-eager", "--exported-program", example("rounding_healthy.ep.pt2").string(), "--repeats", "1"},
      "out", warm_inductor());
  CHECK(r.code() == 0);
  CHECK(r.report["verdict"] == "clean");
  CHECK(r.report["culprit"].is_null());
  const auto& cmp = r.report["runs"][0]["comparison"];
  CHECK(cmp["within_tolerance"] == true);
  // Compiled and eager really differ (the test is not vacuous), and by far
  // less than the tolerance allows.
  CHECK(cmp["max_abs_error"].get<double>() > 0);
  CHECK(cmp["max_rel_error"].get<double>() < cmp["rtol"].get<double>() / 10);
  std::string md = read_text("out/report.md");
  CHECK(md.find("within tolerance; max abs error") != std::string::npos);
}

TEST_CASE("outputs off from the reference while every kernel agrees with eager: no culprit is invented") {
  // The reference moved one output value by 1%: the outputs mismatch it, but
  // each kernel's own output is within rounding of eager.
  auto r = run_tool(
      mismatch_args("rounding_healthy", {"--reference", example("rounding_healthy.off_reference.pt").string()}), "out",
      warm_inductor());
  CHECK(r.code() == 3);
  CHECK(r.report["failure"]["kind"] == "mismatch");
  CHECK(r.report["verdict"] == "not_isolated");
  CHECK(r.report["culprit"].is_null());
  CHECK(r.report["verdict_reason"].get<std::string>().find("no call site's output differs from eager") !=
        std::string::npos);
  CHECK(r.report["bisection"]["status"] == "not_found");
  CHECK(r.report["bisection"]["message"].get<std::string>().find("left the tolerance") != std::string::npos);
  CHECK(exported_program_builds(r.report) == 1);
  // The largest honest per-kernel difference seen, well inside the tolerance.
  REQUIRE(r.report["bisection"]["largest_within_tolerance"].is_object());
  double ratio = r.report["bisection"]["largest_within_tolerance"]["ratio_to_allowed"].get<double>();
  CHECK(ratio > 0);
  CHECK(ratio < 0.5);
}

TEST_CASE("a tolerance override that admits the bug: the search finds no divergent kernel") {
  // The per-dtype table is the tool's policy: with float32 loose enough to
  // admit x + 1, the relu output no longer diverges (and neither do the outputs).
  std::ofstream("loose.yaml") << "inductor_configs:\n  cpp.inject_relu_bug_TESTING_ONLY: accuracy\n"
                                 "tolerance:\n  float32: {atol: 10, rtol: 0}\n";
  auto r =
      run_tool({"run", example("relu_accuracy.pt2").string(), "--inputs", example("relu_accuracy.inputs.pt").string(),
                "--reference", example("relu_accuracy.expected.pt").string(), "--config", "loose.yaml", "--no-matrix"},
               "out", warm_inductor());
  CHECK(r.code() == 0);
  CHECK(r.report["verdict"] == "clean");
  CHECK(r.report["runs"][0]["comparison"]["atol"] == 10.0);
}

TEST_CASE("wrong values with --source guide: not isolated, and the reason names the option given") {
  // Guide mode prints kernel inputs; it has no comparison with eager.
  auto r = run_tool(mismatch_args("log1p_accuracy", {"--against-eager", "--source", "guide", "--no-matrix"}), "out",
                    warm_inductor());
  CHECK(r.code() == 3);
  REQUIRE(r.report.is_object());
  CHECK(r.report["failure"]["kind"] == "mismatch");
  CHECK(r.report["verdict"] == "not_isolated");
  CHECK(r.report["verdict_reason"].get<std::string>().find(
            "guide mode (--source guide) prints kernel inputs; comparing kernels with eager needs the probes of one "
            "instrumented build (drop --source guide)") != std::string::npos);
}

TEST_SUITE_END();
