// Shrinking the trigger (lib/job/shrink.hpp) on the packages of
// examples/shrink_examples.py, each asserted against the samples its
// NAME.json["truth"] records (checked on the eager model when it was built),
// and the minimal inputs file loaded back with torch.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

namespace {

std::vector<std::string> args_of(const std::string& name, const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"run", example(name + ".pt2").string(), "--inputs",
                                   example(name + ".inputs.pt").string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// What torch.load makes of a file: one line per tensor, "KEY SHAPE" in the
// file's order (KEY: the dict's key, else the position).
std::string torch_view(const fs::path& file) {
  return e2e::python(
      "import sys, torch\n"
      "v = torch.load(sys.argv[1], weights_only=True)\n"
      "items = v.items() if isinstance(v, dict) else enumerate(v)\n"
      "print(type(v).__name__)\n"
      "for k, t in items: print(k, list(t.shape))\n",
      {file.string()});
}

int log2_ceil(int n) {
  return static_cast<int>(std::ceil(std::log2(static_cast<double>(n))));
}

}  // namespace

TEST_SUITE_BEGIN("e2e/shrink");

TEST_CASE("shrink: one failing sample among positional inputs, found in at most ceil(log2 B) + 2 runs") {
  const auto truth = e2e::meta_of("sample_log_nan")["truth"];
  auto r = run_tool(args_of("sample_log_nan"), "out");
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  // The culprit search is unchanged: it runs on the whole batch.
  CHECK(r.report["culprit"]["kernel"] == e2e::meta_of("sample_log_nan")["culprit"]["kernel"]);
  const auto& m = r.report["inputs"]["minimal"];
  REQUIRE(m.is_object());
  CHECK(m["samples"] == truth["samples"]);
  CHECK(m["of"] == 12);
  CHECK(m["alone"] == true);
  CHECK(m["minimal"] == true);
  // Alone: at batch 1, below the package's compiled minimum of 2, as the
  // package runs it by default (repeated, it would keep its own company).
  CHECK(m["repeated_to"].is_null());
  CHECK(m["runs"].get<int>() <= log2_ceil(12) + 2);
  CHECK(r.report["run_counts"]["shrink"] == m["runs"]);
  CHECK(m["sentence"] == fmt::format("sample 9 of 12 fails alone (run at batch 1, below batch 2, the smallest the "
                                     "package was compiled for, as the package runs it by default) ({} runs of "
                                     "sub-batches)",
                                     m["runs"].get<int>()));
  CHECK(m["file"] == "out/repro/minimal.inputs.pt");
  CHECK(r.out.find("  trigger:     sample 9 of 12 fails alone") != std::string::npos);
  CHECK(r.report["reproduce_command"].get<std::string>().find("--inputs out/repro/minimal.inputs.pt") !=
        std::string::npos);
  // Both inputs share the batch: both are cut to the sample.
  CHECK(torch_view("out/repro/minimal.inputs.pt") == "tuple\n0 [1, 16]\n1 [1, 1]\n");

  // Row 9's NaN stays in its row: every sample compared is in the batch as
  // it is alone. 8 of the 12: the trigger's and the first others.
  const auto& b = r.report["inputs"]["batch_dependence"];
  REQUIRE(b.is_object());
  CHECK(b["finding"].is_null());
  CHECK(b["sample"].is_null());
  CHECK(b["first_site"].is_null());
  CHECK(b["batch"] == 12);
  CHECK(b["repeated"] == false);
  REQUIRE(b["samples"].size() == 8);
  std::vector<int> compared;
  for (const auto& c : b["samples"]) {
    compared.push_back(c["sample"].get<int>());
    CHECK(c["first_site"].is_null());
    CHECK(c["alone_batch"] == 1);
    CHECK(c["in_trigger"] == (c["sample"] == 9));
    CHECK(c["sites_compared"].get<int>() >= 2);
    CHECK(c["tensors_compared"].get<int>() >= c["sites_compared"].get<int>());
  }
  CHECK(compared == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 9});
  CHECK(b["sentence"].get<std::string>().rfind(
            "samples 1, 2, 3, 4, 5, 6, 7 and 9 agree within tolerance between the failing batch of 12 and runs of "
            "each alone (at batch 1, below batch 2, the smallest the package was compiled for, as the package runs "
            "it by default) (8 of the 12 samples compared: the trigger's and the first others), at every one of the ",
            0) == 0);
  CHECK(r.report["run_counts"]["batch"] == 9);
  CHECK(b["runs"] == 9);
  CHECK(r.out.find("  in company:  samples 1, 2, 3, 4, 5, 6, 7 and 9 agree within tolerance") != std::string::npos);
  CHECK_FALSE(fs::exists("out/batch-dependence"));  // tensor contents never stay

  // The minimal inputs reproduce the failure on their own.
  auto again = run_tool({"run", example("sample_log_nan.pt2").string(), "--inputs", "out/repro/minimal.inputs.pt",
                         "--no-matrix", "--no-bisect"},
                        "again");
  CHECK(again.code() == 3);
  CHECK(again.report["failure"]["kind"] == "nonfinite");
}

TEST_CASE("shrink: keyword inputs (a tokenizer's dict) are cut together and saved as the dict") {
  const auto truth = e2e::meta_of("sample_mask_nan")["truth"];
  auto r = run_tool(args_of("sample_mask_nan"), "out");
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  const auto& m = r.report["inputs"]["minimal"];
  REQUIRE(m.is_object());
  CHECK(m["samples"] == truth["samples"]);
  CHECK(m["of"] == 6);
  CHECK(m["alone"] == true);
  CHECK(m["runs"].get<int>() <= log2_ceil(6) + 2);
  // What sets it apart: its mask is all padding.
  bool all_padding = false;
  for (const auto& fact : m["facts"]) {
    all_padding = all_padding || fact.get<std::string>().find("sample 4: input") != std::string::npos &&
                                     fact.get<std::string>().find("holds only 0; the samples that passed hold 0..1") !=
                                         std::string::npos;
  }
  CHECK_MESSAGE(all_padding, m["facts"].dump());
  CHECK(torch_view("out/repro/minimal.inputs.pt") ==
        "dict\ninput_ids [1, 8]\ntoken_type_ids [1, 8]\nattention_mask [1, 8]\n");

  // The same dict as a tokenizer returns it (a BatchEncoding): read as the
  // dict it holds, cut alike, saved as that dict.
  auto be = run_tool(
      {"run", example("sample_mask_nan.pt2").string(), "--inputs", example("sample_mask_nan.inputs.batch.pt").string()},
      "be");
  REQUIRE(be.report.is_object());
  CHECK(be.report["inputs"]["read_as"] ==
        nlohmann::json::array({"a transformers.tokenization_utils_base.BatchEncoding read as the dict it holds"}));
  CHECK(be.report["inputs"]["minimal"]["samples"] == truth["samples"]);
  CHECK(torch_view("be/repro/minimal.inputs.pt") ==
        "dict\ninput_ids [1, 8]\ntoken_type_ids [1, 8]\nattention_mask [1, 8]\n");
}

TEST_CASE("shrink: two samples that fail only together; neither alone") {
  auto r = run_tool(args_of("samples_pair_nan"), "out");
  REQUIRE(r.report.is_object());
  const auto& m = r.report["inputs"]["minimal"];
  REQUIRE(m.is_object());
  CHECK(m["samples"] == e2e::meta_of("samples_pair_nan")["truth"]["samples"]);
  CHECK(m["alone"] == false);
  CHECK(m["none_alone"] == true);
  CHECK(m["minimal"] == true);
  CHECK(m["repeated_to"].is_null());
  CHECK(m["sentence"].get<std::string>().rfind("samples 3 and 6 of 8 fail together; neither alone", 0) == 0);
  CHECK(torch_view("out/repro/minimal.inputs.pt") == "tuple\n0 [2, 16]\n");
  // Failing only together is the finding; the gate over the batch reaches
  // every sample's rows, and the sentence details the trigger's first.
  const auto& b = r.report["inputs"]["batch_dependence"];
  REQUIRE(b.is_object());
  CHECK(b["finding"] == "batch_dependent");
  CHECK(b["fails_only_in_company"] == true);
  CHECK(b["sample"] == 3);
  REQUIRE(b["first_site"].is_object());
  CHECK(b["first_site"]["nonfinite"].get<int>() > 0);
  CHECK(b["first_site"]["in_batch"] == "nan");
  REQUIRE(b["samples"].size() == 8);
  for (const auto& c : b["samples"]) {
    CHECK(c["first_site"].is_object());  // NaN in every row of the batch, none alone
  }
  CHECK(b["sentence"].get<std::string>().rfind("samples 3 and 6 fail only together; samples 1, 2, 3, 4, 5, 6, 7 and "
                                               "8 differ between the failing batch of 8 and runs of each alone",
                                               0) == 0);
  CHECK(b["sentence"].get<std::string>().find(": sample 3 first at call site ") != std::string::npos);
  CHECK(r.out.find("  in company:  batch_dependent: samples 3 and 6 fail only together") != std::string::npos);
}

TEST_CASE("shrink: where a sample cannot run alone below the compiled minimum, it runs repeated, and says so") {
  // Under the package's input checks a batch of 1 is refused (exit 10).
  auto r = run_tool({"bisect", example("sample_log_nan.pt2").string(), "--inputs",
                     example("sample_log_nan.inputs.pt").string(), "--env", "AOTI_RUNTIME_CHECK_INPUTS=1"},
                    "out");
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  const auto& m = r.report["inputs"]["minimal"];
  REQUIRE(m.is_object());
  CHECK(m["samples"] == nlohmann::json::array({9}));
  CHECK(m["alone"] == false);
  CHECK(m["repeated_to"] == 2);
  CHECK(r.report["run_counts"]["shrink"] == m["runs"]);
  CHECK(m["sentence"].get<std::string>().rfind("sample 9 of 12 fails repeated to batch 2 (below batch 2, the smallest "
                                               "the package was compiled for, it could not run as it is) (",
                                               0) == 0);
  CHECK(torch_view("out/repro/minimal.inputs.pt") == "tuple\n0 [2, 16]\n1 [2, 1]\n");
  const auto& b = r.report["inputs"]["batch_dependence"];
  REQUIRE(b.is_object());
  CHECK(b["repeated"] == true);
  REQUIRE(b["samples"].size() == 8);
  for (const auto& c : b["samples"]) {
    CHECK(c["alone_batch"] == 2);
  }
  // One run at batch 1 is refused, then every sample runs repeated: 8 + 1, and the run in company.
  CHECK(r.report["run_counts"]["batch"] == 10);
}

TEST_CASE("batch dependence: a normalization over the batch carries one row's NaN into the others' rows") {
  const auto meta = e2e::meta_of("batch_norm_nan");
  const auto truth = meta["truth"];
  auto r = run_tool(args_of("batch_norm_nan"), "out");
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  const auto& m = r.report["inputs"]["minimal"];
  REQUIRE(m.is_object());
  CHECK(m["samples"] == truth["samples"]);
  CHECK(m["alone"] == true);
  const auto& b = r.report["inputs"]["batch_dependence"];
  REQUIRE(b.is_object());
  CHECK(b["finding"] == "batch_dependent");
  CHECK(b["fails_only_in_company"] == false);
  CHECK(b["sample"] == truth["company"]["sample"]);
  CHECK(b["batch"] == 8);
  const auto& site = b["first_site"];
  REQUIRE(site.is_object());
  // Not the culprit's site: there the NaN is in row 5's rows only, and
  // sample 1's rows are compared alone.
  CHECK(site["call_index"].get<int>() > r.report["culprit"]["call_index"].get<int>());
  CHECK(site["nonfinite"].get<int>() > 0);
  CHECK(site["in_batch"] == "nan");
  CHECK(std::isfinite(std::stod(site["alone"].get<std::string>())));
  // Every other sample differs in company; sample 5's own NaN is the same
  // in the batch as alone.
  REQUIRE(b["samples"].size() == 8);
  for (const auto& c : b["samples"]) {
    CHECK_MESSAGE(c["first_site"].is_object() == (c["sample"] != 5), c.dump());
  }
  const std::string head =
      "samples 1, 2, 3, 4, 6, 7 and 8 differ between the failing batch of 8 and runs of each "
      "alone (at batch 1, below batch 2, the smallest the package was compiled for, as the "
      "package runs it by default); sample 5 agrees within tolerance: sample 1 first at call "
      "site ";
  CHECK(b["sentence"].get<std::string>().rfind(head, 0) == 0);
  CHECK(b["sentence"].get<std::string>().find(fmt::format("first at call site {} ({})", site["call_index"].get<int>(),
                                                          site["kernel"].get<std::string>())) != std::string::npos);
  CHECK(r.out.find("  in company:  batch_dependent: " + head) != std::string::npos);
  CHECK(e2e::read_text("out/report.md").find("**Batch dependent:** " + head) != std::string::npos);
}

TEST_CASE("shrink: a static batch is stated, and --no-shrink runs no sub-batch") {
  auto r = run_tool(args_of("kwargs_mask_nan"), "out");
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  CHECK(r.report["inputs"]["minimal"].is_null());
  CHECK(r.report["inputs"]["shrink_note"] == "the package takes only batch 2: no smaller batch can run");
  CHECK(r.out.find("  trigger:     the package takes only batch 2: no smaller batch can run") != std::string::npos);
  CHECK_FALSE(r.report["run_counts"].contains("shrink"));
  CHECK(r.report["inputs"]["batch_dependence"].is_null());
  CHECK_FALSE(r.report["run_counts"].contains("batch"));

  auto off = run_tool(args_of("sample_log_nan", {"--no-shrink"}), "off");
  REQUIRE(off.report.is_object());
  CHECK(off.code() == 1);
  CHECK(off.report["inputs"]["minimal"].is_null());
  CHECK(off.report["inputs"]["shrink_note"].is_null());
  CHECK_FALSE(off.report["run_counts"].contains("shrink"));
  CHECK_FALSE(off.report["run_counts"].contains("batch"));
  CHECK_FALSE(fs::exists("off/repro/minimal.inputs.pt"));
}

TEST_CASE("shrink: a mismatch is judged against the reference's rows of the samples run, and saved with them") {
  // zero_row_masked's eager outputs (rows independent of each other), with
  // row 5 moved by 1: sample 5 alone is out of tolerance.
  e2e::shifted_reference(example("zero_row_masked.expected.pt"), "row5.reference.pt", 4);
  auto r = run_tool(args_of("zero_row_masked", {"--reference", "row5.reference.pt"}), "mismatch");
  REQUIRE(r.report.is_object());
  CHECK(r.report["failure"]["kind"] == "mismatch");
  const auto& m = r.report["inputs"]["minimal"];
  REQUIRE_MESSAGE(m.is_object(), r.report["inputs"].dump());
  CHECK(m["samples"] == nlohmann::json::parse("[5]"));
  CHECK(m["alone"] == true);
  CHECK(m["reference"] == "mismatch/repro/minimal.reference.pt");
  CHECK(torch_view("mismatch/repro/minimal.reference.pt") == "tuple\n0 [1, 4]\n");
  CHECK(r.report["reproduce_command"].get<std::string>().find("--reference mismatch/repro/minimal.reference.pt") !=
        std::string::npos);
  // The reproduce command reproduces: the one sample against its row.
  auto again = run_tool({"run", example("zero_row_masked.pt2").string(), "--inputs", "mismatch/repro/minimal.inputs.pt",
                         "--reference", "mismatch/repro/minimal.reference.pt", "--no-matrix", "--no-bisect"},
                        "again");
  REQUIRE(again.report.is_object());
  CHECK(again.report["failure"]["kind"] == "mismatch");
}
