// End-to-end: the culprit of NaN/Inf in the outputs is the site whose values
// reach them, not the first one made (evidence/reach.hpp). Models that make
// non-finite values on purpose or by accident and heal them before the
// outputs: the healed site is named as passed over, never as the culprit.

#include <filesystem>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;
using e2e::warm_inductor;

namespace {

std::vector<std::string> example_search_args(const std::string& name, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run",
                                   example(name + ".pt2").string(),
                                   "--inputs",
                                   example(name + ".inputs.pt").string(),
                                   "--no-matrix",
                                   "--cache-dir",
                                   fs::absolute("build-cache").string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// "call site 2 cpp_fused_log_0 made "
std::string fmt_site(const nlohmann::json& h) {
  return "call site " + std::to_string(h["call_index"].get<int>()) + " " + h["kernel"].get<std::string>() + " made ";
}

// The culprit is the example's, and its healed site is listed with what it made.
void check_reach(const e2e::Result& r, const nlohmann::json& meta, const std::string& read_by_kernel_part,
                 const std::string& out = "out") {
  CHECK(r.code() == 1);
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  const auto& b = r.report["bisection"];
  CHECK(b["status"] == "found");
  CHECK(b["self_check"].get<std::string>().rfind("passed", 0) == 0);
  REQUIRE(b["healed"].is_array());
  REQUIRE(b["healed"].size() == 1);
  const auto& h = b["healed"][0];
  CHECK(h["call_index"] == meta["healed"]["call_index"].get<int>() + 1);
  CHECK(h["kernel"] == meta["healed"]["kernel"]);
  CHECK(h["nan_count"].get<int>() + h["inf_count"].get<int>() > 0);
  REQUIRE(h["last_read_kernel"].is_string());
  CHECK(h["last_read_kernel"].get<std::string>().find(read_by_kernel_part) != std::string::npos);
  std::string note = h["note"].get<std::string>();
  CHECK(note.find(fmt_site(h)) == 0);
  CHECK(note.find(": not the cause") != std::string::npos);
  // The same sentence for a person, on the console and in report.md.
  CHECK(r.out.find("passed over: " + note) != std::string::npos);
  std::string md = read_text(out + "/report.md");
  size_t at = md.find("**Passed over:** " + fmt_site(h));
  REQUIRE(at != std::string::npos);
  CHECK(md.find(": not the cause", at) < md.find('\n', at));
}

}  // namespace

TEST_SUITE_BEGIN("e2e/reach");

TEST_CASE("NaN made by log and cleaned by nan_to_num before a later sqrt's: the sqrt kernel, the log passed over") {
  auto meta = meta_of("healed_nan");
  for (std::string source : {"interpose", "rewrite"}) {
    CAPTURE(source);
    auto r = run_tool(example_search_args("healed_nan", {"--source", source}), "out-" + source);
    check_reach(r, meta, "nan_to_num", "out-" + source);
    const auto& h = r.report["bisection"]["healed"][0];
    CHECK(h["cleaned"] == true);
    CHECK(h["by_design"] == false);
    CHECK(h["note"].get<std::string>().find("NaN in buf") != std::string::npos);
    // Two outputs hold NaN; both come from the sqrt.
    CHECK(r.report["bisection"]["reach"] == "the NaN in output 0 come from call site " +
                                                std::to_string(meta["culprit"]["call_index"].get<int>() + 1) + " " +
                                                meta["culprit"]["kernel"].get<std::string>() + "; output 1 shares it");
  }
}

TEST_CASE("CPP GEMM templates (freezing, max_autotune CPP): each template is a call site, the epilogue's sqrt named") {
  auto meta = meta_of("healed_gemm_template");
  REQUIRE(meta["inductor_configs"]["max_autotune_gemm_backends"] == "CPP");
  auto r = run_tool(example_search_args("healed_gemm_template"), "out");
  check_reach(r, meta, "nan_to_num");
  // Every template launch is seen: the run's call sites are the wrapper's.
  CHECK(r.report["bisection"]["call_sites"].get<size_t>() == meta["kernels"].size());
}

TEST_CASE("the same compiled under no_grad, where freezing takes effect: frozen weights, the sqrt's template named") {
  auto meta = meta_of("healed_gemm_frozen");
  auto r = run_tool(example_search_args("healed_gemm_frozen"), "out");
  check_reach(r, meta, "nan_to_num");
  CHECK(r.report["bisection"]["call_sites"].get<size_t>() == meta["kernels"].size());
}

TEST_CASE("NaN made by log and cleaned, through the exported program's level-1 build") {
  auto meta = meta_of("healed_nan");
  auto r = run_tool(example_search_args("healed_nan", {"--no-judge",
      "--exported-program", example("healed_nan.ep.pt2").string(),
                                                       "--source", "exported_program"}),
                    "out", warm_inductor());
  check_reach(r, meta, "nan_to_num");
}

TEST_CASE("-inf from log(0) healed by exp before a later 0/0: the division kernel") {
  auto meta = meta_of("healed_log_zero");
  auto r = run_tool(example_search_args("healed_log_zero"), "out");
  check_reach(r, meta, "exp");
  const auto& h = r.report["bisection"]["healed"][0];
  CHECK(h["nan_count"] == 0);
  CHECK(h["inf_count"].get<int>() > 0);
  CHECK(h["cleaned"] == true);
}

TEST_CASE("a fully masked attention row: the softmax makes the NaN; the mask's -inf is by design, passed over") {
  auto meta = meta_of("masked_row_nan");
  auto r = run_tool(example_search_args("masked_row_nan"), "out");
  check_reach(r, meta, "softmax");
  const auto& h = r.report["bisection"]["healed"][0];
  CHECK(h["by_design"] == true);
  CHECK(h["inf_count"].get<int>() > 0);
  CHECK(h["note"].get<std::string>().find("from its own infinity literal (by design)") != std::string::npos);
}

TEST_CASE("a wild index passed on by a kernel: its producer is the graph input; clamped then scaled: the kernel") {
  for (std::string name : {"index_passthrough_fault", "index_clamped_fault"}) {
    CAPTURE(name);
    auto meta = meta_of(name);
    auto r = run_tool(example_search_args(name), "out-" + name);
    CHECK(r.code() == 1);
    REQUIRE(r.report["culprit"].is_object());
    CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
    CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
    CHECK(r.report["culprit"]["phase"] == "launch");
    const auto& producer = r.report["culprit"]["producer"];
    REQUIRE(producer.is_object());
    std::string why = producer["why"].get<std::string>();
    CAPTURE(why);
    if (meta["producer"].contains("graph_input")) {
      CHECK(producer["call_index"].is_null());
      CHECK(producer["tensor"].get<std::string>().rfind("arg", 0) == 0);
      CHECK(why.rfind("graph input " + std::to_string(meta["producer"]["graph_input"].get<int>()), 0) == 0);
      CHECK(why.find("(passed on by call site") != std::string::npos);
    } else {
      REQUIRE(producer["call_index"].is_number());
      CHECK(producer["call_index"] == meta["producer"]["call_index"].get<int>() + 1);
      CHECK(producer["kernel"] == meta["producer"]["kernel"]);
      CHECK(why.find("passed on") == std::string::npos);
    }
  }
}

TEST_SUITE_END();
