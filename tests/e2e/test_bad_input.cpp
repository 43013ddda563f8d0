// Bad input: one clear line on stderr naming the thing, the documented exit
// code, and (past option parsing) a report that says could_not_test.

#include <filesystem>
#include <tuple>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "archive/zip_stored.hpp"
#include "common/files.hpp"
#include "e2e/e2e.hpp"
#include "package/package.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

namespace {

e2e::Result run_healthy_with(const std::string& inputs, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run", example("healthy.pt2").string(), "--inputs", inputs};
  args.insert(args.end(), more.begin(), more.end());
  return run_tool(args, "out");
}

}  // namespace

TEST_SUITE_BEGIN("e2e/bad-input");

TEST_CASE("inputs that do not fit the model: input_mismatch named per input, exit 4") {
  struct Case {
    std::string file;
    std::string says;
    std::string package_says;  // the package's own check (the check_inputs run), where it gets to look
  };
  for (const Case& c : std::vector<Case>{
           {"healthy.bad_count.inputs.pt", "the inputs file holds 2 tensors, the model takes 1: arg8_1 float32 [8, 16]",
            ""},
           {"healthy.bad_dtype.inputs.pt", "input 0 (arg8_1): dtype float64, the model takes float32",
            "; the package's own check (AOTI_RUNTIME_CHECK_INPUTS=1) agrees: input_handles[0]: unmatched dtype"},
           {"healthy.bad_shape.inputs.pt", "input 0 (arg8_1): shape [3, 16], the model takes [8, 16]",
            "; the package's own check (AOTI_RUNTIME_CHECK_INPUTS=1) agrees: input_handles[0]: unmatched dim value at "
            "0, expected: 8, but got: 3"}}) {
    CAPTURE(c.file);
    auto r = run_healthy_with(example(c.file).string());
    CHECK(r.code() == 4);
    CHECK(last_tool_line(r).find("aoti-bisect: error: inputs file '") == 0);
    CHECK(last_tool_line(r).find("does not fit model 'model': " + c.says) != std::string::npos);
    REQUIRE(r.report.is_object());
    CHECK(r.report["verdict"] == "could_not_test");
    // Scripts group by failure kind: a refusal is input_mismatch there too.
    REQUIRE(r.report["failure"].is_object());
    CHECK(r.report["failure"]["kind"] == "input_mismatch");
    CHECK(r.report["failure"]["first_line"].get<std::string>().find(c.says) != std::string::npos);
    // The baseline, then one check_inputs run as a second opinion; the
    // runner keeps the count check there (the package would read handles
    // that are not there), so a wrong count gets none.
    REQUIRE(r.report["runs"].size() == 2);
    CHECK(r.report["runs"][0]["outcome"] == "input_mismatch");
    CHECK(r.report["runs"][1]["id"] == "check_inputs.1");
    if (c.package_says.empty()) {
      CHECK(last_tool_line(r).find("the package's own check") == std::string::npos);
      CHECK(r.report["matrix"]["findings"] == nlohmann::json::array());
    } else {
      CHECK(last_tool_line(r).find(c.package_says) != std::string::npos);
      CHECK(r.report["matrix"]["findings"].size() == 1);
    }
    CHECK(r.report["error"].get<std::string>().find(c.says) != std::string::npos);
  }
}

TEST_CASE("an inputs file that holds other things than tensors, or is not torch.save's format") {
  auto r = run_healthy_with(example("healthy.not_tensors.inputs.pt").string());
  CHECK(r.code() == 4);
  CHECK(last_tool_line(r).find("holds an int (3) where the model takes a tensor (after 1 tensors); the model's inputs "
                               "are all tensors: save a tuple of tensors in input order with torch.save") !=
        std::string::npos);
  // A .pt2 where the inputs go: said to be one, and where it belongs.
  auto ep = run_healthy_with(example("healthy.ep.pt2").string());
  CHECK(ep.code() == 4);
  CHECK(last_tool_line(ep).find("healthy.ep.pt2' is an exported program (torch.export.save), not inputs; give the "
                                "inputs saved with torch.save as --inputs; an exported program goes to "
                                "--exported-program") != std::string::npos);
  CHECK(last_tool_line(ep).find("checkpoint") == std::string::npos);
  auto pkg = run_healthy_with(example("healthy.pt2").string());
  CHECK(pkg.code() == 4);
  CHECK(last_tool_line(pkg).find("healthy.pt2' is an AOTInductor package (.pt2), not inputs") != std::string::npos);
  aoti_bisect::write_file_atomic("garbage.pt", "not a torch file");
  auto g = run_healthy_with("garbage.pt");
  CHECK(g.code() == 4);
  CHECK(last_tool_line(g) ==
        "aoti-bisect: error: inputs file 'garbage.pt' is not a file of tensors aoti-bisect reads "
        "(torch.save's zip or legacy format, or safetensors); save it with torch.save or "
        "safetensors.torch.save_file");
  CHECK(g.report["verdict"] == "could_not_test");
  auto m = run_healthy_with("missing.pt");
  CHECK(m.code() == 4);
  CHECK(last_tool_line(m) == "aoti-bisect: error: inputs file 'missing.pt' does not exist");
}

TEST_CASE("a reference whose structure differs from the outputs") {
  auto r = run_healthy_with(example("healthy.inputs.pt").string(),
                            {"--reference", example("healthy.bad_reference.pt").string()});
  CHECK(r.code() == 4);
  CHECK(last_tool_line(r).find("holds 4 tensors, the model returns 2") != std::string::npos);
  CHECK(r.report["verdict"] == "could_not_test");
}

TEST_CASE("bad packages: missing, not a zip, truncated, no AOTI model") {
  std::string inputs = example("healthy.inputs.pt").string();
  auto missing = run_tool({"run", "nope.pt2", "--inputs", inputs}, "out");
  CHECK(missing.code() == 4);
  CHECK(last_tool_line(missing) == "aoti-bisect: error: package 'nope.pt2' does not exist");
  CHECK(missing.report["verdict"] == "could_not_test");

  aoti_bisect::write_file_atomic("text.pt2", "just text");
  auto text = run_tool({"run", "text.pt2", "--inputs", inputs}, "out");
  CHECK(text.code() == 4);
  CHECK(last_tool_line(text) == "aoti-bisect: error: package 'text.pt2' is not a zip archive (a .pt2 package is one)");

  std::string bytes = aoti_bisect::read_file(example("healthy.pt2"), "package");
  aoti_bisect::write_file_atomic("cut.pt2", bytes.substr(0, bytes.size() / 2));
  auto cut = run_tool({"run", "cut.pt2", "--inputs", inputs}, "out");
  CHECK(cut.code() == 4);
  CHECK(last_tool_line(cut).find("package 'cut.pt2' is a damaged or truncated zip archive") != std::string::npos);

  auto ep = run_tool({"run", example("healthy.ep.pt2").string(), "--inputs", inputs}, "out");
  CHECK(ep.code() == 4);
  CHECK(last_tool_line(ep).find("holds no AOTInductor model") != std::string::npos);
}

TEST_CASE("a package whose model library is damaged inside: the checksum ends the job, whatever the run did") {
  // The library is copied out unread and its checksum read beside the
  // baseline run: the damage is the verdict, not what the run made of it.
  const fs::path healthy = example("healthy.pt2");
  const std::string so = aoti_bisect::Package::open(healthy).select_model("").shared_object;
  auto stored = aoti_bisect::stored_entry(healthy, so);
  REQUIRE(stored.has_value());
  REQUIRE(stored->size >= (64 << 10));  // copied by the kernel, not streamed
  std::string bytes = aoti_bisect::read_file(healthy, "package");
  bytes[stored->data_offset + stored->size - 1] ^= 0x5A;  // the library's last byte
  aoti_bisect::write_file_atomic("flipped.pt2", bytes);
  auto r = run_tool({"run", "flipped.pt2", "--inputs", example("healthy.inputs.pt").string()}, "out");
  CHECK(r.code() == 4);
  CHECK(r.report["verdict"] == "could_not_test");
  CHECK(last_tool_line(r) == fmt::format("aoti-bisect: error: package 'flipped.pt2': entry '{}' is damaged (truncated "
                                         "or bad checksum); rebuild the package",
                                         so));
}

TEST_CASE("usage errors exit 2: unknown model, unknown option, bad config") {
  std::string inputs = example("healthy.inputs.pt").string();
  auto model = run_tool({"run", example("healthy.pt2").string(), "--inputs", inputs, "--model", "encoder"}, "out");
  CHECK(model.code() == 2);
  CHECK(last_tool_line(model).find("has no model 'encoder'; it holds: model") != std::string::npos);
  // Found after the report started: the report says so, not `running`.
  CHECK(model.report["verdict"] == "could_not_test");
  CHECK(model.report["error"].get<std::string>().find("has no model 'encoder'") != std::string::npos);

  auto option = run_tool({"run", example("healthy.pt2").string(), "--inputs", inputs, "--bogus"}, "");
  CHECK(option.code() == 2);
  CHECK(last_tool_line(option).find("--bogus") != std::string::npos);
  CHECK(last_tool_line(option).find("see 'aoti-bisect run --help'") != std::string::npos);  // run's options
  // An enum takes its names only: a number CLI11 would map is refused too.
  auto strategy = run_tool({"run", example("healthy.pt2").string(), "--inputs", inputs, "--strategy", "2"}, "");
  CHECK(strategy.code() == 2);
  CHECK(last_tool_line(strategy) ==
        "aoti-bisect: error: --strategy: '2' is not a strategy; one of: all, auto, "
        "bisect, linear; see 'aoti-bisect run --help'");

  auto frob = run_tool({"frob"}, "");
  CHECK(frob.code() == 2);
  CHECK(last_tool_line(frob) ==
        "aoti-bisect: error: unknown subcommand 'frob' (known: run, bisect, build, inspect, triage, triage-merge, "
        "verify, capture, setup); see 'aoti-bisect --help'");

  for (auto [option, value, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--timeout", "0", "--timeout: must be greater than 0, got 0"},
           {"--timeout", "nan", "--timeout: 'nan' is not a finite number"},
           {"--atol", "nan", "--atol: 'nan' is not a finite number"},
           {"--rtol", "-1", "--rtol: must be 0 or more, got -1"}}) {
    CAPTURE(option);
    CAPTURE(value);
    auto bad = run_tool({"run", example("healthy.pt2").string(), "--inputs", inputs, option, value}, "");
    CHECK(bad.code() == 2);
    CHECK(last_tool_line(bad).find(says) != std::string::npos);
    CHECK(last_tool_line(bad).size() < 200);
  }

  aoti_bisect::write_file_atomic("nightly.yaml", "repeats: 2\ntmeout: 5\n");
  auto config =
      run_tool({"run", example("healthy.pt2").string(), "--inputs", inputs, "--config", "nightly.yaml"}, "out");
  CHECK(config.code() == 2);
  CHECK(last_tool_line(config).find("aoti-bisect: nightly.yaml:2:1: error: unknown key 'tmeout'") == 0);
  CHECK_FALSE(fs::exists("out/report.json"));  // README: nothing ran, no report

  aoti_bisect::write_file_atomic("broken.yaml", "variants: [\n");
  auto yaml = run_tool({"run", example("healthy.pt2").string(), "--inputs", inputs, "--config", "broken.yaml"}, "out");
  CHECK(yaml.code() == 2);
  CHECK(last_tool_line(yaml).find("aoti-bisect: broken.yaml:") == 0);

  // A variant named like one of the profile's: found only once the package
  // named the profile, and still located, with no report (issue 51, item 6).
  aoti_bisect::write_file_atomic("dup.yaml", "repeats: 1\nvariants:\n  - name: poison\n    env: {A: \"1\"}\n");
  auto dup = run_tool({"run", example("healthy.pt2").string(), "--inputs", inputs, "--config", "dup.yaml"}, "out-dup");
  CHECK(dup.code() == 2);
  CHECK(last_tool_line(dup).find("aoti-bisect: dup.yaml:3:11: error: variant 'poison' is already in the cpu profile "
                                 "(rename it, or set 'variants_mode: replace')") == 0);
  CHECK_FALSE(fs::exists("out-dup/report.json"));
  CHECK_FALSE(fs::exists("out-dup/report.md"));
}

TEST_CASE("internal error: the runner cannot be started, exit 5 and a report") {
  auto r = run_tool({"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string()}, "out",
                    {{"AOTI_BISECT_RUNNER", "/nonexistent/aoti-bisect-runner"}});
  CHECK(r.code() == 5);
  CHECK(last_tool_line(r).find("cannot start the runner: execve '/nonexistent/aoti-bisect-runner': No such file or "
                               "directory (build it with scripts/build, or name one with AOTI_BISECT_RUNNER=PATH)") !=
        std::string::npos);
  CHECK(r.report["verdict"] == "internal_error");
}

TEST_CASE("NaN in the data: never clean; the input is named as where the NaN come from, exit 3") {
  // A healthy model fed a batch holding one NaN returns NaN outputs: the
  // user's run is broken, and no kernel made the NaN.
  auto r = run_healthy_with(example("healthy.nan_data.inputs.pt").string(), {"--no-matrix"});
  CHECK(r.code() == 3);
  CHECK(r.report["verdict"] == "not_isolated");
  REQUIRE(r.report["failure"].is_object());
  CHECK(r.report["failure"]["kind"] == "nonfinite");
  std::string line = r.report["failure"]["first_line"].get<std::string>();
  CHECK(line.find("the inputs hold NaN/Inf: input0 holds 1 NaN and 0 Inf (first at [2, 5])") != std::string::npos);
  CHECK(
      r.report["verdict_reason"].get<std::string>().find(
          "no call site made the NaN/Inf: they come from the inputs (input0 holds 1 NaN and 0 Inf (first at [2, 5])); "
          "check the data first") != std::string::npos);
  CHECK(r.report["culprit"].is_null());
  const auto& in = r.report["inputs"]["tensors"][0];
  CHECK(in["nan_count"] == 1);
  CHECK(in["inf_count"] == 0);
  CHECK(in["first_nonfinite"] == nlohmann::json::array({2, 5}));
  CHECK(e2e::read_text("out/report.md").find("1 NaN, 0 Inf, first at [2, 5]") != std::string::npos);
}

TEST_SUITE_END();
