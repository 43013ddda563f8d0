// End-to-end: the runner's two ways of loading a model from the extracted
// package directory (lib/torchside/loader.cpp). LibTorch's package loader
// reads a directory from 2.13 on; before, the runner builds the container
// runner on the extracted .so itself. AOTI_BISECT_RUNNER_LOADER=container
// takes that fallback on every version, so these tests cover it where the
// suite runs: it must be invisible to the driver (same events, exit
// statuses, outputs) and extract nothing anywhere.

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"
#include "package/package.hpp"
#include "process/process.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::run_tool;

namespace {

const std::map<std::string, std::string> kFallback = {{"AOTI_BISECT_RUNNER_LOADER", "container"}};

std::vector<std::string> reference_run_args(const std::string& name, const std::vector<std::string>& more) {
  std::vector<std::string> args = {"run", example(name + ".pt2").string(), "--inputs",
                                   example(name + ".inputs.pt").string()};
  if (fs::exists(example(name + ".expected.pt"))) {
    args.insert(args.end(), {"--reference", example(name + ".expected.pt").string()});
  }
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Folders a LibTorch loader extracted into the temporary directory (it uses
// /tmp/XXXXXX, six characters) holding this package's wrapper source.
int loader_dirs_holding(const std::string& wrapper_file) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    if (e.path().filename().string().size() != 6 || !e.is_directory(ec)) {
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(e.path(), ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      n += it->path().filename() == wrapper_file;
    }
  }
  return n;
}

std::string wrapper_file_of(const std::string& name) {
  auto p = aoti_bisect::Package::open(example(name + ".pt2"));
  return fs::path(p.select_model("").wrapper_cpp).filename().string();
}

// The event kinds of one run, in order, and the fields of each kind.
std::vector<std::string> event_shape(const fs::path& events) {
  std::vector<std::string> shape;
  std::ifstream in(events);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) {
      continue;
    }
    std::string s = j.value("event", "?") + ":";
    for (const auto& [k, v] : j.items()) {
      s += " " + k;
    }
    shape.push_back(s);
  }
  return shape;
}

std::vector<std::string> output_checksums(const nlohmann::json& run) {
  std::vector<std::string> out;
  for (const auto& t : run["outputs"]) {
    out.push_back(t["checksum"]);
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/loader");

TEST_CASE("fallback loader: healthy and nan_midway give the same report, events and outputs as the default") {
  for (std::string name : {"healthy", "nan_midway"}) {
    CAPTURE(name);
    auto a = run_tool(reference_run_args(name, {"--no-matrix", "--no-bisect"}), "out-default");
    auto b = run_tool(reference_run_args(name, {"--no-matrix", "--no-bisect"}), "out-fallback", kFallback);
    REQUIRE(a.report.is_object());
    REQUIRE(b.report.is_object());
    CHECK(a.code() == b.code());
    CHECK(a.report["verdict"] == b.report["verdict"]);
    CHECK(a.report["failure"] == b.report["failure"]);
    REQUIRE(a.report["runs"].size() == 1);
    REQUIRE(b.report["runs"].size() == 1);
    CHECK(a.report["runs"][0]["outcome"] == b.report["runs"][0]["outcome"]);
    CHECK(output_checksums(a.report["runs"][0]) == output_checksums(b.report["runs"][0]));
    CHECK(event_shape("out-default/runs/baseline/events.jsonl") ==
          event_shape("out-fallback/runs/baseline/events.jsonl"));
  }
}

TEST_CASE("fallback loader: a crashing child leaks no extracted folder") {
  std::string wrapper = wrapper_file_of("wild_gather");
  REQUIRE_FALSE(wrapper.empty());
  int before = loader_dirs_holding(wrapper);
  auto r = run_tool(reference_run_args("wild_gather", {"--repeats", "1"}), "out", kFallback);
  // Interposition binds its hooks under the fallback loader too.
  CHECK(r.code() == 1);
  REQUIRE(r.report.is_object());
  CHECK(r.report["bisection"]["source"] == "interpose");
  CHECK(r.report["culprit"]["call_index"] == meta_of("wild_gather")["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["failure"]["kind"] == "crash");
  int sig = r.report["failure"]["signal"];
  CHECK((sig == SIGSEGV || sig == SIGBUS));
  CHECK(loader_dirs_holding(wrapper) == before);
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator("out")) {
    leftovers += e.path().filename().string().rfind(".work-", 0) == 0;
  }
  CHECK(leftovers == 0);
}

TEST_CASE("fallback loader: a model the directory lacks is cannot_test (status 12) for both loaders") {
  // The runner alone, on an extracted package, asked for a model it lacks.
  auto p = aoti_bisect::Package::open(example("healthy.pt2"));
  fs::path dir = p.extract("extracted-healthy");
  for (bool fallback : {false, true}) {
    CAPTURE(fallback);
    aoti_bisect::SpawnSpec spec;
    spec.argv = {AOTI_BISECT_RUNNER_BIN,
                 "--package-dir",
                 dir.string(),
                 "--model",
                 "absent",
                 "--device-key",
                 "cpu",
                 "--inputs",
                 example("healthy.inputs.pt").string(),
                 "--events",
                 fs::absolute("absent.jsonl").string()};
    spec.env = aoti_bisect::current_environment();
    if (fallback) {
      spec.env["AOTI_BISECT_RUNNER_LOADER"] = "container";
    }
    spec.stdout_path = fs::absolute("absent.stdout.txt");
    spec.stderr_path = fs::absolute("absent.stderr.txt");
    spec.timeout_s = 120;
    auto status = aoti_bisect::run_process(spec);
    CHECK(status.exit_code == 12);
    std::ifstream in("absent.jsonl");
    std::string last, line;
    while (std::getline(in, line)) {
      last = line;
    }
    auto j = nlohmann::json::parse(last, nullptr, false);
    CHECK(j.value("event", "") == "fatal");
    CHECK(j.value("kind", "") == "cannot_test");
    CHECK(j.value("message", "").rfind("model 'absent' cannot be loaded: ", 0) == 0);
  }
  std::error_code ec;
  fs::remove_all("extracted-healthy", ec);
}

TEST_SUITE_END();
