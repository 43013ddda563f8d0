// End-to-end: whatever package and inputs the user holds, the tool takes
// them (issue 37). Each on an example built for it (examples/handoff.py):
// a custom C++ operator (--load-library), a sources-only package
// (package_cpp_only), inputs as safetensors, as a tokenizer's BatchEncoding
// and in torch.save's legacy format, the archive's own sample inputs,
// provenance carried by the package, and two independent origins of NaN.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;

namespace {

std::vector<std::string> args_of(const std::string& package, const std::string& inputs,
                                 std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run", package};
  if (!inputs.empty()) {
    args.insert(args.end(), {"--inputs", inputs});
  }
  args.insert(args.end(), {"--no-matrix", "--cache-dir", fs::absolute("build-cache").string()});
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The run names the example's culprit (1-based in the report, 0-based in NAME.json).
void check_culprit(const e2e::Result& r, const nlohmann::json& meta) {
  CHECK(r.code() == 1);
  CHECK(r.report["verdict"] == "isolated");
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
}

std::string file_of(const nlohmann::json& meta, const std::string& key) {
  return example(meta["files"][key].get<std::string>()).string();
}

}  // namespace

TEST_SUITE_BEGIN("e2e/handoff");

TEST_CASE("a custom C++ operator: isolated with --load-library, its call site named by its operator") {
  auto meta = meta_of("custom_op_nan");
  const std::string pkg = example("custom_op_nan.pt2").string();
  const std::string inputs = example("custom_op_nan.inputs.pt").string();
  const std::string library = file_of(meta, "op_library");

  SUBCASE("without the library: exit 4, one line naming the operator and --load-library") {
    auto r = run_tool(args_of(pkg, inputs), "out-none");
    CHECK(r.code() == 4);
    CHECK(r.report["verdict"] == "could_not_test");
    CHECK(e2e::error_line(r) ==
          "aoti-bisect: error: model 'model' calls an operator aoti_bisect_ex::scaled_log through AOTInductor's proxy "
          "executor, and no library given with --load-library registers it: give the shared library that defines it "
          "(TORCH_LIBRARY) with --load-library PATH; an operator defined only in Python (torch.library.custom_op) "
          "has no C++ kernel and cannot run in a package, so give it one");
  }
  SUBCASE("with it: the operator's call is the culprit, with its input and output in the evidence") {
    auto r = run_tool(args_of(pkg, inputs, {"--load-library", library}), "out-lib");
    check_culprit(r, meta);
    CHECK(r.report["culprit"]["kind"] == "extern");
    bool output_seen = false;
    for (const auto& a : r.report["culprit"]["args"]) {
      if (a["after"].is_object() && a["after"]["nan_count"].get<int>() > 0) {
        output_seen = true;
      }
    }
    CHECK(output_seen);
    CHECK(r.out.find("isolated to call site " + std::to_string(meta["culprit"]["call_index"].get<int>() + 1) +
                     " aoti_bisect_ex::scaled_log (extern)") != std::string::npos);
    // load_inline builds a Python extension module: Python's library is loaded first, and the report says so.
    CHECK(read_text("out-lib/report.md").find("is a Python extension module") != std::string::npos);
    // The reproduce command gives the library again (not Python's, which the tool finds itself).
    std::string repro = r.report["reproduce_command"].get<std::string>();
    CHECK(repro.find("--load-library") != std::string::npos);
    CHECK(repro.find("libpython") == std::string::npos);
    // The one-kernel replay makes the operator's call alone, its library beside it: the NaN again.
    REQUIRE(fs::exists("out-lib/repro/replay"));
    CHECK(fs::exists(fs::path("out-lib/repro") / fs::path(library).filename()));
    aoti_bisect::SpawnSpec spec;
    spec.argv = {fs::absolute("out-lib/repro/replay").string()};
    spec.env = aoti_bisect::current_environment();
    spec.stdout_path = "replay.out";
    spec.stderr_path = "replay.err";
    spec.timeout_s = 300;
    aoti_bisect::ExitStatus st = aoti_bisect::run_process(spec);
    CHECK(st.how == aoti_bisect::ExitStatus::How::exited);
    CHECK(st.exit_code == 1);
    CHECK(read_text("replay.out").find("aoti_bisect_ex::scaled_log: buf") != std::string::npos);
    CHECK(read_text("replay.out").find("after the call, inputs finite: reproduces") != std::string::npos);
  }
  SUBCASE("a library that is not a shared library: exit 4, naming it") {
    std::ofstream("not-a-lib.so") << "text";
    auto r = run_tool(args_of(pkg, inputs, {"--load-library", "not-a-lib.so"}), "out-bad");
    CHECK(r.code() == 4);
    CHECK(e2e::error_line(r).find("library '") != std::string::npos);
    CHECK(e2e::error_line(r).find("not-a-lib.so' (--load-library) cannot be loaded") != std::string::npos);
  }
}

TEST_CASE("a Python custom operator (torch.library.custom_op): named as such, with what to do, exit 4") {
  auto r = run_tool(args_of(example("python_op_nan.pt2").string(), example("python_op_nan.inputs.pt").string()), "out");
  CHECK(r.code() == 4);
  CHECK(r.report["verdict"] == "could_not_test");
  CHECK(e2e::error_line(r) ==
        "aoti-bisect: error: model 'model' calls aoti_bisect_py::shift through AOTInductor's proxy executor, a Python "
        "custom operator (torch.library.custom_op): its kernel is Python code, which the runner (C++, no Python) "
        "cannot call; give it a C++ kernel (TORCH_LIBRARY) and load that library with --load-library PATH");
}

TEST_CASE("a sources-only package (package_cpp_only): its library built once from its own sources, then searched") {
  auto meta = meta_of("sources_only_nan");
  const std::string pkg = example("sources_only_nan.pt2").string();
  auto r = run_tool(args_of(pkg, example("sources_only_nan.inputs.pt").string()), "out");
  check_culprit(r, meta);
  CHECK(r.report["bisection"]["source"] == "interpose");
  bool built = false;
  for (const auto& b : r.report["builds"]["items"]) {
    built = built || b["purpose"] == "model library";
  }
  CHECK(built);
  CHECK(read_text("out/report.md").find("the package holds sources only (package_cpp_only)") != std::string::npos);
  // A second run finds the library in the cache.
  auto again = run_tool(args_of(pkg, example("sources_only_nan.inputs.pt").string()), "out2");
  check_culprit(again, meta);
  CHECK(read_text("out2/report.md").find("found in the cache") != std::string::npos);
}

TEST_CASE("inputs as users save them: safetensors, a tokenizer's BatchEncoding, torch.save's legacy format") {
  SUBCASE("safetensors, keys bound to the positional arguments in their order") {
    auto meta = meta_of("safetensors_nan");
    auto r = run_tool(args_of(example("safetensors_nan.pt2").string(), file_of(meta, "safetensors_inputs")), "out");
    check_culprit(r, meta);
    CHECK(r.report["inputs"]["format"] == "safetensors");
    CHECK(r.report["inputs"]["tensors"][0]["argument"] == "'features' as args[0]");
    CHECK(r.report["inputs"]["tensors"][1]["argument"] == "'scale' as args[1]");
  }
  SUBCASE("a BatchEncoding as the tokenizer returned it, bound by name") {
    auto meta = meta_of("batch_encoding_nan");
    auto r =
        run_tool(args_of(example("batch_encoding_nan.pt2").string(), file_of(meta, "batch_encoding_inputs")), "out");
    check_culprit(r, meta);
    CHECK(r.report["inputs"]["read_as"] ==
          nlohmann::json::array({"a transformers.tokenization_utils_base.BatchEncoding read as the dict it holds"}));
    CHECK(read_text("out/report.md")
              .find("A transformers.tokenization_utils_base.BatchEncoding read as the dict it "
                    "holds.") != std::string::npos);
  }
  SUBCASE("the legacy format (_use_new_zipfile_serialization=False)") {
    auto meta = meta_of("legacy_inputs_nan");
    auto r = run_tool(args_of(example("legacy_inputs_nan.pt2").string(), file_of(meta, "legacy_inputs")), "out");
    check_culprit(r, meta);
    CHECK(r.report["inputs"]["format"] == "torch.save (legacy format)");
  }
  SUBCASE("a pickle that would run code is still refused, in one line") {
    auto r = run_tool(args_of(example("legacy_inputs_nan.pt2").string(),
                              (fs::path(AOTI_BISECT_TEST_DATA) / "tensor_files" / "tf_runs_code.pt").string()),
                      "out");
    CHECK(r.code() == 4);
    CHECK(e2e::error_line(r).find("would call posix.system when loaded (a pickle that runs code)") !=
          std::string::npos);
  }
}

TEST_CASE("no --inputs: the archive's own sample inputs, and the line that says --inputs is needed without them") {
  auto meta = meta_of("sample_inputs_nan");
  auto r = run_tool(args_of(file_of(meta, "combined_package"), ""), "out");
  check_culprit(r, meta);
  CHECK(r.report["inputs"]["origin"] == "the package's own sample inputs");
  CHECK(r.report["reproduce_command"].get<std::string>().find("--inputs") == std::string::npos);
  CHECK(read_text("out/report.md").find("the package's own sample inputs") != std::string::npos);

  auto none = run_tool(args_of(example("sample_inputs_nan.pt2").string(), ""), "out-none");
  CHECK(none.code() == 2);
  CHECK(e2e::error_line(none).find("no --inputs given, and package '") != std::string::npos);
  CHECK(e2e::error_line(none).find("holds no sample inputs for model 'model'") != std::string::npos);
  CHECK(none.report["verdict"] == "could_not_test");
}

TEST_CASE("provenance in the package: the culprit's Python source line and module, from the package alone") {
  auto meta = meta_of("provenance_nan");
  auto r =
      run_tool(args_of(example("provenance_nan.pt2").string(), example("provenance_nan.inputs.pt").string()), "out");
  check_culprit(r, meta);
  const auto& src = meta["culprit_source"];
  REQUIRE(r.report["culprit"]["source_lines"].is_array());
  // A fused kernel has a line per graph node it computes: the bad op's is among them.
  nlohmann::json line;
  for (const auto& l : r.report["culprit"]["source_lines"]) {
    if (l["line"] == src["line"]) {
      line = l;
    }
  }
  REQUIRE(line.is_object());
  CHECK(line["file"] == src["file"]);
  CHECK(line["code"] == src["code"]);
  CHECK(line["module"] == src["module"]);
  CHECK(r.out.find("  source:      " + src["file"].get<std::string>() + ":" + std::to_string(src["line"].get<int>())) !=
        std::string::npos);
  // Every site of the run carries its source.
  for (const auto& s : r.report["bisection"]["sites"]) {
    CHECK(s.contains("source"));
  }
}

TEST_CASE("two independent origins: the earliest site whose NaN reach an output, the other named") {
  auto meta = meta_of("two_origins_nan");
  auto r =
      run_tool(args_of(example("two_origins_nan.pt2").string(), example("two_origins_nan.inputs.pt").string()), "out");
  check_culprit(r, meta);
  const auto& other = meta["other_origins"][0];
  REQUIRE(r.report["bisection"]["other_origins"].size() == 1);
  const auto& o = r.report["bisection"]["other_origins"][0];
  CHECK(o["call_index"] == other["call_index"].get<int>() + 1);
  CHECK(o["kernel"] == other["kernel"]);
  CHECK(o["outputs"] == nlohmann::json::array({0}));
  std::string note = o["note"].get<std::string>();
  CHECK(r.out.find("also:        " + note) != std::string::npos);
  CHECK(read_text("out/report.md").find("**Another origin:** " + note) != std::string::npos);
}
