// End-to-end: the job's first run probes every call site (issue 67), on
// real packages: a failure the probes hide is still found through a plain
// run, a flaky failure's rate is still measured by plain runs, and a crash
// in the probed first run is handled as a plain baseline's. Each case
// asserts the run counts and which runs were probed.

#include <string>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

namespace {

std::vector<std::string> default_args(const std::string& name, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run", example(name + ".pt2").string(), "--inputs",
                                   example(name + ".inputs.pt").string(), "--cache-dir",
                                   fs::absolute("build-cache").string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

bool probed(const nlohmann::json& run) { return run["probe_plan"] != "none"; }

// Only the first run and the search's runs probe; every other run is plain.
void check_only_first_and_search_probed(const nlohmann::json& runs) {
  for (size_t i = 0; i < runs.size(); ++i) {
    INFO(runs[i]["id"]);
    const bool search = runs[i]["group"] == "search";
    if (!(i == 0 || search)) {
      CHECK_FALSE(probed(runs[i]));
    }
  }
}

// The variant's row in the matrix table.
nlohmann::json variant_row(const nlohmann::json& report, const std::string& name) {
  for (const auto& v : report["matrix"]["variants"]) {
    if (v["name"] == name) {
      return v;
    }
  }
  return nlohmann::json();
}

}  // namespace

TEST_SUITE_BEGIN("e2e/first_run");

// One job on heap_garbage_nan; true where the probes hid the failure.
bool heap_garbage_job(const std::string& out) {
  auto meta = e2e::meta_of("heap_garbage_nan");
  auto r = run_tool(default_args("heap_garbage_nan", {"--no-matrix"}), out);
  INFO(r.err);
  REQUIRE(r.report.is_object());
  REQUIRE(r.report["failure"].is_object());
  CHECK(r.report["failure"]["kind"] == "nonfinite");
  const auto& runs = r.report["runs"];
  REQUIRE(runs.size() >= 2);
  CHECK(runs[0]["id"] == "baseline");
  CHECK(probed(runs[0]));
  if (runs[0]["outcome"] == "nonfinite") {
    // This time the probed run's bytes held NaN too: the search names the
    // reader from it, as for any other NaN.
    MESSAGE("the probed first run showed the NaN this time; the search used it");
    CHECK(r.code() == 1);
    CHECK(r.report["verdict"] == "isolated");
    CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
    return false;
  }
  CHECK(runs[0]["outcome"] == "ok");
  CHECK(runs[1]["id"] == "baseline.plain");
  CHECK_FALSE(probed(runs[1]));
  CHECK(runs[1]["outcome"] == "nonfinite");
  CHECK(r.err.find("aoti-bisect: the probed first run showed no failure: a plain run decides") != std::string::npos);
  // The plain run is the baseline that counts: 1 of 1.
  CHECK(r.report["failure"]["runs"] == 1);
  CHECK(r.report["failure"]["reproduced"] == 1);
  CHECK(r.report["failure"]["search_runs_counted"] == 0);
  // The search's own runs probe too and see no failure: said, not a culprit.
  CHECK(r.code() == 3);
  CHECK(r.report["verdict"] == "suppressed_by_instrumentation");
  CHECK(r.report["culprit"].is_null());
  for (size_t i = 2; i < runs.size(); ++i) {
    INFO(runs[i]["id"]);
    CHECK(runs[i]["group"] == "search");
    CHECK(runs[i]["outcome"] == "ok");
  }
  CHECK(r.out.find("ran: " + std::to_string(runs.size()) + " runs (2 of the flag matrix, " +
                   std::to_string(runs.size() - 2) + " of the search; " + std::to_string(runs.size() - 1) +
                   " probed)") != std::string::npos);
  return true;
}

TEST_CASE("heap_garbage_nan: a failure the probes hide is found through the plain run") {
  // The addmm reads a heap chunk nothing wrote; a plain run's bytes make NaN,
  // the probed run's heap history mostly leaves finite bytes there
  // (examples/probe_examples.py; 12 of 13 jobs on a quiet machine). Up to
  // three jobs, until one where the probes hid it; each checked either way.
  bool hidden = false;
  for (int i = 0; i < 3 && !hidden; ++i) {
    CAPTURE(i);
    hidden = heap_garbage_job("out" + std::to_string(i));
  }
  if (!hidden) {
    MESSAGE("the probed first run showed the NaN in three jobs: the plain-run path was not taken");
  }
}

TEST_CASE("signed_degree_flaky: the probed first run counts once, plain runs still measure the rate") {
  // NaN in about half the runs with 2 threads. Default options: the repeat
  // variant's 3 runs may take one search run made in the baseline's
  // environment, never more, and at least one run there is plain.
  auto r = run_tool(default_args("signed_degree_flaky"), "out", {{"OMP_NUM_THREADS", "2"}});
  INFO(r.err);
  REQUIRE(r.report["failure"].is_object());
  CHECK(r.report["verdict"] != "clean");
  const auto& runs = r.report["runs"];
  REQUIRE(runs.size() >= 2);
  CHECK(runs[0]["id"] == "baseline");
  CHECK(probed(runs[0]));
  check_only_first_and_search_probed(runs);
  const int counted = r.report["failure"]["search_runs_counted"].get<int>();
  CHECK(counted <= 1);
  int plain_in_baseline_env = 0;
  int matrix_runs = 0;  // a probed first run a plain one replaced is no observation
  const bool replaced = runs[1]["id"] == "baseline.plain";
  for (const auto& run : runs) {
    matrix_runs += run["group"] == "matrix" && !(replaced && run["id"] == "baseline") ? 1 : 0;
    if ((run["variant"] == "baseline" || run["variant"] == "repeat") && run["group"] == "matrix" && !probed(run)) {
      ++plain_in_baseline_env;
    }
  }
  CHECK(plain_in_baseline_env >= 1);
  CHECK(r.report["failure"]["runs"] == matrix_runs + counted);
  // The repeat variant still has its 3 observations, one of them perhaps the search's.
  auto repeat = variant_row(r.report, "repeat");
  REQUIRE(repeat.is_object());
  CHECK(repeat["runs"] == 3);
  int repeat_plain = 0;
  for (const auto& run : runs) {
    repeat_plain += run["variant"] == "repeat" ? 1 : 0;
  }
  CHECK(repeat_plain == 3 - counted);
  // The rate: k of n over the baseline environment's runs, as measured.
  auto base = variant_row(r.report, "baseline");
  const int k = base["reproduced"].get<int>() + repeat["reproduced"].get<int>();
  MESSAGE("baseline environment: ", k, " of 4 runs failed; ", counted, " of them the search's");
  if (k > 0 && k < 4) {
    CHECK(repeat["deterministic"] == false);
  }
}

TEST_CASE("wild_gather: a crash in the probed first run is handled as a plain baseline's") {
  // The first run probes and crashes; the matrix's plain runs follow, and
  // the search runs where the matrix chose (guard_pages): none of its runs
  // is in the baseline's environment, so all 3 repeats are plain.
  auto meta = e2e::meta_of("wild_gather");
  auto r = run_tool(default_args("wild_gather"), "out");
  INFO(r.err);
  CHECK(r.code() == 1);
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["failure"]["kind"] == "crash");
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  const auto& runs = r.report["runs"];
  REQUIRE(runs.size() >= 4);
  CHECK(runs[0]["id"] == "baseline");
  CHECK(probed(runs[0]));
  CHECK(runs[0]["outcome"] == "crash");
  check_only_first_and_search_probed(runs);
  for (int i = 1; i <= 3; ++i) {
    INFO(i);
    CHECK(runs[i]["id"] == "repeat." + std::to_string(i));
    CHECK(runs[i]["outcome"] == "crash");
  }
  CHECK(r.report["failure"]["search_runs_counted"] == 0);
  CHECK(r.report["bisection"]["variant"] == "guard_pages");
  int search = 0;
  for (const auto& run : runs) {
    search += run["group"] == "search" ? 1 : 0;
  }
  CHECK(r.report["failure"]["runs"] == runs.size() - search);
  CHECK(r.report["failure"]["reproduced"] == runs.size() - search);
}

TEST_SUITE_END();
