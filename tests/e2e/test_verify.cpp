// End-to-end: `aoti-bisect verify FIXED.pt2 --baseline OUT/report.json` on
// the example pairs of examples/verify_examples.py (a failing build of a
// model and candidate fixes): the neighbours it makes, the statuses, the
// named call sites and the exit code.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;
using Json = nlohmann::json;

namespace {

std::string path_arg(const fs::path& p) {
  return p.string();
}

Json summary_at(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), path.string() << " is missing");
  return Json::parse(in);
}

const Json& case_named(const Json& summary, const std::string& name) {
  for (const auto& c : summary["cases"]) {
    if (c["name"] == name) {
      return c;
    }
  }
  FAIL("no case " << name << " in " << summary["cases"].dump());
  static Json none;
  return none;
}

// The failing example run as a user runs it: its report.json is the baseline.
fs::path failing_run(const fs::path& dir, const std::string& name) {
  auto r = run_tool({"run", path_arg(example(name + ".pt2")), "--inputs", path_arg(example(name + ".inputs.pt"))},
                    path_arg(dir / name));
  REQUIRE_MESSAGE(r.code() == 1, r.err);
  return dir / name / "report.json";
}

e2e::Result verify(const std::string& fixed, const fs::path& baseline, const fs::path& out) {
  return run_tool(
      {"verify", path_arg(example(fixed + ".pt2")), "--baseline", path_arg(baseline), "--out", path_arg(out)}, "");
}

}  // namespace

TEST_CASE("verify: a mask and dropped samples are not clean, from the failing run's report alone") {
  const fs::path dir = fs::absolute("verify-zero-row");
  fs::remove_all(dir);
  const fs::path baseline = failing_run(dir, "zero_row_norm");

  auto masked = verify("zero_row_masked", baseline, dir / "masked");
  CHECK_MESSAGE(masked.code() == 1, masked.err);
  Json sum = summary_at(dir / "masked" / "summary.json");
  const Json& original = case_named(sum, "original");
  CHECK(original["status"] == "masked");
  CHECK(original["input_shapes"] == Json::parse("[[8, 16]]"));
  const std::string why = original["why"];
  CHECK_MESSAGE(why.find("call site 1 cpp_fused_div_linalg_vector_norm_0 makes 16 NaN") != std::string::npos, why);
  CHECK_MESSAGE(why.find("which call site 3 cpp_fused_nan_to_num_1 cleans") != std::string::npos, why);
  CHECK(original["before"]["failure_kind"] == "nonfinite");
  CHECK(case_named(sum, "batch-double")["status"] == "masked");
  CHECK(masked.out.find("masked          original") != std::string::npos);

  auto dropped = verify("zero_row_dropped", baseline, dir / "dropped");
  CHECK_MESSAGE(dropped.code() == 1, dropped.err);
  sum = summary_at(dir / "dropped" / "summary.json");
  CHECK(case_named(sum, "original")["status"] == "count_changed");
  CHECK(case_named(sum, "original")["why"] == "output 0: 8 rows before, 7 now: samples were dropped");
  CHECK(case_named(sum, "batch-minus-1")["why"] == "output 0: 7 rows before, 6 now: samples were dropped");
  // One testcase per case in junit.xml, the failing ones failed.
  const std::string junit = e2e::read_text(dir / "dropped" / "junit.xml");
  CHECK(junit.find("tests=\"" + std::to_string(sum["cases"].size()) + "\"") != std::string::npos);
  CHECK(junit.find("<failure type=\"count_changed\"") != std::string::npos);
}

TEST_CASE("verify: the batch of one and the compiled range of the batch, a fix that misses it and one that holds") {
  const fs::path dir = fs::absolute("verify-batch-std");
  fs::remove_all(dir);
  const fs::path baseline = failing_run(dir, "batch_std_nan");
  const Json report = summary_at(baseline);

  auto eps = verify("batch_std_eps", baseline, dir / "eps");
  CHECK_MESSAGE(eps.code() == 1, eps.err);
  Json sum = summary_at(dir / "eps" / "summary.json");
  CHECK(case_named(sum, "original")["status"] == "clean");
  const Json& one = case_named(sum, "batch-1");
  CHECK(one["status"] == "reproduces");
  CHECK(one["input_shapes"] == Json::parse("[[1, 16]]"));
  CHECK(one["culprit"]["call_index"] == 1);
  CHECK(one["failure_kind"] == "nonfinite");
  CHECK(one["why"].get<std::string>().find(", as before the fix") != std::string::npos);
  // The neighbours of a batch of 8 compiled for 2..64.
  CHECK(case_named(sum, "batch-minus-1")["input_shapes"] == Json::parse("[[7, 16]]"));
  CHECK(case_named(sum, "batch-double")["input_shapes"] == Json::parse("[[16, 16]]"));
  CHECK(case_named(sum, "batch-min")["input_shapes"] == Json::parse("[[2, 16]]"));
  CHECK(case_named(sum, "batch-max")["input_shapes"] == Json::parse("[[64, 16]]"));
  // summary.md opens with the first case that fails, and why.
  const std::string md = e2e::read_text(dir / "eps" / "summary.md");
  const std::string opening = md.substr(0, md.find("- **Cases:**"));
  CHECK_MESSAGE(opening.find("NaN at call site 1 cpp_fused_add_div_mean_std_sub_0, as before the fix") !=
                    std::string::npos,
                md);

  auto fixed = verify("batch_std_fixed", baseline, dir / "fixed");
  CHECK_MESSAGE(fixed.code() == 0, fixed.out << fixed.err);
  sum = summary_at(dir / "fixed" / "summary.json");
  for (const auto& c : sum["cases"]) {
    CHECK_MESSAGE(c["status"] == "clean", c.dump());
  }
  CHECK(case_named(sum, "batch-1")["note"].get<std::string>().find("below the package's compiled minimum 2") !=
        std::string::npos);
  CHECK(sum["cases"].size() >= 6);
}

TEST_CASE("verify: a long sequence and the boundary indices, cut with the tensors that share the length") {
  const fs::path dir = fs::absolute("verify-token");
  fs::remove_all(dir);
  const fs::path baseline = failing_run(dir, "token_id_range");

  auto clamped = verify("token_id_clamped", baseline, dir / "clamped");
  CHECK_MESSAGE(clamped.code() == 1, clamped.err);
  Json sum = summary_at(dir / "clamped" / "summary.json");
  CHECK(case_named(sum, "original")["status"] == "clean");
  const Json& longest = case_named(sum, "input0-dim1-max");
  CHECK((longest["status"] == "reproduces" || longest["status"] == "new_failure"));
  CHECK(longest["failure_kind"] == "device_assert");
  CHECK(longest["input_shapes"] == Json::parse("[[2, 64]]"));
  CHECK(longest["culprit"]["call_index"] == 1);
  CHECK(longest["why"].get<std::string>().find("< 32") != std::string::npos);
  CHECK(case_named(sum, "input0-dim1-min")["input_shapes"] == Json::parse("[[2, 2]]"));
  // The package's own index check names the bound: 0 and 49 both run clean.
  CHECK(case_named(sum, "input0-index-0")["status"] == "clean");
  CHECK(case_named(sum, "input0-index-49")["status"] == "clean");
  CHECK(case_named(sum, "input0-index-49")["input_shapes"] == Json::parse("[[2, 16]]"));
}

TEST_CASE("verify: bad input gets one line, a documented exit code, and nothing half-written") {
  const fs::path dir = fs::absolute("verify-bad");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "other.json") << "{\"cases\": 1}";
  auto r = verify("batch_std_fixed", dir / "other.json", dir / "x");
  CHECK(r.code() == 2);
  CHECK_MESSAGE(e2e::error_line(r).find("is not a run's report.json") != std::string::npos, r.err);
  CHECK_FALSE(fs::exists(dir / "x"));

  r = run_tool({"verify", path_arg(example("batch_std_fixed.pt2")), "--out", path_arg(dir / "y")}, "");
  CHECK(r.code() == 2);
  CHECK(e2e::error_line(r).find("verify needs the failing inputs") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "y"));

  // A fixed package whose inputs do not fit the failing run's: exit 4, the
  // summary says why, no neighbour is run.
  r = run_tool({"verify", path_arg(example("batch_std_fixed.pt2")), "--inputs",
                path_arg(example("token_id_range.inputs.pt")),
                "--out", path_arg(dir / "z")},
               "");
  CHECK_MESSAGE(r.code() == 4, r.out << r.err);
  Json sum = summary_at(dir / "z" / "summary.json");
  CHECK(sum["cases"].size() == 1);
  CHECK(sum["cases"][0]["status"] == "could_not_test");
  CHECK(e2e::error_line(r).find("do not fit") != std::string::npos);
}

TEST_CASE("verify: the reference of the failing run, cut with the batch for each neighbour") {
  const fs::path dir = fs::absolute("verify-reference");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // zero_row_masked's eager outputs with row 5 moved by 1: the samples with
  // sample 5 among them are out of tolerance, the others within.
  e2e::shifted_reference(example("zero_row_masked.expected.pt"), dir / "row5.pt", 4);
  auto bad = run_tool({"run", path_arg(example("zero_row_masked.pt2")), "--inputs",
                       path_arg(example("zero_row_masked.inputs.pt")), "--reference", path_arg(dir / "row5.pt")},
                      path_arg(dir / "bad"));
  REQUIRE_MESSAGE(bad.code() == 3, bad.err);  // a mismatch, not isolated without the exported program

  auto r = verify("zero_row_masked", dir / "bad" / "report.json", dir / "v");
  CHECK_MESSAGE(r.code() == 1, r.err);
  Json sum = summary_at(dir / "v" / "summary.json");
  CHECK(case_named(sum, "original")["status"] == "reproduces");
  CHECK(case_named(sum, "original")["failure_kind"] == "mismatch");
  // The last sample alone and the first two hold no sample 5: within
  // tolerance of their rows of the reference.
  CHECK(case_named(sum, "batch-1")["status"] == "clean");
  CHECK(case_named(sum, "batch-min")["status"] == "clean");
  CHECK(case_named(sum, "batch-minus-1")["status"] == "reproduces");
  CHECK(case_named(sum, "batch-double")["why"].get<std::string>().find("wrong values (8 of 64 output values") == 0);
  CHECK(fs::exists(dir / "v" / "cases" / "batch-1" / "reference.pt"));
}

TEST_CASE("run --check-masked: a clean run whose NaN a later call site cleans says so, and stays clean") {
  auto r = run_tool({"run", path_arg(example("zero_row_masked.pt2")), "--inputs",
                     path_arg(example("zero_row_masked.inputs.pt")), "--check-masked", "--no-matrix"},
                    "check-masked");
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 0);
  CHECK(r.report["verdict"] == "clean");
  REQUIRE(r.report["masked"].is_array());
  REQUIRE(r.report["masked"].size() == 1);
  CHECK(r.report["masked"][0]["call_index"] == 1);
  CHECK(r.report["masked"][0]["kernel"] == "cpp_fused_div_linalg_vector_norm_0");
  CHECK(r.report["masked"][0]["nan_count"] == 16);
  CHECK(r.report["masked"][0]["last_read_by"] == 3);
  CHECK(r.report["run_counts"]["masks"] == 1);
  CHECK(r.out.find("masked:") != std::string::npos);
  CHECK(e2e::read_text("check-masked/report.md")
            .find("**Masked:** call site 1 cpp_fused_div_linalg_vector_norm_0 makes 16 NaN in buf1, which call site 3 "
                  "cpp_fused_nan_to_num_1 cleans") != std::string::npos);
  // Without the flag: nothing looked for.
  auto plain = run_tool({"run", path_arg(example("zero_row_masked.pt2")), "--inputs",
                         path_arg(example("zero_row_masked.inputs.pt")), "--no-matrix"},
                        "no-check");
  REQUIRE(plain.report.is_object());
  CHECK(plain.report["masked"].is_null());
}

TEST_CASE("verify: sequences and their mask cut together; a softmax's NaN hidden by nan_to_num is a mask") {
  const fs::path dir = fs::absolute("verify-attention");
  fs::remove_all(dir);
  const fs::path baseline = failing_run(dir, "attn_padding_nan");
  // The mask's batch and length are the sequences' (the wrapper aliases
  // them): the batch shrinks to the fully padded sequence.
  const Json report = summary_at(baseline);
  CHECK(report["inputs"]["minimal"]["samples"] == Json::parse("[4]"));

  auto r = verify("attn_padding_masked", baseline, dir / "masked");
  CHECK_MESSAGE(r.code() == 1, r.err);
  Json sum = summary_at(dir / "masked" / "summary.json");
  const Json& original = case_named(sum, "original");
  CHECK(original["status"] == "masked");
  const std::string why = original["why"];
  CHECK_MESSAGE(why.find("softmax") != std::string::npos, why);
  CHECK_MESSAGE(why.find("cpp_fused_nan_to_num") != std::string::npos, why);
  CHECK(case_named(sum, "batch-minus-1")["input_shapes"] == Json::parse("[[5, 12, 16], [5, 12]]"));
  CHECK(case_named(sum, "input0-dim1-max")["input_shapes"] == Json::parse("[[6, 48, 16], [6, 48]]"));
  CHECK(case_named(sum, "input0-dim1-min")["input_shapes"] == Json::parse("[[6, 2, 16], [6, 2]]"));
  // The last sample alone holds no padded sequence: nothing to mask there.
  CHECK(case_named(sum, "batch-1")["status"] == "clean");
}

TEST_CASE("verify: inputs in another layout run as the failing run ran them (--contiguous-inputs)") {
  const fs::path dir = fs::absolute("verify-layout");
  fs::remove_all(dir);
  fs::create_directories(dir);
  e2e::python(
      "import sys, torch\n"
      "(x,) = torch.load(sys.argv[1], weights_only=True)\n"
      "torch.save((x.t().contiguous().t(),), sys.argv[2])\n",
      {example("batch_std_nan.inputs.pt").string(), (dir / "columns.pt").string()});
  auto bad = run_tool({"run", path_arg(example("batch_std_nan.pt2")), "--inputs", path_arg(dir / "columns.pt"),
                       "--contiguous-inputs", "--no-matrix"},
                      path_arg(dir / "bad"));
  REQUIRE_MESSAGE(bad.code() == 1, bad.err);
  // The failing run's --contiguous-inputs goes on to every case.
  auto r = verify("batch_std_eps", dir / "bad" / "report.json", dir / "v");
  CHECK_MESSAGE(r.code() == 1, r.err);
  Json sum = summary_at(dir / "v" / "summary.json");
  CHECK(case_named(sum, "original")["status"] == "clean");
  CHECK(case_named(sum, "batch-1")["status"] == "reproduces");
  // Given as --inputs without the flag: refused, one line naming it.
  r = run_tool({"verify", path_arg(example("batch_std_eps.pt2")), "--inputs", path_arg(dir / "columns.pt"), "--out",
                path_arg(dir / "w")},
               "");
  CHECK(r.code() == 4);
  CHECK(e2e::error_line(r).find("--contiguous-inputs") != std::string::npos);
}
