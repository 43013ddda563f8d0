// Evidence that closes the bug, and never a wrong site (issues 11 and 14),
// on example models shaped like the failures seen on real architectures:
// a batch norm with a negative running variance, a float16 attention whose
// extern bmm overflows on views, a convolution that creates its Inf output,
// a parameter holding Inf, a wild embedding index, and a fault inside a
// torch.cond branch. The package alone, as a user runs it.

#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;

namespace {

e2e::Result run_example(const std::string& name) {
  return run_tool({"run", example(name + ".pt2").string(), "--inputs", example(name + ".inputs.pt").string(),
                   "--repeats", "1", "--cache-dir", fs::absolute("build-cache").string()},
                  "out-ev-" + name);
}

// The culprit's tensor named `tensor` (or whose base is), null when absent.
nlohmann::json arg_named(const nlohmann::json& culprit, const std::string& tensor) {
  for (const auto& a : culprit["args"]) {
    std::string t = a["tensor"].get<std::string>();
    if (t == tensor || t == "view of " + tensor) {
      return a;
    }
  }
  return nullptr;
}

void check_isolated_at_recorded_site(const e2e::Result& r, const std::string& name) {
  auto meta = meta_of(name);
  CHECK(r.code() == 1);
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] == "isolated");
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
}

}  // namespace

TEST_SUITE_BEGIN("e2e/evidence");

TEST_CASE("evidence: a negative running variance is named by its module path, with the root cause first") {
  auto r = run_example("bn_negative_var");
  check_isolated_at_recorded_site(r, "bn_negative_var");
  const auto& c = r.report["culprit"];
  auto var = arg_named(c, "bn_running_var");
  REQUIRE(var.is_object());
  CHECK(var["fqn"] == "bn.running_var");
  CHECK(var["origin"] == "buffer bn.running_var");
  CHECK(var["before"]["min"].get<double>() == doctest::Approx(-3.0));
  // The cause is what the kernel's replay measured, not the constant's name:
  // the square root of -3 + eps in channel 3, the negative variance's.
  const auto& cause = c["root_cause"];
  CHECK(cause["basis"] == "intermediate");
  // torch 2.13's kernel takes the square root and divides; 2.14's takes rsqrt.
  const auto& step = cause["intermediate"];
  const std::string expression = step["expression"].get<std::string>();
  if (expression.find(".rsqrt()") != std::string::npos) {
    CHECK(cause["operation"] == "reciprocal square root of a negative value");
  } else {
    CHECK(expression.find(".sqrt()") != std::string::npos);
    CHECK(cause["operation"] == "square root of a negative value");
  }
  REQUIRE(step["operands"].size() == 1);
  CHECK(std::stod(step["operands"][0]["value"].get<std::string>()) == doctest::Approx(-3.0 + 1e-5).epsilon(1e-5));
  CHECK(step["element"]["x1"] == 3);
  // The convolution's output the kernel reads (created by the extern call) counts as written.
  std::string md = read_text(fs::path("out-ev-bn_negative_var") / "report.md");
  size_t culprit_at = md.find("## Culprit");
  REQUIRE(culprit_at != std::string::npos);
  CHECK(md.find("**Root cause:** \\`tmp", culprit_at) == culprit_at + 12);
  CHECK(md.find("`bn_running_var` (buffer bn.running_var)") != std::string::npos);
  CHECK(r.report["bisection"]["self_check"].get<std::string>().rfind("passed", 0) == 0);
}

TEST_CASE("evidence: the inputs of an extern bmm on reinterpreted views are in the evidence and saved") {
  auto r = run_example("attn_fp16_overflow");
  check_isolated_at_recorded_site(r, "attn_fp16_overflow");
  const auto& c = r.report["culprit"];
  int views = 0;
  for (const auto& a : c["args"]) {
    std::string t = a["tensor"].get<std::string>();
    if (t.rfind("view of ", 0) == 0) {
      ++views;
      CHECK(a["initialized"] == true);
      REQUIRE(a["before"].is_object());
      CHECK(a["before"]["dtype"] == "float16");
      CHECK(a["before"]["nan_count"] == 0);
      CHECK(a["before"]["inf_count"] == 0);
    }
  }
  CHECK(views == 2);  // q and k
  REQUIRE(r.report["repro"].is_object());
  int saved_views = 0;
  for (const auto& f : r.report["repro"]["files"]) {
    saved_views += f.get<std::string>().find("view_of_") != std::string::npos;
  }
  CHECK(saved_views == 2);
  // Inf (no NaN) out of finite inputs: an overflow of float16, its op from the wrapper's comment.
  CHECK(c["root_cause"]["op"] == "aten.bmm");
  CHECK(c["root_cause"]["sentence"].get<std::string>().rfind("aten.bmm overflowed float16: it wrote ", 0) == 0);
  CHECK(c["root_cause"]["sentence"].get<std::string>().ends_with("the largest finite float16 is 65504"));
}

TEST_CASE("evidence: a convolution that creates its Inf output is the culprit, not the kernel after it") {
  auto r = run_example("conv_inf");
  check_isolated_at_recorded_site(r, "conv_inf");
  auto meta = meta_of("conv_inf");
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["culprit"]["kind"] == "extern");
  // Its output is the buffer the call creates (`&buf6_handle`), named as the wrapper names it.
  CHECK(r.report["culprit"]["why"].get<std::string>().find("Inf in buf") != std::string::npos);
  // Inf out of finite inputs, measured: an overflow of its dtype, said with its inputs' ranges.
  const auto& cause = r.report["culprit"]["root_cause"];
  CHECK(cause["basis"] == "extern_inputs");
  CHECK(cause["operation"] == "overflow");
  CHECK(cause["sentence"].get<std::string>().find(" overflowed float32: it wrote ") != std::string::npos);
  CHECK(cause["sentence"].get<std::string>().find(" from finite inputs (") != std::string::npos);
}

TEST_CASE("evidence: a parameter holding Inf is named where it enters the run") {
  auto r = run_example("inf_parameter");
  check_isolated_at_recorded_site(r, "inf_parameter");
  const auto& c = r.report["culprit"];
  auto w = arg_named(c, "norm_weight");
  REQUIRE(w.is_object());
  CHECK(w["fqn"] == "norm.weight");
  CHECK(w["before"]["inf_count"] == 1);
  REQUIRE(c["producer"].is_object());
  CHECK(c["producer"]["tensor"] == "norm_weight");
  CHECK(c["producer"]["why"].get<std::string>().rfind("parameter norm.weight (norm_weight)", 0) == 0);
  // The measured fact about the parameter comes first; the kernel's replay names the operation that made NaN of it.
  CHECK(c["root_cause"]["sentence"].get<std::string>().rfind(
            "reads parameter norm.weight, which holds 1 Inf before the launch (a constant of the package)", 0) == 0);
}

TEST_CASE("evidence: a wild embedding index is compared with the table it indexes, with its producer") {
  auto r = run_example("wild_gather");
  check_isolated_at_recorded_site(r, "wild_gather");
  const auto& c = r.report["culprit"];
  REQUIRE(c["producer"].is_object());
  CHECK(c["producer"]["call_index"].is_null());  // a graph input
  CHECK(c["producer"]["why"].get<std::string>().find("holds 1099511627776, outside the 50 rows of emb_weight") !=
        std::string::npos);
  CHECK(c["root_cause"]["sentence"].get<std::string>().rfind(
            "index 1099511627776 ≥ 50 rows of parameter emb.weight, from graph input 1 (arg", 0) == 0);
  CHECK(c["root_cause"]["basis"] == "index");
}

TEST_CASE("never a wrong site: a fault inside a torch.cond branch is isolated at the branch's kernel") {
  // Interposition sees the branch's kernels: isolated at the kernel that ran, in the branch that ran.
  auto r = run_example("cond_fault");
  auto meta = meta_of("cond_fault");
  CHECK(r.code() == 1);
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] == "isolated");
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  CHECK(r.report["culprit"]["branch"] == "true_graph_0");
  int in_branch = 0;
  for (const auto& s : r.report["bisection"]["sites"]) {
    in_branch += s.value("branch", "") == "true_graph_0";
    CHECK(s.value("branch", "") != "false_graph_0");  // the branch that did not run
  }
  CHECK(in_branch >= 1);
  CHECK(r.report["culprit"]["root_cause"]["sentence"].get<std::string>().rfind(
            "index 1099511627776 ≥ 50 rows of parameter emb.weight, from graph input 1 (arg", 0) == 0);
}
