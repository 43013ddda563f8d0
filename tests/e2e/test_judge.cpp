// End-to-end: whose bug the culprit is (report.json culprit.judgement) and
// the smallest program that shows it (repro/upstream/repro.py), on the
// packages of examples/judge_examples.py and the verify pairs: a model's own
// NaN, NaN from a parameter, float16 numerics where the package is the closer
// one, a real compiler bug (pytorch/pytorch#175154), a frozen convolution
// with its batch norm folded in, and a model that updates its input in place
// (pytorch/pytorch#198270).

#include <filesystem>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;
using e2e::warm_inductor;
using Json = nlohmann::json;

namespace {

std::vector<std::string> judge_args(const std::string& name, std::vector<std::string> more = {}) {
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
                                   "--no-matrix"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

const Json& judgement_of(const e2e::Result& r) {
  REQUIRE(r.report.is_object());
  REQUIRE(r.report["culprit"].is_object());
  REQUIRE(r.report["culprit"]["judgement"].is_object());
  return r.report["culprit"]["judgement"];
}

// repro/upstream copied to a folder of its own and run from another one:
// its exit code (1: the symptom shows).
int run_copied_script(const fs::path& upstream, const std::string& where) {
  fs::path copy = fs::absolute(where);
  fs::remove_all(copy);
  fs::create_directories(copy.parent_path());
  fs::copy(upstream, copy, fs::copy_options::recursive);
  fs::create_directories("elsewhere");
  aoti_bisect::SpawnSpec spec;
  const char* chosen = std::getenv("AOTI_BISECT_PYTHON");
  spec.argv = {"/usr/bin/env", chosen != nullptr && *chosen != '\0' ? chosen : "python3", (copy / "repro.py").string()};
  spec.env = aoti_bisect::current_environment();
  spec.cwd = fs::absolute("elsewhere");
  spec.timeout_s = 300;
  aoti_bisect::ExitStatus st = aoti_bisect::run_process(spec);
  INFO(st.stdout_tail << st.stderr_tail);
  return st.how == aoti_bisect::ExitStatus::How::exited ? st.exit_code : -1;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/judge");

TEST_CASE("a model's own NaN: eager makes it at the culprit's softmax; the upstream script shows it from anywhere") {
  auto r = run_tool(judge_args("attn_padding_nan"), "out", warm_inductor());
  CHECK(r.code() == 1);
  const Json& j = judgement_of(r);
  CHECK(j["kind"] == "model");
  CHECK(j["eager_node"]["name"] == "softmax");
  CHECK(j["eager_node_in_culprit"] == true);
  CHECK(j["eager_node"]["source"].get<std::string>().find("verify_examples.py:") == 0);
  CHECK(j["culprit_nodes"].size() == 5);
  CHECK(j["sentence"].get<std::string>().find("model: eager makes the same NaN at graph node `softmax`") == 0);
  CHECK(r.out.find("  whose bug:   model: eager makes the same NaN") != std::string::npos);
  CHECK(e2e::read_text("out/report.md").find("**Whose bug:** model: eager makes the same NaN") != std::string::npos);
  const Json& up = r.report["repro"]["upstream"];
  REQUIRE(up.is_object());
  CHECK(up["reproduced"] == true);
  CHECK(up["nodes"] == 5);
  CHECK(up["graph_nodes"].get<int>() > up["nodes"].get<int>());
  CHECK(up["tries"] == 1);
  CHECK(up["compile_seconds"].get<double>() > 0);
  CHECK(up["issue"].is_null());  // ISSUE.md only for a compiler judgement
  CHECK(fs::exists("out/repro/upstream/inputs.pt"));
  CHECK(run_copied_script("out/repro/upstream", "copied/model") == 1);
}

TEST_CASE("NaN a parameter holds is the data's, named by its module path") {
  auto r = run_tool(judge_args("param_nan_linear"), "out", warm_inductor());
  CHECK(r.code() == 1);
  const Json& j = judgement_of(r);
  CHECK(j["kind"] == "data");
  CHECK(j["holder"] == "fc1.weight");
  CHECK(j["sentence"] == "data: parameter or constant `fc1.weight` holds 1 NaN and 0 Inf before any graph node runs; "
                         "eager carries them on too");
}

TEST_CASE("float16 numerics: eager overflows, the package is the one close to float64") {
  auto r = run_tool(judge_args("fp16_sumsq_overflow", {"--against-eager"}), "out", warm_inductor());
  CHECK(r.code() == 1);
  const Json& j = judgement_of(r);
  CHECK(j["kind"] == "numerics");
  REQUIRE(j["outputs"].size() == 1);
  const Json& o = j["outputs"][0];
  CHECK(o["dtype"] == "float16");
  CHECK(o["multiplier"] == 3.0);
  // Measured on 2.13: eager 0.19 from float64, the package 1e-4.
  CHECK(o["eager_rmse"].get<double>() > 0.05);
  CHECK(o["package_rmse"].get<double>() < 0.01);
  CHECK(j["fp64"]["widened_inputs"] == 1);
  CHECK(j["fp64"]["widened_parameters"] == 2);
  CHECK(j["sentence"].get<std::string>().find("numerics: the package is no further from float64 than eager") == 0);
}

TEST_CASE("a real compiler bug (nearest upsample, pytorch#175154): compiler, wrong on its own, ISSUE.md") {
  auto r = run_tool(judge_args("nearest_2x_upsample", {"--against-eager"}), "out", warm_inductor());
  CHECK(r.code() == 1);
  CHECK(r.report["culprit"]["kernel"].get<std::string>().find("unsafe_index") != std::string::npos);
  const Json& j = judgement_of(r);
  CHECK(j["kind"] == "compiler");
  const Json& o = j["outputs"][0];
  CHECK(o["eager_rmse"].get<double>() < 1e-6);
  CHECK(o["package_rmse"].get<double>() > 0.05);
  CHECK(o["package_beyond_tolerance"].get<int>() > 1000);
  CHECK(j["alone"]["verdict"] == "wrong_on_its_own");
  const Json& up = r.report["repro"]["upstream"];
  CHECK(up["reproduced"] == true);
  CHECK(up["nodes"] == 3);
  CHECK(up["graph_nodes"] == 4);
  REQUIRE(up["issue"].is_string());
  std::string issue = e2e::read_text("out/repro/upstream/ISSUE.md");
  CHECK(issue.find("torch 2.") != std::string::npos);
  CHECK(issue.find("upsample_nearest2d") != std::string::npos);
  CHECK(issue.find("```python") != std::string::npos);
  CHECK(issue.find(fs::current_path().string()) == std::string::npos);
  CHECK(issue.find("/root/") == std::string::npos);
  CHECK(issue.find(".cache") == std::string::npos);
  CHECK(e2e::read_text("out/repro/upstream/repro.py").find(fs::current_path().string()) == std::string::npos);
  CHECK(run_copied_script("out/repro/upstream", "copied/compiler") == 1);
}

TEST_CASE("freezing: the folded convolution holds the batch norm's value; the culprit is the upsample after it") {
  auto r = run_tool(judge_args("frozen_conv_bn_upsample", {"--against-eager"}), "out", warm_inductor());
  CHECK(r.code() == 1);
  // Compared with conv2d alone, the folded convolution's buffer was 9% off
  // (the batch norm itself) and was named.
  CHECK(r.report["culprit"]["kernel"].get<std::string>().find("unsafe_index") != std::string::npos);
  CHECK(judgement_of(r)["kind"] == "compiler");

  auto nan = run_tool(judge_args("frozen_conv_bn_nan"), "out-nan", warm_inductor());
  CHECK(nan.code() == 1);
  CHECK(nan.report["culprit"]["kernel"] == "aoti_torch_cpu_mkldnn__convolution_pointwise");
  const Json& j = judgement_of(nan);
  CHECK(j["kind"] == "model");
  CHECK(j["eager_node"]["name"] == "batch_norm");
  CHECK(j["eager_node_in_culprit"] == true);  // freezing folded it into the convolution
}

TEST_CASE("a model that updates its input in place (pytorch#198270): the exported program isolates it, compiler") {
  auto r = run_tool(judge_args("mutated_input_flip", {"--against-eager"}), "out", warm_inductor());
  CHECK(r.code() == 1);
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["culprit"]["kernel"] == e2e::meta_of("mutated_input_flip")["culprit"]["kernel"]);
  const Json& j = judgement_of(r);
  CHECK(j["kind"] == "compiler");
  // The kernel computes the whole graph, index_put_ (the input's update) included.
  bool index_put = false;
  for (const auto& n : j["culprit_nodes"]) {
    index_put = index_put || n == "index_put_";
  }
  CHECK(index_put);
  CHECK(j["alone"]["verdict"] == "wrong_on_its_own");
}

TEST_CASE("without the exported program, or with --no-judge: what the judgement needs, or nothing") {
  auto alone = run_tool({"run", example("param_nan_linear.pt2").string(), "--inputs",
                         example("param_nan_linear.inputs.pt").string(), "--no-matrix"},
                        "out", warm_inductor());
  CHECK(alone.code() == 1);
  const Json& j = judgement_of(alone);
  CHECK(j["kind"].is_null());
  CHECK(j["sentence"].get<std::string>().find("not judged: give --exported-program EP.pt2 to tell a model bug from "
                                              "a compiler bug") == 0);
  CHECK(alone.report["repro"]["upstream"].is_null());
  CHECK(alone.out.find("  whose bug:   not judged: give --exported-program") != std::string::npos);

  auto off = run_tool(judge_args("param_nan_linear", {"--no-judge"}), "out-off", warm_inductor());
  CHECK(off.code() == 1);
  CHECK(off.report["culprit"]["judgement"].is_null());
  CHECK_FALSE(fs::exists("out-off/repro/upstream"));
}

TEST_SUITE_END();
