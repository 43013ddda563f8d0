#include <fstream>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

using e2e::example;
using e2e::run_tool;

TEST_SUITE_BEGIN("e2e/inspect");

TEST_CASE("inspect --json: device key, inputs and call sites in launch order") {
  auto r = run_tool({"inspect", example("nan_midway.pt2").string(), "--json"}, "");
  CHECK(r.code() == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["models"].size() == 1);
  auto m = j["models"][0];
  CHECK(m["name"] == "model");
  CHECK(m["device_key"] == "cpu");
  CHECK(m["instrumented"] == false);
  CHECK(j["exported_programs"].empty());
  // The example's own record of its kernels (grep of the wrapper) agrees.
  auto meta = nlohmann::json::parse(std::ifstream(example("nan_midway.json")));
  REQUIRE(m["call_sites"].size() == meta["kernels"].size());
  for (size_t i = 0; i < meta["kernels"].size(); ++i) {
    CHECK(m["call_sites"][i]["kernel"] == meta["kernels"][i]);
    CHECK(m["call_sites"][i]["index"] == i + 1);
  }
  CHECK(m["call_sites"][4]["kind"] == "cpp");
  CHECK(m["call_sites"][1]["kind"] == "extern");
  CHECK(m["num_inputs"] == 1);
  CHECK(m["inputs"][0]["dtype"] == "float32");
}

TEST_CASE("inspect table and errors") {
  auto r = run_tool({"inspect", example("class_index.pt2").string()}, "");
  CHECK(r.code() == 0);
  CHECK(r.out.find("device key   cpu") != std::string::npos);
  CHECK(r.out.find("cpp_fused__log_softmax_mul_nll_loss_forward_2") != std::string::npos);
  CHECK(r.out.find("instrumented no") != std::string::npos);
  // One statement of the torch: the package's header line agrees with the
  // model's "built with" (issue 51, item 6).
  size_t built = r.out.find("  built with   torch ");
  REQUIRE(built != std::string::npos);
  const size_t from = built + std::string("  built with   torch ").size();
  std::string version = r.out.substr(from, r.out.find(' ', from) - from);
  CHECK(version.rfind("2.", 0) == 0);
  CHECK(r.out.find("torch        " + version + " (from the compile command") != std::string::npos);
  CHECK(r.out.find("not recorded") == std::string::npos);
  auto bad = run_tool({"inspect", "nope.pt2"}, "");
  CHECK(bad.code() == 4);
  CHECK(bad.err == "aoti-bisect: error: package 'nope.pt2' does not exist\n");
  auto model = run_tool({"inspect", example("healthy.pt2").string(), "--model", "x"}, "");
  CHECK(model.code() == 2);
}

TEST_SUITE_END();
