// End-to-end: packages and inputs as users make them (issue 23). Inputs bound
// by the package's call spec (a tokenizer's dict, (args, kwargs)); layouts as
// saved (a transposed view refused, a view at a storage offset run as is);
// frozen oneDNN weights; an error ATen raises inside an extern call; a
// oneDNN post-op that differs from eager.

#include <filesystem>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;

namespace {

std::vector<std::string> search_args(const std::string& package, const std::string& inputs,
                                     std::vector<std::string> more = {}) {
  std::vector<std::string> args = {
      "run",         example(package + ".pt2").string(),  "--inputs", example(inputs).string(), "--no-matrix",
      "--cache-dir", fs::absolute("build-cache").string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The run isolated the example's culprit (NAME.json, 0-based) at its call site.
void check_culprit(const e2e::Result& r, const nlohmann::json& meta) {
  CHECK(r.code() == 1);
  CHECK(r.report["verdict"] == "isolated");
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
}

}  // namespace

TEST_SUITE_BEGIN("e2e/real-packages");

TEST_CASE("a keyword-argument package fed a tokenizer's dict in another order: bound by name, the NaN culprit named") {
  auto meta = meta_of("kwargs_mask_nan");
  auto r = run_tool(search_args("kwargs_mask_nan", "kwargs_mask_nan.inputs.pt"), "out");
  check_culprit(r, meta);
  // The file's order is input_ids, token_type_ids, attention_mask; the
  // package's is the export's: the names say which tensor went where.
  const auto& in = r.report["inputs"];
  CHECK(in["binding"].get<std::string>().find("Bound by the package's call spec") == 0);
  REQUIRE(in["tensors"].size() == 3);
  CHECK(in["tensors"][0]["argument"] == "input_ids");
  CHECK(in["tensors"][1]["argument"] == "attention_mask");
  CHECK(in["tensors"][2]["argument"] == "token_type_ids");
  std::string md = read_text("out/report.md");
  CHECK(md.find("| `input1` | `attention_mask` | int64 | [2, 8] |") != std::string::npos);
  // The model returns {"logits": ...}: the out_spec names the output.
  CHECK(r.report["runs"][0]["outputs"][0]["name"] == "output0 (logits)");
  CHECK(r.report["failure"]["first_line"].get<std::string>().find("output0 (logits): 4 NaN") != std::string::npos);

  // (args, kwargs), the form torch.export takes: the same binding, the same culprit.
  auto pair = run_tool(search_args("kwargs_mask_nan", "kwargs_mask_nan.args_kwargs.inputs.pt"), "out-pair");
  check_culprit(pair, meta);
  CHECK(pair.report["inputs"]["tensors"][1]["argument"] == "attention_mask");
}

TEST_CASE("inputs that do not fit the call spec: the argument named, exit 4") {
  auto missing = run_tool(search_args("kwargs_mask_nan", "kwargs_mask_nan.missing_key.inputs.pt"), "out");
  CHECK(missing.code() == 4);
  CHECK(error_line(missing).find("does not fit model 'model': the inputs file has no 'token_type_ids': the package "
                                 "takes keyword arguments input_ids, attention_mask, token_type_ids") !=
        std::string::npos);
  CHECK(missing.report["verdict"] == "could_not_test");
  CHECK(missing.report["runs"][0]["outcome"] == "input_mismatch");
  // Names lost: a tuple is not bound to keyword arguments by guesswork.
  auto tuple = run_tool(search_args("kwargs_mask_nan", "kwargs_mask_nan.tuple.inputs.pt"), "out-tuple");
  CHECK(tuple.code() == 4);
  CHECK(error_line(tuple).find("the inputs file holds a tuple of 3: save a dict with those keys, or (args, kwargs)") !=
        std::string::npos);
}

TEST_CASE(
    "a transposed view the package was not compiled for: input_mismatch naming both layouts, as the package's "
    "own check does") {
  auto meta = meta_of("healthy");
  auto r = run_tool(
      search_args("healthy", "healthy.transposed.inputs.pt", {"--reference", example("healthy.expected.pt").string()}),
      "out");
  CHECK(r.code() == 4);
  CHECK(error_line(r).find("does not fit model 'model': input 0 (args[0], arg8_1): strides [1, 8], the package was "
                           "compiled for strides [16, 1] (shape [8, 16])") != std::string::npos);
  CHECK(r.report["runs"][0]["outcome"] == "input_mismatch");
  // The package's generated check (AOTI_RUNTIME_CHECK_INPUTS=1, run by the
  // example builder in Python) expects the same stride at dimension 0.
  REQUIRE(meta["package_input_check"].is_string());
  CHECK(meta["package_input_check"].get<std::string>().find("unmatched stride value at 0, expected: 16, but got: 1") !=
        std::string::npos);

  // Asked for: run on a copy in the package's layout; said so.
  auto copied = run_tool(search_args("healthy", "healthy.transposed.inputs.pt",
                                     {"--reference", example("healthy.expected.pt").string(), "--contiguous-inputs"}),
                         "out-copied");
  CHECK(copied.code() == 0);
  CHECK(copied.report["verdict"] == "clean");
  bool noted = false;
  for (const auto& n : copied.report["notes"]) {
    noted = noted || n.get<std::string>().find(
                         "copied from strides [1, 8] into the package's layout [16, 1] "
                         "(--contiguous-inputs)") != std::string::npos;
  }
  CHECK(noted);

  // A view at a storage offset with the strides it expects runs as saved.
  auto offset = run_tool(
      search_args("healthy", "healthy.offset.inputs.pt", {"--reference", example("healthy.expected.pt").string()}),
      "out-offset");
  CHECK(offset.code() == 0);
  CHECK(offset.report["inputs"]["tensors"][0]["storage_offset"] == 16);
}

TEST_CASE("frozen oneDNN weights: a NaN between two mkldnn convolutions, and an Inf in a packed linear weight") {
  auto conv_meta = meta_of("frozen_conv_nan");
  auto conv = run_tool(search_args("frozen_conv_nan", "frozen_conv_nan.inputs.pt"), "out");
  check_culprit(conv, conv_meta);
  // The packed weights were probed through dense copies, not left out.
  std::string md = read_text("out/report.md");
  CHECK(md.find("Cannot access data pointer") == std::string::npos);

  auto lin_meta = meta_of("frozen_linear_inf");
  auto lin = run_tool(search_args("frozen_linear_inf", "frozen_linear_inf.inputs.pt"), "out-linear");
  check_culprit(lin, lin_meta);
  CHECK(lin_meta["culprit"]["kernel"] == "aoti_torch_cpu__linear_pointwise");
  // The weight's name is lost to freezing: said by shape and layout, and
  // the bias the same call reads (what was measured, no guess at its name).
  CHECK(lin.report["culprit"]["root_cause"]["sentence"].get<std::string>() ==
        "reads frozen weight [32, 32] in oneDNN layout, read with b.bias, which holds 1 Inf before the launch (a "
        "constant of the package)");
}

TEST_CASE("ATen's range check inside an extern call: the call site that returned the error, and the index's producer") {
  auto meta = meta_of("embedding_bag_range");
  auto r = run_tool(search_args("embedding_bag_range", "embedding_bag_range.inputs.pt"), "out");
  check_culprit(r, meta);
  CHECK(r.report["culprit"]["why"].get<std::string>().rfind(
            "the call returned an error: Index 5 of input takes value 65 which is not in the valid range [0, 60)", 0) ==
        0);
  REQUIRE(r.report["culprit"]["producer"].is_object());
  CHECK(r.report["culprit"]["producer"]["why"].get<std::string>().find("graph input 1") == 0);
  CHECK(r.report["culprit"]["producer"]["why"].get<std::string>().find("outside [0, 60)") != std::string::npos);
}

TEST_CASE("a oneDNN relu post-op that maps NaN to 0 where eager keeps it: the convolution call named against eager") {
  auto meta = meta_of("relu_postop_nan");
  // No --config: freezing is read from the package's frozen constants.
  auto r = run_tool(search_args("relu_postop_nan", "relu_postop_nan.inputs.pt",
                                {"--against-eager", "--no-judge",
                                    "--exported-program", example("relu_postop_nan.ep.pt2").string()}),
                    "out");
  check_culprit(r, meta);
  CHECK(r.report["failure"]["kind"] == "mismatch");
  CHECK(r.report["culprit"]["why"].get<std::string>().find("NaN/Inf differ from eager in") != std::string::npos);
  CHECK(r.report["culprit"]["why"].get<std::string>().find("compiled 0, eager nan") != std::string::npos);
  // The replay cannot hand the call its packed weight: it says so (the
  // post-op's name "relu" is a string, not a tensor it lacks).
  CHECK(r.report["repro"]["replay_note"] ==
        "cannot replay: _frozen_param4 is a oneDNN-layout constant (a frozen, packed weight): the replay could pass "
        "only a dense copy, which the call does not take");
}

TEST_CASE("a package that holds no weights (package_constants_in_so=False alone): refused, not a culprit") {
  auto r = run_tool(search_args("no_weights", "no_weights.inputs.pt"), "out");
  CHECK(r.code() == 4);
  CHECK(r.report["verdict"] == "could_not_test");
  CHECK(r.report["culprit"].is_null());
  CHECK(error_line(r).find("declared, but the package holds no weights: the library embeds 1 bytes and no "
                           "weights file is packaged") != std::string::npos);
}

TEST_SUITE_END();
