// End-to-end: `aoti-bisect capture --out CAP -- COMMAND` on real hosts
// (examples/hosts/): a Python loop whose 4th batch makes NaN, a loop that
// passes keyword arguments, a C++ host against the installed LibTorch that
// dies at call 3, and a program that loads no package. Asserts on
// capture.json, on the kept files loaded back, and on `run` from run_command.

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <doctest/doctest.h>

#include "e2e/capture_helpers.hpp"
#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;
using Json = nlohmann::json;

using namespace capture_test;

TEST_SUITE_BEGIN("e2e/capture");

TEST_CASE("a Python loop whose 4th batch makes NaN: call 4 kept, alone it fails, run names the culprit") {
  auto r = run_tool({"capture", "--out", "cap", "--", python_exe(), host_script("loop_nan.py").string(),
                     example("zero_row_norm.pt2").string()},
                    "");
  CHECK(r.code() == 0);  // the loop's own exit code: it only logs the NaN
  CHECK(r.out.find("step 6: 0 NaN in the outputs") != std::string::npos);  // its output passes through
  Json cap = capture_json("cap");
  REQUIRE(cap["calls"].size() == 6);
  CHECK(cap["processes"] == 1);
  for (int i = 0; i < 6; ++i) {
    const Json& c = cap["calls"][i];
    CHECK(c["index"] == i + 1);
    CHECK(c["model"] == "model");
    CHECK(c["package"].get<std::string>().find("zero_row_norm.pt2") != std::string::npos);
    CHECK(c["inputs"][0]["shape"] == Json::array({8, 16}));
    CHECK(c["status"] == (i == 3 ? "nonfinite" : "ok"));
  }
  CHECK(cap["calls"][3]["outputs_nan"].get<int>() > 0);
  const Json& bad = cap["first_bad"];
  REQUIRE(bad.is_object());
  CHECK(bad["index"] == 4);
  CHECK(bad["status"] == "nonfinite");
  CHECK(bad["alone"] == true);
  REQUIRE(bad["inputs"].size() == 1);
  CHECK(bad["history"].size() == 3);  // calls 1 to 3, within --keep 8
  CHECK(cap["last_completed"]["index"] == 3);
  CHECK(r.out.find("capture: call 4 of ") != std::string::npos);
  // The kept file holds the batch as it was passed: row 4 all zero.
  std::string rows = e2e::python(
      "import sys, torch\n"
      "x = torch.load(sys.argv[1], weights_only=True)[0]\n"
      "print(tuple(x.shape), int((x.abs().sum(1) == 0).nonzero()[0]), x.is_contiguous())\n",
      {fs::absolute(bad["inputs"][0].get<std::string>()).string()});
  CHECK(rows == "(8, 16) 3 True\n");
  // run_command reproduces it and names the divide.
  REQUIRE(cap["run_command"].is_string());
  auto words = words_of(cap["run_command"].get<std::string>());
  words.insert(words.end(), {"--no-matrix"});
  auto run = run_tool(words, "out", e2e::warm_inductor());
  CHECK(run.code() == 1);
  CHECK(run.report["culprit"]["kernel"].get<std::string>().find("div") != std::string::npos);
}

TEST_CASE("keyword arguments: the kept call is saved as the call spec has it, and run binds it") {
  auto r = run_tool({"capture", "--out", "cap", "--", python_exe(), host_script("loop_kwargs.py").string(),
                     example("kwargs_mask_nan.pt2").string()},
                    "");
  CHECK(r.code() == 0);
  Json cap = capture_json("cap");
  REQUIRE(cap["calls"].size() == 3);
  REQUIRE(cap["first_bad"].is_object());
  CHECK(cap["first_bad"]["index"] == 2);
  std::string form = e2e::python(
      "import sys, torch\n"
      "v = torch.load(sys.argv[1], weights_only=True)\n"
      "print(type(v).__name__, sorted(v[1]) if isinstance(v, tuple) and len(v) == 2 else v)\n"
      "print(int(v[1]['attention_mask'][1].sum()))\n",
      {fs::absolute(cap["first_bad"]["inputs"][0].get<std::string>()).string()});
  CHECK(form == "tuple ['attention_mask', 'input_ids', 'token_type_ids']\n0\n");
  auto words = words_of(cap["run_command"].get<std::string>());
  words.insert(words.end(), {"--no-matrix"});
  auto run = run_tool(words, "out", e2e::warm_inductor());
  CHECK(run.code() == 1);
  CHECK(run.report["culprit"]["kernel"].get<std::string>().find("softmax") != std::string::npos);
}

TEST_CASE("a C++ host against the installed LibTorch dies at call 3: an error, its inputs kept before it ran") {
  std::string host = e2e::python(
      "import subprocess, sys\n"
      "print(subprocess.run([sys.argv[1], sys.argv[2]], capture_output=True, text=True, check=True).stdout.strip())\n",
      {(fs::path(AOTI_BISECT_SOURCE_DIR) / "examples" / "hosts" / "build-cpp-host").string(),
       (example("zero_row_norm.pt2").parent_path() / ".hosts" / "cpp_host").string()});
  REQUIRE_FALSE(host.empty());
  host.erase(host.find_last_not_of('\n') + 1);
  auto r = run_tool({"capture", "--out", "cap", "--", host, example("token_id_range.pt2").string()}, "");
  CHECK(r.code() == 128 + 6);  // the uncaught exception: SIGABRT, passed through as a shell would
  Json cap = capture_json("cap");
  CHECK(cap["program"]["signal"] == "SIGABRT");
  REQUIRE(cap["calls"].size() == 3);
  CHECK(cap["calls"][0]["status"] == "ok");
  CHECK(cap["calls"][2]["status"] == "error");
  const Json& bad = cap["first_bad"];
  CHECK(bad["index"] == 3);
  CHECK(bad["first_line"].get<std::string>().find("index out of bounds") != std::string::npos);
  CHECK(bad["alone"] == true);
  std::string ids = e2e::python(
      "import sys, torch\n"
      "x = torch.load(sys.argv[1], weights_only=True)[0]\n"
      "print(int(x.max()), tuple(x.shape))\n",
      {fs::absolute(bad["inputs"][0].get<std::string>()).string()});
  CHECK(ids == "57 (2, 16)\n");
  auto words = words_of(cap["run_command"].get<std::string>());
  words.insert(words.end(), {"--no-matrix"});
  auto run = run_tool(words, "out", e2e::warm_inductor());
  CHECK(run.code() == 1);
  CHECK(run.report["failure"]["kind"] != "ok");
}

TEST_CASE("a program that loads no package: the one line, exit 4; a command that is not there: exit 2") {
  auto r = run_tool({"capture", "--out", "cap", "--", python_exe(), "-c", "print('hello')"}, "");
  CHECK(r.code() == 4);
  CHECK(r.out.find("hello") != std::string::npos);
  CHECK(r.out.find("capture: no AOTI package was called (the program exit 0") != std::string::npos);
  CHECK(capture_json("cap")["calls"].empty());
  auto missing = run_tool({"capture", "--out", "cap2", "--", "no-such-program-here"}, "");
  CHECK(missing.code() == 2);
  CHECK(e2e::error_line(missing) == "aoti-bisect: error: capture: 'no-such-program-here' is not on PATH");
}

TEST_SUITE_END();
