// Shrinking the trigger (lib/job/shrink.hpp) on the packages of
// examples/shrink_examples.py, each asserted against the samples its
// NAME.json["truth"] records (checked on the eager model when it was built),
// and the minimal inputs file loaded back with torch.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

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
  aoti_bisect::SpawnSpec spec;
  const char* chosen = std::getenv("AOTI_BISECT_PYTHON");
  spec.argv = {"/usr/bin/env", chosen != nullptr && *chosen != '\0' ? chosen : "python3", "-c",
               "import sys, torch\n"
               "v = torch.load(sys.argv[1], weights_only=True)\n"
               "items = v.items() if isinstance(v, dict) else enumerate(v)\n"
               "print(type(v).__name__)\n"
               "for k, t in items: print(k, list(t.shape))\n",
               file.string()};
  spec.env = aoti_bisect::current_environment();
  spec.stdout_path = fs::absolute("torch_view.txt");
  spec.timeout_s = 120;
  aoti_bisect::ExitStatus st = aoti_bisect::run_process(spec);
  REQUIRE(st.ok());
  return e2e::read_text(spec.stdout_path);
}

int log2_ceil(int n) { return static_cast<int>(std::ceil(std::log2(static_cast<double>(n)))); }

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
  CHECK(m["repeated_to"] == 2);  // the package's smallest batch
  CHECK(m["runs"].get<int>() <= log2_ceil(12) + 2);
  CHECK(r.report["run_counts"]["shrink"] == m["runs"]);
  CHECK(m["sentence"] == fmt::format("sample 9 of 12 fails alone (run repeated to batch 2, the smallest the package "
                                     "was compiled for) ({} runs of sub-batches)",
                                     m["runs"].get<int>()));
  CHECK(m["file"] == "out/repro/minimal.inputs.pt");
  CHECK(r.out.find("  trigger:     sample 9 of 12 fails alone") != std::string::npos);
  CHECK(r.report["reproduce_command"].get<std::string>().find("--inputs out/repro/minimal.inputs.pt") !=
        std::string::npos);
  // Both inputs share the batch: both are cut to the sample, repeated.
  CHECK(torch_view("out/repro/minimal.inputs.pt") == "tuple\n0 [2, 16]\n1 [2, 1]\n");

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
        "dict\ninput_ids [2, 8]\ntoken_type_ids [2, 8]\nattention_mask [2, 8]\n");
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
}

TEST_CASE("shrink: a static batch is stated, and --no-shrink runs no sub-batch") {
  auto r = run_tool(args_of("kwargs_mask_nan"), "out");
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  CHECK(r.report["inputs"]["minimal"].is_null());
  CHECK(r.report["inputs"]["shrink_note"] == "the package takes only batch 2: no smaller batch can run");
  CHECK(r.out.find("  trigger:     the package takes only batch 2: no smaller batch can run") != std::string::npos);
  CHECK_FALSE(r.report["run_counts"].contains("shrink"));

  auto off = run_tool(args_of("sample_log_nan", {"--no-shrink"}), "off");
  REQUIRE(off.report.is_object());
  CHECK(off.code() == 1);
  CHECK(off.report["inputs"]["minimal"].is_null());
  CHECK(off.report["inputs"]["shrink_note"].is_null());
  CHECK_FALSE(off.report["run_counts"].contains("shrink"));
  CHECK_FALSE(fs::exists("off/repro/minimal.inputs.pt"));
}
