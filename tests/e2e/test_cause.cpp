// What the report says around the kernel is evidence (issue 50), on real
// packages of examples/evidence_examples.py, each asserted against what the
// example's builder measured (NAME.json "truth"), never against a kernel's
// name:
//   - the operation inside a fused cpp kernel, from its replay with every
//     intermediate checked (lib/repro/intermediates.hpp): the expression,
//     the element, the operands' values;
//   - the culprit under in-place buffer reuse (a oneDNN binary post-op
//     convolution) and under an aliased view (an in-place concatenation);
//   - a NaN constant behind wrong but finite values, from the package alone;
//   - inputs outside the compiled range, run as the package runs them;
//   - the one call site of a package, named as the only candidate.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;

namespace {

e2e::Result run_cause_example(const std::string& name, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run",
                                   example(name + ".pt2").string(),
                                   "--inputs",
                                   example(name + ".inputs.pt").string(),
                                   "--no-matrix",
                                   "--cache-dir",
                                   fs::absolute("build-cache").string()};
  args.insert(args.end(), more.begin(), more.end());
  return run_tool(args, "out-cause-" + name);
}

const nlohmann::json& cause_truth(const std::string& name) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    it = cache.emplace(name, meta_of(name)["truth"]).first;
  }
  return it->second;
}

bool cause_among(const nlohmann::json& list, int64_t value) {
  return std::any_of(list.begin(), list.end(), [&](const nlohmann::json& v) { return v.get<int64_t>() == value; });
}

// The culprit's root cause, for an isolated run.
const nlohmann::json& root_cause_of(const e2e::Result& r) {
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  REQUIRE(r.report["verdict"] == "isolated");
  REQUIRE(r.report["culprit"].is_object());
  REQUIRE(r.report["culprit"]["root_cause"].is_object());
  return r.report["culprit"]["root_cause"];
}

// The intermediate the replay named: what it made, and the output row it is stored in.
const nlohmann::json& intermediate_named(const e2e::Result& r, const std::string& name) {
  const nlohmann::json& c = root_cause_of(r);
  CHECK(c["basis"] == "intermediate");
  REQUIRE(c["intermediate"].is_object());
  const nlohmann::json& i = c["intermediate"];
  if (cause_truth(name).contains("made")) {
    CHECK(i["made"] == cause_truth(name)["made"]);
  }
  CHECK(i["times"].get<int64_t>() >= 1);
  CHECK(!i["expression"].get<std::string>().empty());
  CHECK(c["sentence"].get<std::string>().rfind("`" + i["expression"].get<std::string>() + "` made ", 0) == 0);
  // report.md opens the culprit with it, and gives the element and operands.
  std::string md = read_text(fs::path("out-cause-" + name) / "report.md");
  CHECK(md.find("**Root cause:** \\`" + i["expression"].get<std::string>().substr(0, 6)) != std::string::npos);
  CHECK(md.find("| intermediate |") != std::string::npos);
  CHECK(md.find("| operands there |") != std::string::npos);
  return i;
}

// The row the intermediate's element is in: its output index's first where
// it was stored in the same loop body, else its first loop index.
int64_t row_of(const nlohmann::json& intermediate) {
  if (intermediate["output"].is_object()) {
    return intermediate["output"]["index"][0].get<int64_t>();
  }
  REQUIRE(!intermediate["element"].empty());
  return intermediate["element"].begin().value().get<int64_t>();
}

// The value of an operand by its name, as the replay measured it.
std::string operand_value(const nlohmann::json& intermediate, size_t k) {
  REQUIRE(intermediate["operands"].size() > k);
  return intermediate["operands"][k]["value"].get<std::string>();
}

}  // namespace

TEST_SUITE_BEGIN("e2e/cause");

TEST_CASE("cause: the log of an underflowed softmax is log(0), at the row whose softmax underflowed") {
  auto r = run_cause_example("kl_softmax_underflow");
  const auto& i = intermediate_named(r, "kl_softmax_underflow");
  const auto& c = root_cause_of(r);
  CHECK(c["operation"] == cause_truth("kl_softmax_underflow")["operation"]);  // "log of 0"
  CHECK(operand_value(i, 0) == "0");
  CHECK(cause_among(cause_truth("kl_softmax_underflow")["rows"], row_of(i)));
  // The replay left for the user prints the same intermediate and exits 1.
  aoti_bisect::SpawnSpec spec;
  spec.argv = {fs::absolute("out-cause-kl_softmax_underflow/repro/replay").string(), "--intermediates"};
  spec.env = aoti_bisect::current_environment();
  spec.env["AOTI_BISECT_REPLAY_CACHE"] = fs::absolute("build-cache/replay").string();
  spec.stdout_path = fs::absolute("replay-intermediates.txt");
  spec.timeout_s = 600;
  auto st = aoti_bisect::run_process(spec);
  std::string out = read_text("replay-intermediates.txt");
  MESSAGE(out);
  CHECK(st.exit_code == 1);
  CHECK(out.find("intermediate: " + i["expression"].get<std::string>().substr(
                                        0, i["expression"].get<std::string>().find(' '))) != std::string::npos);
  CHECK(out.find("AOTI_TRACE {\"kind\": \"inf\"") != std::string::npos);
}

TEST_CASE("cause: 0/0 in a row normalization, at the row whose relu outputs are all 0 (frozen)") {
  auto r = run_cause_example("zero_row_normalize");
  const auto& i = intermediate_named(r, "zero_row_normalize");
  const auto& c = root_cause_of(r);
  CHECK(c["operation"] == cause_truth("zero_row_normalize")["operation"]);  // "0/0"
  CHECK(operand_value(i, 0) == "0");
  CHECK(operand_value(i, 1) == "0");
  CHECK(cause_among(cause_truth("zero_row_normalize")["rows"], row_of(i)));
}

TEST_CASE("cause: the square root of a cancelled variance is of a negative value, at a row that went NaN") {
  auto r = run_cause_example("cancelled_variance_sqrt");
  const auto& i = intermediate_named(r, "cancelled_variance_sqrt");
  const auto& c = root_cause_of(r);
  CHECK(c["operation"] == cause_truth("cancelled_variance_sqrt")["operation"]);  // "square root of a negative value"
  CHECK(std::stod(operand_value(i, 0)) < 0);
  CHECK(cause_among(cause_truth("cancelled_variance_sqrt")["rows"], row_of(i)));
}

TEST_CASE("cause: the softmax of an all -inf row is inf - inf, in the all-padding sequence (bfloat16)") {
  auto r = run_cause_example("pool_all_padding");
  const auto& i = intermediate_named(r, "pool_all_padding");
  const auto& c = root_cause_of(r);
  CHECK(c["operation"] == "inf - inf");
  CHECK(operand_value(i, 0) == "-inf");
  CHECK(operand_value(i, 1) == "-inf");
  // Its loop's first index is the sequence (the softmax runs over dim 1 of [B, T]).
  CHECK(cause_among(cause_truth("pool_all_padding")["rows"], row_of(i)));
}

TEST_CASE(
    "never a wrong culprit under in-place reuse: the conv whose folded weights hold NaN (frozen, binary post-op)") {
  const auto& t = cause_truth("frozen_residual_binary_nan");
  for (const auto& how : std::vector<std::vector<std::string>>{
           {"--against-eager"}, {"--reference", example("frozen_residual_binary_nan.intended.pt").string()}}) {
    std::vector<std::string> more = {"--no-judge",
        "--exported-program", example("frozen_residual_binary_nan.ep.pt2").string()};
    more.insert(more.end(), how.begin(), how.end());
    auto r = run_cause_example("frozen_residual_binary_nan", more);
    CAPTURE(how[0]);
    CHECK(r.code() == 1);
    REQUIRE(r.report["culprit"].is_object());
    CHECK(r.report["culprit"]["call_index"] == t["culprit_call_index"]);
    CHECK(r.report["culprit"]["kernel"] == t["culprit_kernel"]);
    // A binary post-op convolution wrote in place into a buffer before the
    // culprit ran: every site compares with the node that buffer held there.
    CHECK(t["inplace_calls"][0].get<int>() < t["culprit_call_index"].get<int>());
  }
}

TEST_CASE("never a wrong culprit under aliasing: the kernel that writes Inf through a view of a concatenation") {
  const auto& t = cause_truth("concat_view_inf");
  auto r = run_cause_example("concat_view_inf");
  const auto& i = intermediate_named(r, "concat_view_inf");
  CHECK(r.report["culprit"]["call_index"] == t["culprit_call_index"]);
  CHECK(r.report["culprit"]["kernel"] == t["culprit_kernel"]);
  // The Inf came of an exp of a finite value; the layer norm then made NaN of it (inf - inf).
  CHECK(root_cause_of(r)["operation"] == "exp of a finite value overflows");
  CHECK(std::isfinite(std::stod(operand_value(i, 0))));
  REQUIRE(root_cause_of(r)["intermediates"].size() == 2);
  CHECK(root_cause_of(r)["intermediates"][1]["operation"] == "inf - inf");
  CHECK(cause_among(cause_truth("concat_view_inf")["rows"], row_of(i)));
  // The concatenation holding the Inf is read later: nothing says otherwise.
  for (const auto& h : r.report["bisection"]["healed"]) {
    CHECK(h["note"].get<std::string>().find("no later probed site read") == std::string::npos);
  }
}

TEST_CASE("bad data behind wrong values, from the package alone: the first call site that reads the NaN constant") {
  for (const std::string name : {"folded_nan_bias_reference", "nan_threshold_buffer"}) {
    CAPTURE(name);
    const auto& t = cause_truth(name);
    auto r = run_cause_example(name, {"--reference", example(name + ".intended.pt").string()});
    const auto& c = root_cause_of(r);
    CHECK(r.report["failure"]["kind"] == "mismatch");
    CHECK(c["basis"] == "constant");
    CHECK(r.report["culprit"]["call_index"] == t["culprit_call_index"]);
    std::string sentence = c["sentence"];
    std::string named = t["fqn"].is_string() ? t["fqn"].get<std::string>() : t["nan_constant"].get<std::string>();
    CHECK(sentence.find(named) != std::string::npos);
    CHECK(sentence.find(" NaN before the launch") != std::string::npos);
    CHECK(r.report["verdict_reason"].get<std::string>().find("reads a constant holding NaN") != std::string::npos);
  }
}

TEST_CASE("inputs outside the compiled range are run as the package runs them, with the range stated") {
  const auto& t = cause_truth("batch_of_one_unbiased");
  auto r = run_cause_example("batch_of_one_unbiased");
  const auto& i = intermediate_named(r, "batch_of_one_unbiased");
  CHECK(!i["expression"].get<std::string>().empty());
  const auto& outside = r.report["inputs"]["outside_compiled_range"];
  REQUIRE(outside.size() == 1);
  std::string range = fmt::format("dimension 0 is 1, outside [{}, {}], the range the package was compiled for",
                                  t["compiled_min"].get<int>(), t["compiled_max"].get<int>());
  CHECK(outside[0].get<std::string>().find(range) != std::string::npos);
  CHECK(r.out.find("  inputs:      input 0 (") != std::string::npos);
  std::string md = read_text("out-cause-batch_of_one_unbiased/report.md");
  CHECK(md.find("**Outside the compiled range:** input 0") != std::string::npos);
}

TEST_CASE("a wrong value in a package of one call site names it, the only candidate, from the package alone") {
  REQUIRE(cause_truth("single_kernel_log1p_bug")["call_sites"] == 1);
  auto r = run_cause_example("single_kernel_log1p_bug",
                             {"--reference", example("single_kernel_log1p_bug.expected.pt").string()});
  CHECK(r.code() == 1);
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["call_index"] == 1);
  CHECK(r.report["verdict_reason"].get<std::string>().find(
            "the only call site of the package, so the only candidate") != std::string::npos);
}

TEST_SUITE_END();
