// The flag matrix read as a differential diagnosis (configs/cpu.yaml
// `findings:`), on real packages: the package's own input check, memory
// nothing wrote, and a healthy model about which nothing is said.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::read_text;
using e2e::run_tool;

namespace {

std::vector<std::string> matrix_run_args(const std::string& package, const std::string& inputs,
                                  std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run", example(package + ".pt2").string(), "--inputs", example(inputs).string(),
                                   "--cache-dir", fs::absolute("build-cache").string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::vector<std::string> run_ids(const nlohmann::json& report) {
  std::vector<std::string> ids;
  for (const auto& run : report["runs"]) {
    ids.push_back(run["id"]);
  }
  return ids;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/flags");

TEST_CASE("a transposed input: the package's own check (AOTI_RUNTIME_CHECK_INPUTS=1) agrees, with its line") {
  auto r = run_tool(matrix_run_args("healthy", "healthy.transposed.inputs.pt"), "out");
  CHECK(r.code() == 4);
  CHECK(r.report["verdict"] == "could_not_test");
  CHECK(error_line(r).find("does not fit model 'model': input 0 (args[0], arg8_1): strides [1, 8], the package was "
                           "compiled for strides [16, 1]") != std::string::npos);
  CHECK(error_line(r).find("; the package's own check (AOTI_RUNTIME_CHECK_INPUTS=1) agrees: input_handles[0]: "
                           "unmatched stride value at 0, expected: 16, but got: 1") != std::string::npos);
  CHECK(run_ids(r.report) == std::vector<std::string>{"baseline", "check_inputs.1"});
  REQUIRE(r.report["matrix"]["findings"].size() == 1);
  CHECK(r.report["matrix"]["findings"][0]["variant"] == "check_inputs");
  CHECK(r.report["matrix"]["findings"][0]["contrast"] == "refuses_inputs");
  CHECK(r.report["matrix"]["findings"][0]["sentence"].get<std::string>().find(
            "the package's own input check (AOTI_RUNTIME_CHECK_INPUTS=1) refuses the inputs: input_handles[0]: "
            "unmatched stride value at 0, expected: 16, but got: 1") == 0);
  // Nothing searched: it is the inputs.
  CHECK(r.report["bisection"].is_null());
}

TEST_CASE("uninit_read: the outputs change under MALLOC_PERTURB_, and the finding says a kernel reads memory nothing "
          "wrote") {
  auto r = run_tool(matrix_run_args("uninit_read", "uninit_read.inputs.pt"), "out");
  CHECK(r.code() == 3);
  CHECK(r.report["verdict"] == "not_isolated");
  CHECK(r.report["failure"]["reproducing_variant"] == "perturb");
  CHECK(r.report["failure"]["kind"] == "mismatch");
  // The plain runs agree bit for bit, or the contrast would not be stated.
  auto ids = run_ids(r.report);
  CHECK(ids == std::vector<std::string>{"baseline", "repeat.1", "repeat.2", "repeat.3", "check_inputs.1", "perturb.1"});
  for (const auto& run : r.report["runs"]) {
    CAPTURE(run["id"]);
    CHECK(run["outcome"] == "ok");
  }
  REQUIRE(r.report["matrix"]["findings"].size() == 1);
  const std::string sentence = r.report["matrix"]["findings"][0]["sentence"];
  CHECK(sentence == "the outputs change under MALLOC_PERTURB_ (1 of 1 runs) while 4 runs without it agree exactly: "
                    "a kernel reads memory nothing wrote");
  CHECK(r.report["verdict_reason"].get<std::string>().rfind(sentence, 0) == 0);
  std::string md = read_text("out/report.md");
  CHECK(md.find("## What the flags say") != std::string::npos);
  CHECK(md.find("a kernel reads memory nothing wrote") != std::string::npos);
  CHECK(r.report["reproduce_command"].get<std::string>().rfind("MALLOC_PERTURB_=128 aoti-bisect run", 0) == 0);
}

TEST_CASE("healthy: every CPU variant that runs on a clean baseline agrees, and no finding is stated") {
  auto r = run_tool(matrix_run_args("healthy", "healthy.inputs.pt"), "out");
  CHECK(r.code() == 0);
  CHECK(r.report["verdict"] == "clean");
  CHECK(run_ids(r.report) ==
        std::vector<std::string>{"baseline", "repeat.1", "repeat.2", "repeat.3", "check_inputs.1", "perturb.1"});
  CHECK(r.report["matrix"]["findings"] == nlohmann::json::array());
  CHECK(read_text("out/report.md").find("What the flags say") == std::string::npos);
}

TEST_CASE("--eager-device cpu: eager moved to the CPU (move_to_device_pass); it needs --against-eager") {
  auto r = run_tool(matrix_run_args("relu_accuracy", "relu_accuracy.inputs.pt",
                             {"--no-matrix", "--no-bisect", "--against-eager", "--eager-device", "cpu",
                              "--exported-program", example("relu_accuracy.ep.pt2").string()}),
                    "out");
  // The same reference as eager where the program is: the mismatch is found.
  CHECK(r.code() == 3);
  CHECK(r.report["failure"]["kind"] == "mismatch");
  CHECK(r.report["reference"].get<std::string>().find("(eager, from the exported program, on the cpu)") !=
        std::string::npos);
  auto alone = run_tool(matrix_run_args("healthy", "healthy.inputs.pt", {"--eager-device", "cpu"}), "out-alone");
  CHECK(alone.code() == 2);
  CHECK(error_line(alone).find("--eager-device requires --against-eager") != std::string::npos);
}


TEST_CASE("atomic_scatter_nondeterministic: outputs that differ every run are a failure, named to the kernel whose "
          "outputs first differ from the same inputs") {
  auto meta = e2e::meta_of("atomic_scatter_nondeterministic");
  auto r = run_tool(matrix_run_args("atomic_scatter_nondeterministic", "atomic_scatter_nondeterministic.inputs.pt"),
                    "out");
  INFO(r.err);
  CHECK(r.code() == 1);
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["failure"]["kind"] == "nondeterministic");
  const std::string first = r.report["failure"]["first_line"];
  CHECK(first.rfind("outputs differ between runs with the same inputs and flags: ", 0) == 0);
  CHECK(first.find(" elements differ, the largest difference ") != std::string::npos);
  // The diverging kernel: the fused index_add (atomic adds in a parallel loop).
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);  // meta: 0-based
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  CHECK(r.report["culprit"]["why"].get<std::string>().rfind(
            "from inputs identical in two runs (checksums), it wrote other values: ", 0) == 0);
  CHECK(r.report["bisection"]["predicate"] == "divergence");
  // One thread makes it stable: read as a finding.
  bool stable = false;
  for (const auto& f : r.report["matrix"]["findings"]) {
    if (f["contrast"] == "stable_with") {
      stable = true;
      CHECK(f["variant"] == "one_thread");
      CHECK(f["sentence"].get<std::string>().rfind("outputs differ between runs only with several threads (", 0) == 0);
      CHECK(f["sentence"].get<std::string>().ends_with(
          "runs with OMP_NUM_THREADS=1 agree): parallel accumulation order (atomic adds, per-thread partial sums) "
          "or a race"));
    }
  }
  CHECK(stable);

  SUBCASE("differences within a tolerance the user gives are accepted, and said") {
    auto t = run_tool(matrix_run_args("atomic_scatter_nondeterministic", "atomic_scatter_nondeterministic.inputs.pt",
                                      {"--atol", "1", "--rtol", "0"}),
                      "tol");
    CHECK(t.code() == 0);
    CHECK(t.report["verdict"] == "clean");
    bool said = false;
    for (const auto& n : t.report["notes"]) {
      said = said || n.get<std::string>().find("outputs differ between runs with the same inputs and flags") == 0;
    }
    CHECK(said);
  }
}

TEST_CASE("a steady failure and one thread: run once, and said where the failure does not need several threads") {
  auto r = run_tool(matrix_run_args("nan_midway", "nan_midway.inputs.pt", {"--no-bisect"}), "out");
  CHECK(r.code() == 3);
  auto ids = run_ids(r.report);
  CHECK(std::count(ids.begin(), ids.end(), "one_thread.1") == 1);
  CHECK(std::count(ids.begin(), ids.end(), "one_thread.2") == 0);
  for (const auto& f : r.report["matrix"]["findings"]) {
    CHECK(f["variant"] != "one_thread");  // the log of a negative number needs no threads
  }
}

TEST_SUITE_END();
