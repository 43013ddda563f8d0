// End-to-end: the real aoti-bisect and aoti-bisect-runner on real AOTI
// packages made by examples/make_examples.py. Each test asserts on what the
// tool reported (report.json, exit code, the one error line).

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>

#include "common/files.hpp"
#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

namespace {

std::vector<std::string> run_args(const std::string& name, bool with_reference = true) {
  std::vector<std::string> args = {"run", example(name + ".pt2").string(), "--inputs",
                                   example(name + ".inputs.pt").string()};
  if (with_reference && fs::exists(example(name + ".expected.pt"))) {
    args.insert(args.end(), {"--reference", example(name + ".expected.pt").string()});
  }
  return args;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') {
    t.pop_back();
  }
  return t.substr(t.find_last_of('\n') == std::string::npos ? 0 : t.find_last_of('\n') + 1);
}

int count_runs(const nlohmann::json& report, const std::string& outcome) {
  int n = 0;
  for (const auto& r : report["runs"]) {
    n += r["outcome"] == outcome;
  }
  return n;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/run");

TEST_CASE("healthy model: exit 0, verdict clean, every run ok and within tolerance") {
  auto r = run_tool(with(run_args("healthy"), {"--repeats", "2"}), "out");
  CHECK(r.code() == 0);
  REQUIRE(r.report.is_object());
  CHECK(r.report["schema_version"] == 1);
  CHECK(r.report["verdict"] == "clean");
  CHECK(r.report["failure"].is_null());
  // baseline (probed: every call site read), baseline.plain (it showed no
  // failure: a plain run decides), repeat x2, and (--repeats wins)
  // check_inputs x2, poison x2 and perturb x2
  CHECK(r.report["runs"].size() == 10);
  CHECK(count_runs(r.report, "ok") == 10);
  CHECK(r.report["matrix"]["findings"] == nlohmann::json::array());
  CHECK(r.report["runs"][0]["comparison"]["within_tolerance"] == true);
  CHECK(r.report["package"]["device_key"] == "cpu");
  CHECK(r.report["package"]["call_sites"].get<int>() > 2);
  CHECK(r.report["environment"]["torch_version"].get<std::string>().rfind("2.", 0) == 0);
  CHECK(r.report["inputs"]["tensors"].size() >= 1);
  CHECK(r.report["inputs"]["tensors"][0]["sha256"].get<std::string>().size() == 64);
  // The package's SHA-256, hashed on its own thread while the package is extracted.
  CHECK(r.report["package"]["sha256"] == aoti_bisect::sha256_file(example("healthy.pt2")));
  CHECK(r.out.find("verdict: clean") != std::string::npos);
  CHECK(fs::exists("out/report.md"));
}

TEST_CASE("NaN model, --no-bisect: nonfinite, reproduced on every run, exit 3 (not isolated)") {
  auto r = run_tool(with(run_args("nan_midway"), {"--repeats", "2", "--junit", "--no-bisect"}), "out");
  CHECK(r.code() == 3);
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] == "not_isolated");
  CHECK(r.report["failure"]["kind"] == "nonfinite");
  // baseline, repeat x2, check_inputs x2, poison x2, perturb x2, scalar_aten x2 (after a
  // failure), then one_thread once (a steady failure: does it need several threads?)
  CHECK(r.report["failure"]["reproduced"] == 12);
  CHECK(r.report["failure"]["runs"] == 12);
  CHECK(r.report["failure"]["deterministic"] == true);
  CHECK(r.report["runs"][0]["outputs"][0]["nan_count"].get<int>() > 0);
  CHECK(r.report["culprit"].is_null());
  std::string junit = aoti_bisect::read_file("out/junit.xml", "junit");
  CHECK(junit.find("<testsuite name=\"aoti-bisect: flag matrix\" tests=\"12\" failures=\"12\"") != std::string::npos);
  CHECK(junit.find("<testsuite name=\"aoti-bisect: verdict\" tests=\"1\" failures=\"1\"") != std::string::npos);
}

TEST_CASE("NaN model, default options: the answer first, right after the baseline, and the matrix after it") {
  auto meta = e2e::meta_of("nan_midway");
  auto r = run_tool(run_args("nan_midway", false), "out");
  CHECK(r.code() == 1);
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  // The baseline probed every call site: it is the search's trace run. The
  // evidence run comes right after it and counts as the first repeat; the
  // matrix follows.
  const auto& runs = r.report["runs"];
  REQUIRE(runs.size() == 9);
  CHECK(runs[0]["id"] == "baseline");
  CHECK(runs[0]["probe_plan"] != "none");
  CHECK(runs[1]["id"] == "bisect.1.evidence");
  CHECK(runs[2]["id"] == "repeat.2");
  CHECK(runs[2]["probe_plan"] == "none");
  for (const auto& run : runs) {
    CHECK(run["id"].get<std::string>().find("trace") == std::string::npos);
  }
  CHECK(r.report["failure"]["reproduced"] == 9);  // the matrix's runs, the evidence run one of them
  CHECK(r.report["failure"]["search_runs_counted"] == 1);
  // The answer is printed as the trace run names it, before the evidence
  // run confirms it, and timed; both before the matrix starts.
  const std::string site = "call site " + std::to_string(meta["culprit"]["call_index"].get<int>() + 1) + " " +
                           meta["culprit"]["kernel"].get<std::string>() + " (cpp)";
  std::string answer = "aoti-bisect: answer after ";
  size_t at = r.err.find(answer);
  REQUIRE(at != std::string::npos);
  CHECK(r.err.find("s: " + site + ", named by the search from the job's first run (probed); the evidence run "
                   "confirms it next",
                   at) == r.err.find("s: ", at));
  std::string confirmed = "aoti-bisect: confirmed after ";
  size_t then = r.err.find(confirmed);
  REQUIRE(then != std::string::npos);
  CHECK(at < then);
  CHECK(r.err.find("s: isolated to " + site + "; the flag matrix runs next", then) == r.err.find("s: ", then));
  CHECK(then < r.err.find("[matrix]"));
  // Both before the culprit's one-kernel replay, which only explains it
  // (and takes about 15 s to build the first time); it runs once the runs
  // are done, after the matrix's last, never beside a fork server.
  size_t replay = r.err.find(": replaying it alone on its saved inputs");
  REQUIRE(replay != std::string::npos);
  CHECK(then < replay);
  CHECK(r.err.rfind("[matrix]") < replay);
  CHECK(r.err.find("scalar_aten.1") < replay);
  CHECK(r.err.find(answer, at + answer.size()) == std::string::npos);  // said once
  CHECK(r.err.find(confirmed, then + confirmed.size()) == std::string::npos);
  CHECK(r.err.find("was not confirmed") == std::string::npos);
  REQUIRE(r.report["first_answer_seconds"].is_number());
  REQUIRE(r.report["answer_confirmed_seconds"].is_number());
  CHECK(r.report["first_answer_seconds"].get<double>() <= r.report["answer_confirmed_seconds"].get<double>());
  CHECK(r.report["answer_confirmed_seconds"].get<double>() < r.report["total_seconds"].get<double>());
  CHECK(r.report["repro"]["command"].get<std::string>().find("--no-matrix --no-bisect") != std::string::npos);
  // The variants whose variables a forked run applies itself run on the
  // baseline's server, its model loaded (docs/runner.md), one_thread
  // (after the steady failure) too; scalar_aten (ATEN_CPU_CAPABILITY) has a
  // server of its own, and runs last so that it stops the baseline's after
  // every run that forks from it.
  auto start_of = [](const std::string& run) {
    std::istringstream in(e2e::read_text("out/runs/" + run + "/events.jsonl"));
    for (std::string line; std::getline(in, line);) {
      auto e = nlohmann::json::parse(line, nullptr, false);
      if (e.is_object() && e.value("event", "") == "start") {
        return e;
      }
    }
    return nlohmann::json();
  };
  for (const char* run : {"check_inputs.1", "poison.1", "perturb.1", "one_thread.1"}) {
    CAPTURE(run);
    const auto start = start_of(run);
    CHECK(start["forked_by_server"] == true);
    CHECK(start["server_runs_before"].get<int>() >= 4);  // the baseline, the search's two runs, the repeats
  }
  CHECK(start_of("scalar_aten.1")["server_runs_before"] == 0);
  // The baseline is the first run of its server (started ahead, while the
  // driver extracted the package: docs/runner.md), forked, not exec'd.
  CHECK(start_of("baseline")["forked_by_server"] == true);
  CHECK(start_of("baseline")["server_runs_before"] == 0);
  std::vector<std::string> order;
  for (const auto& run : r.report["runs"]) {
    order.push_back(run.value("id", ""));
  }
  REQUIRE(order.size() >= 2);
  CHECK(order.back() == "scalar_aten.1");
  CHECK(r.err.find("(variables read at the process's start: the model loaded again)") != std::string::npos);

  SUBCASE("--matrix-first: the whole matrix, then the search") {
    auto m = run_tool(with(run_args("nan_midway", false), {"--matrix-first"}), "out-mf");
    CHECK(m.code() == 1);
    CHECK(m.report["culprit"]["call_index"] == r.report["culprit"]["call_index"]);
    CHECK(m.report["runs"][1]["id"] == "repeat.1");
    CHECK(m.report["runs"].back()["id"] == "bisect.2.evidence");
    CHECK(m.err.find("aoti-bisect: answer after ") == std::string::npos);
    CHECK(m.report["answer_confirmed_seconds"].is_null());
  }
}

TEST_CASE("class index outside [0, C): device_assert whose first line names the index check") {
  auto r = run_tool(with(run_args("class_index"), {"--repeats", "1", "--no-bisect"}), "out");
  CHECK(r.code() == 3);
  REQUIRE(r.report.is_object());
  CHECK(r.report["failure"]["kind"] == "device_assert");
  std::string line = r.report["failure"]["first_line"];
  CHECK(line.find("index out of bounds") != std::string::npos);
  CHECK(r.report["failure"]["first_check"] == "inputs, targets, operator preconditions");
}

TEST_CASE(
    "class index outside [0, C) with --against-eager: eager raises too, the run goes on without a reference "
    "and isolates the index check") {
  auto meta = e2e::meta_of("class_index");
  auto r = run_tool({"run", example("class_index.pt2").string(), "--inputs", example("class_index.inputs.pt").string(),
                     "--against-eager", "--no-judge",
                         "--exported-program", example("class_index.ep.pt2").string(), "--no-matrix"},
                    "out");
  CHECK(r.code() == 1);
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["reference"].is_null());
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  bool noted = false;
  for (const auto& n : r.report["notes"]) {
    std::string text = n.get<std::string>();
    noted = noted || (text.find("the eager run of the exported program failed: IndexError") == 0 &&
                      text.find("output values are not compared with eager") != std::string::npos);
  }
  CHECK(noted);
}

// LibTorch's loader, given a .pt2, extracts it into a fresh /tmp/XXXXXX and
// leaks that folder when the process crashes. Such folders hold data/aotinductor.
int leaked_loader_dirs() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    std::string name = e.path().filename().string();
    if (name.size() != 6 || !e.is_directory(ec)) {
      continue;
    }
    bool holds_package = fs::exists(e.path() / "data" / "aotinductor", ec);
    for (const auto& sub : fs::directory_iterator(e.path(), ec)) {
      holds_package = holds_package || fs::exists(sub.path() / "data" / "aotinductor", ec);
    }
    n += holds_package;
  }
  return n;
}

TEST_CASE("wild gather: a crash with its signal, every run") {
  int leaked_before = leaked_loader_dirs();
  auto r = run_tool(with(run_args("wild_gather"), {"--repeats", "2", "--no-bisect"}), "out");
  CHECK(r.code() == 3);
  REQUIRE(r.report.is_object());
  CHECK(r.report["failure"]["kind"] == "crash");
  int sig = r.report["failure"]["signal"];
  CHECK((sig == SIGSEGV || sig == SIGBUS));
  // baseline, repeat x2, check_inputs x2, poison x2, perturb x2; then, the
  // failure being steady, one_thread once (does it need several threads?);
  // last, after a crash, scalar_aten x2 and guard_pages x2 (--repeats
  // wins), whose variables need the model loaded again
  CHECK(count_runs(r.report, "crash") == 14);
  CHECK(r.report["runs"].size() == 14);
  CHECK(r.report["runs"][9]["id"] == "one_thread.1");
  CHECK(r.report["runs"][10]["variant"] == "scalar_aten");
  CHECK(r.report["runs"][12]["variant"] == "guard_pages");
  CHECK(r.report["runs"][13]["id"] == "guard_pages.2");
  CHECK(r.report["runs"][0]["signal"] == sig);
  // The extracted package is removed even though every child crashed.
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator("out")) {
    leftovers += e.path().filename().string().rfind(".work-", 0) == 0;
  }
  CHECK(leftovers == 0);
  CHECK(leaked_loader_dirs() == leaked_before);
}

TEST_CASE("relu accuracy bug with the reference: mismatch with the error figures") {
  auto r = run_tool(with(run_args("relu_accuracy"), {"--repeats", "1"}), "out");
  CHECK(r.code() == 3);
  REQUIRE(r.report.is_object());
  CHECK(r.report["failure"]["kind"] == "mismatch");
  auto cmp = r.report["runs"][0]["comparison"];
  CHECK(cmp["within_tolerance"] == false);
  CHECK(cmp["mismatched"].get<int>() > 0);
  CHECK(cmp["max_abs_error"].get<double>() > 1e-3);
}

TEST_CASE("relu runtime_error bug: classified as what it really is") {
  auto r = run_tool(with(run_args("relu_runtime_error"), {"--repeats", "1", "--no-bisect"}), "out");
  CHECK(r.code() == 3);
  REQUIRE(r.report.is_object());
  // `throw 1` inside the kernel reaches the model container as a non-std
  // exception: AOTI reports "Unknown exception" and the run fails.
  CHECK(r.report["failure"]["kind"] == "error");
  CHECK(r.report["failure"]["first_line"] == "Unknown exception");
}

namespace {

// The start event of each run on record: (pid, forked_by_server).
std::vector<std::pair<int, bool>> run_starts(const nlohmann::json& report, const std::string& out) {
  std::vector<std::pair<int, bool>> starts;
  for (const auto& run : report["runs"]) {
    std::ifstream in(fs::path(out) / "runs" / run["id"].get<std::string>() / "events.jsonl");
    std::string line;
    std::getline(in, line);
    auto start = nlohmann::json::parse(line);
    starts.emplace_back(start["pid"].get<int>(), start.value("forked_by_server", false));
  }
  return starts;
}

// Whether each run on record started with the model its fork server had
// loaded (its `loaded` event's "preloaded"), by run id.
std::map<std::string, bool> runs_preloaded(const nlohmann::json& report, const std::string& out) {
  std::map<std::string, bool> preloaded;
  for (const auto& run : report["runs"]) {
    const std::string id = run["id"];
    std::ifstream in(fs::path(out) / "runs" / id / "events.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto e = nlohmann::json::parse(line, nullptr, false);
      if (!e.is_discarded() && e.value("event", "") == "loaded") {
        preloaded[id] = e.value("preloaded", false);
      }
    }
  }
  return preloaded;
}

// Processes that are a fork server of this build's runner, or forked from
// one (a run, or the short-lived middle process that starts it, keeps the
// server's command line): pid -> parent pid.
std::map<int, int> served_processes() {
  std::map<int, int> parent_of;
  std::error_code ec;
  // Processes come and go while /proc is read: the iterator advances with
  // increment(ec), and a file whose process ended between open and read
  // (ESRCH, thrown by the stream) means that process is gone. Never a throw:
  // this also runs on the watching thread, where a throw would abort.
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path dir = it->path();
    try {
      if (e2e::read_text(dir / "cmdline") != std::string(AOTI_BISECT_RUNNER_BIN) + std::string("\0--serve\0", 9)) {
        continue;
      }
      std::string stat = e2e::read_text(dir / "stat");
      size_t paren = stat.rfind(')');
      if (paren != std::string::npos) {
        parent_of[std::atoi(dir.filename().c_str())] = std::atoi(stat.c_str() + paren + 4);  // ") S PPID"
      }
    } catch (const std::exception&) {
      continue;
    }
  }
  return parent_of;
}
int runner_servers() {
  return static_cast<int>(served_processes().size());
}

}  // namespace

TEST_CASE("fork server: every CPU run its own process forked from one server; AOTI_BISECT_FORKSERVER=0 execs each") {
  auto served = run_tool(with(run_args("nan_midway", false), {"--repeats", "2"}), "served");
  auto execd =
      run_tool(with(run_args("nan_midway", false), {"--repeats", "2"}), "execd", {{"AOTI_BISECT_FORKSERVER", "0"}});
  REQUIRE(served.report.is_object());
  REQUIRE(execd.report.is_object());
  CHECK(served.code() == 1);
  CHECK(served.report["verdict"] == "isolated");
  CHECK(served.report["verdict"] == execd.report["verdict"]);
  CHECK(served.report["culprit"]["call_index"] == execd.report["culprit"]["call_index"]);
  CHECK(served.report["culprit"]["kernel"] == execd.report["culprit"]["kernel"]);
  auto a = run_starts(served.report, "served");
  auto b = run_starts(execd.report, "execd");
  REQUIRE(a.size() >= 5);  // baseline, two repeats, the trace, the search
  CHECK(a.size() == b.size());
  std::set<int> pids;
  for (auto [pid, forked] : a) {
    CHECK(forked);
    pids.insert(pid);
  }
  CHECK(pids.size() == a.size());  // never one process for two runs
  for (auto [pid, forked] : b) {
    CHECK_FALSE(forked);
  }
  // Forked runs start with the model their server loaded; exec'd ones load it.
  auto loaded_a = runs_preloaded(served.report, "served");
  auto loaded_b = runs_preloaded(execd.report, "execd");
  CHECK(loaded_a.size() == a.size());
  CHECK(loaded_b.size() == b.size());
  for (const auto& [id, preloaded] : loaded_a) {
    INFO(id);
    CHECK(preloaded);
  }
  for (const auto& [id, preloaded] : loaded_b) {
    INFO(id);
    CHECK_FALSE(preloaded);
  }
  // The server ends with the driver.
  int left = runner_servers();
  for (int i = 0; i < 50 && left > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = runner_servers();
  }
  CHECK(left == 0);
}

TEST_CASE("the model loaded once per environment: every run starts from the model as loaded, not as a run left it") {
  // first_call_nan updates a buffer on every call: only a freshly loaded
  // model's call makes NaN. Runs forked from a server that holds the loaded
  // model must all fail; one that saw an earlier run's state would not.
  auto meta = e2e::meta_of("first_call_nan");
  auto r = run_tool(run_args("first_call_nan", false), "out");
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  CHECK(r.report["failure"]["kind"] == "nonfinite");
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["failure"]["reproduced"] == r.report["failure"]["runs"]);  // every run, not only the first
  auto preloaded = runs_preloaded(r.report, "out");
  REQUIRE(preloaded.size() == r.report["runs"].size());
  for (const auto& [id, yes] : preloaded) {
    INFO(id);
    CHECK(yes);
  }
  // AOTI_BISECT_PRELOAD=0: each run loads the model itself; the same answer.
  auto own = run_tool(run_args("first_call_nan", false), "own", {{"AOTI_BISECT_PRELOAD", "0"}});
  REQUIRE(own.report.is_object());
  CHECK(own.code() == 1);
  CHECK(own.report["culprit"]["call_index"] == r.report["culprit"]["call_index"]);
  for (const auto& [id, yes] : runs_preloaded(own.report, "own")) {
    INFO(id);
    CHECK_FALSE(yes);
  }
}

// Each run's first events: its start (pid, persistent, runs_before) and
// its loaded event (buffers_restored), by run id.
std::map<std::string, std::pair<nlohmann::json, nlohmann::json>> run_beginnings(const nlohmann::json& report,
                                                                                const std::string& out) {
  std::map<std::string, std::pair<nlohmann::json, nlohmann::json>> beginnings;
  for (const auto& run : report["runs"]) {
    const std::string id = run["id"];
    std::ifstream in(fs::path(out) / "runs" / id / "events.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto e = nlohmann::json::parse(line, nullptr, false);
      if (!e.is_discarded() && e.value("event", "") == "start") {
        beginnings[id].first = e;
      } else if (!e.is_discarded() && e.value("event", "") == "loaded") {
        beginnings[id].second = e;
      }
    }
  }
  return beginnings;
}

TEST_CASE("persistent runner: runs share one process and one load, each starts from the buffers as loaded") {
  // The CUDA path (no fork after CUDA init), taken here on the CPU with
  // AOTI_BISECT_PERSISTENT=1. first_call_nan updates a buffer on every
  // call: a run that saw an earlier run's buffer would make no NaN.
  auto meta = e2e::meta_of("first_call_nan");
  auto r = run_tool(run_args("first_call_nan", false), "out", {{"AOTI_BISECT_PERSISTENT", "1"}});
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  CHECK(r.report["failure"]["kind"] == "nonfinite");
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["failure"]["reproduced"] == r.report["failure"]["runs"]);
  auto runs = run_beginnings(r.report, "out");
  REQUIRE(runs.count("baseline"));
  REQUIRE(runs.count("repeat.3"));
  std::map<int, int> runs_per_process;
  int later = 0;
  for (const auto& [id, b] : runs) {
    INFO(id);
    const auto& [start, loaded] = b;
    if (id.find("evidence") != std::string::npos) {
      CHECK_FALSE(start.value("persistent", true));  // the confirmation: a process of its own
      continue;
    }
    CHECK(start.value("persistent", false));
    CHECK(loaded.value("preloaded", false));
    ++runs_per_process[start["pid"].get<int>()];
    if (start.value("runs_before", 0) > 0) {
      ++later;
      CHECK(loaded.value("buffers_restored", -1) == 1);  // the one buffer the forward updates
    } else {
      CHECK_FALSE(loaded.contains("buffers_restored"));
    }
  }
  // The baseline (the trace too) loads the model; the evidence run, in a
  // process of its own, stops that server; the repeats share the next one.
  CHECK(later >= 1);
  CHECK(std::any_of(runs_per_process.begin(), runs_per_process.end(), [](auto p) { return p.second >= 2; }));
  CHECK(runs["repeat.3"].first["pid"] == runs["repeat.2"].first["pid"]);
}

TEST_CASE("persistent runner: a run that crashes ends its process; the driver sees the crash and starts another") {
  auto meta = e2e::meta_of("wild_gather");
  auto r = run_tool(run_args("wild_gather", false), "out", {{"AOTI_BISECT_PERSISTENT", "1"}});
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  CHECK(r.report["failure"]["kind"] == "crash");
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  std::set<int> pids;
  for (const auto& run : r.report["runs"]) {
    INFO(run["id"]);
    if (run["outcome"] == "crash") {
      CHECK(run["signal_name"] == "SIGSEGV");  // the stand-in died of the run's signal
    }
  }
  for (const auto& [id, b] : run_beginnings(r.report, "out")) {
    INFO(id);
    CHECK(b.first.value("runs_before", -1) == 0);  // after a crash, never a second run in that process
    pids.insert(b.first["pid"].get<int>());
  }
  CHECK(pids.size() == r.report["runs"].size());
}

TEST_CASE("fork server: at most two servers alive at once over a matrix of four environments") {
  std::atomic<bool> done{false};
  std::vector<std::map<int, int>> seen;  // what was alive, sampled every 20 ms
  std::thread watch([&] {
    while (!done) {
      seen.push_back(served_processes());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  auto r = run_tool(run_args("nan_midway", false), "out");
  done = true;
  watch.join();
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  CHECK(r.report["culprit"]["kernel"] == e2e::meta_of("nan_midway")["culprit"]["kernel"]);
  std::set<std::string> variants;
  for (const auto& run : r.report["runs"]) {
    variants.insert(run.value("variant", ""));
  }
  CHECK(variants.size() >= 3);  // the baseline's environment and at least two variants'
  int forked = 0;
  std::set<int> runs;
  for (auto [pid, by_server] : run_starts(r.report, "out")) {
    forked += by_server;
    runs.insert(pid);
  }
  CHECK(forked == static_cast<int>(r.report["runs"].size()));  // a stopped server is started again when asked for
  size_t most = 0;  // servers alive at once: neither a run nor forked by a server
  for (const auto& alive : seen) {
    most = std::max<size_t>(most, std::count_if(alive.begin(), alive.end(), [&](const auto& p) {
                              return !runs.count(p.first) && !alive.count(p.second);
                            }));
  }
  CHECK(most >= 1);
  CHECK(most <= 2);
}

TEST_CASE("--jobs runs matrix variants in parallel with the same verdict") {
  auto r = run_tool(with(run_args("nan_midway"), {"--repeats", "2", "--jobs", "2", "--no-bisect"}), "out");
  CHECK(r.code() == 3);
  CHECK(r.report["runs"].size() == 12);  // 11, and one_thread once after a steady failure
  CHECK(r.report["failure"]["reproduced"] == 12);
}

TEST_CASE("--jobs 2: two runs at a time, measured by their time") {
  // Every run of stuck_length is stopped at its 0.5 s limit. Runs made one
  // at a time inside the job cannot add up to more seconds than the job
  // took; two at a time they do.
  auto r = run_tool(
      with(run_args("stuck_length", false), {"--no-bisect", "--no-shrink", "--timeout", "0.5", "--jobs", "2"}), "out");
  REQUIRE(r.report.is_object());
  CHECK(r.report["failure"]["kind"] == "timeout");
  double runs_s = 0;
  for (const auto& run : r.report["runs"]) {
    if (run["group"] == "matrix" && run["id"] != "baseline") {  // the baseline runs alone, before the matrix
      runs_s += run["seconds"].get<double>();
    }
  }
  const double job_s = r.report["total_seconds"].get<double>();
  INFO("runs after the baseline: ", runs_s, " s; the job: ", job_s, " s");
  CHECK(r.report["runs"].size() >= 8);
  CHECK(runs_s > job_s);
}

TEST_CASE("--no-matrix runs the baseline only") {
  // The first run probes every call site (the search's trace); it shows no
  // failure, so a plain run decides: no variant of the matrix runs.
  auto r = run_tool(with(run_args("healthy"), {"--no-matrix"}), "out");
  CHECK(r.code() == 0);
  REQUIRE(r.report["runs"].size() == 2);
  CHECK(r.report["runs"][0]["id"] == "baseline");
  CHECK(r.report["runs"][0]["probe_plan"] != "none");
  CHECK(r.report["runs"][1]["id"] == "baseline.plain");
  CHECK(r.report["runs"][1]["probe_plan"] == "none");
  auto plain = run_tool(with(run_args("healthy"), {"--no-matrix", "--no-bisect"}), "out2");
  CHECK(plain.code() == 0);
  REQUIRE(plain.report["runs"].size() == 1);  // no search: a plain first run
  CHECK(plain.report["runs"][0]["probe_plan"] == "none");
}

// --timeout is the limit on each call of the model, after the load, kept by
// the runner's own timer (issue 51): however the run was started (forked
// from the fork server, exec'd), the same verdict, and the message states
// the limit.
TEST_CASE("--timeout is the limit on a call of the model: stated, kept, the same verdict run after run") {
  for (const auto& env : std::vector<std::map<std::string, std::string>>{{}, {{"AOTI_BISECT_FORKSERVER", "0"}}}) {
    CAPTURE(env.size());
    auto r =
        run_tool(with(run_args("stuck_length", false), {"--no-matrix", "--no-bisect", "--timeout", "0.3"}), "out", env);
    CHECK(r.code() == 3);
    REQUIRE(r.report.is_object());
    CHECK(r.report["failure"]["kind"] == "timeout");
    const auto& run = r.report["runs"][0];
    CHECK(run["exit"] == "stopped at its 0.3 s limit (exit 14)");
    CHECK(run["first_error_line"].get<std::string>().rfind("stopped at its 0.3 s limit on a call of the model", 0) ==
          0);
    CHECK(run["seconds"].get<double>() >= 0.3);
    CHECK(r.report["failure"]["first_line"].get<std::string>().find("0.3 s limit") != std::string::npos);
  }
  // A model whose call takes about a millisecond is never stopped by a
  // limit its load alone passes (the load is not the call): exec'd, each
  // run's LibTorch start and load take longer than 0.12 s (about 0.2 s on
  // this machine), and the run is clean; the limit is far above the call,
  // so load on the machine does not make it fail. A call stuck past 0.2 s
  // always is stopped. 5 runs each.
  double longest = 0;
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    auto fast = run_tool(with(run_args("healthy"), {"--no-matrix", "--no-bisect", "--timeout", "0.12"}), "fast",
                         {{"AOTI_BISECT_FORKSERVER", "0"}});
    CHECK(fast.code() == 0);
    CHECK(fast.report["verdict"] == "clean");
    longest = std::max(longest, fast.report["runs"][0]["seconds"].get<double>());
    auto stuck =
        run_tool(with(run_args("stuck_length", false), {"--no-matrix", "--no-bisect", "--timeout", "0.2"}), "stuck");
    CHECK(stuck.code() == 3);
    CHECK(stuck.report["failure"]["kind"] == "timeout");
    CHECK(stuck.report["runs"][0]["exit"] == "stopped at its 0.2 s limit (exit 14)");
  }
  CHECK(longest > 0.12);  // a run longer than the limit, not stopped: its load was not counted
}

// A limit the plain runs keep within but a run with probes may not: under
// load (a busy loop beside each job), whatever run it stops, the verdict
// never says the failure did not reproduce (issue 68, item 7).
TEST_CASE("a search run stopped at a tight --timeout is said to be that, on a loaded machine") {
  std::atomic<bool> done{false};
  std::thread busy([&] {
    volatile unsigned long spin = 0;
    while (!done.load(std::memory_order_relaxed)) {
      spin = spin + 1;
    }
  });
  int said = 0;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    auto r =
        run_tool(with(run_args("nan_midway", false), {"--no-matrix", "--timeout", "0.01"}), "out" + std::to_string(i));
    REQUIRE(r.report.is_object());
    const std::string reason = r.report["verdict_reason"];
    INFO(reason);
    CHECK(reason.find("did not reproduce") == std::string::npos);
    bool stopped = false;
    for (const auto& run : r.report["runs"]) {
      stopped = stopped || (run["group"] == "search" && run["outcome"] == "timeout");
    }
    if (r.report["failure"].is_object() && r.report["failure"]["kind"] == "nonfinite" && stopped &&
        r.report["verdict"] != "isolated") {
      ++said;
      CHECK(r.code() == 3);
      CHECK(r.report["verdict"] == "not_isolated");
      CHECK(reason.find("run, with probes, was stopped at its 0.01 s limit (--timeout), which the plain runs that "
                        "failed kept within; probes make a run slower: give a larger --timeout") != std::string::npos);
    }
  }
  done = true;
  busy.join();
  MESSAGE(said, " of 3 jobs had a search run stopped at the limit");
}

TEST_CASE("a launch stuck past the time limit (a length of 10^12 from the batch) is named; its run killed") {
  auto meta = e2e::meta_of("stuck_length");
  auto r = run_tool(with(run_args("stuck_length", false), {"--no-matrix", "--timeout", "3"}), "out");
  CHECK(r.code() == 1);
  REQUIRE(r.report.is_object());
  CHECK(r.report["failure"]["kind"] == "timeout");
  CHECK(r.report["verdict"] == "isolated");
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  std::string why = r.report["culprit"]["why"];
  CHECK(why.find("the launch never returned") == 0);
}

TEST_CASE("--exit-codes=git-bisect: 0 good, 1 bad (isolated and not_isolated), 125 cannot test, 128 usage") {
  CHECK(run_tool(with(run_args("healthy"), {"--no-matrix", "--exit-codes=git-bisect"}), "a").code() == 0);
  CHECK(run_tool(with(run_args("nan_midway"), {"--no-matrix", "--exit-codes=git-bisect"}), "b").code() == 1);
  CHECK(run_tool({"run", "missing.pt2", "--inputs", "x.pt", "--exit-codes", "git-bisect"}, "c").code() == 125);
  // not_isolated (3) is bad too; a usage error (2) aborts the bisection (128).
  auto d = run_tool(with(run_args("nan_midway"), {"--no-matrix", "--no-bisect", "--exit-codes=git-bisect"}), "d");
  CHECK(d.report["verdict"] == "not_isolated");
  CHECK(d.code() == 1);
  auto e = run_tool(with(run_args("nan_midway"), {"--no-matrix", "--model", "nosuch", "--exit-codes=git-bisect"}), "e");
  CHECK(e.err.find("nosuch") != std::string::npos);
  CHECK(e.code() == 128);
  CHECK(run_tool(with(run_args("nan_midway"), {"--no-matrix", "--model", "nosuch"}), "f").code() == 2);
}

TEST_CASE("Ctrl-C: children are killed, the partial report is written, exit 130") {
  aoti_bisect::SpawnSpec spec;
  spec.argv = {AOTI_BISECT_BIN,
               "run",
               example("healthy.pt2").string(),
               "--inputs",
               example("healthy.inputs.pt").string(),
               "--repeats",
               "200",
               "--out",
               "out-int"};
  spec.env = aoti_bisect::current_environment();
  spec.env["AOTI_BISECT_RUNNER"] = AOTI_BISECT_RUNNER_BIN;
  aoti_bisect::ProcessSet set;
  int token = set.start(spec);
  // Wait until a few runs are on record, then interrupt the driver alone.
  for (int i = 0; i < 600 && !fs::exists("out-int/runs/repeat.2/events.jsonl"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  int pid = -1;
  for (const auto& e : fs::directory_iterator("out-int")) {
    std::string n = e.path().filename().string();
    if (n.rfind(".work-", 0) == 0) {
      pid = std::stoi(n.substr(6));
    }
  }
  REQUIRE(pid > 0);
  ::kill(pid, SIGINT);
  auto [tok, status] = set.wait_any();
  CHECK(tok == token);
  CHECK(status.how == aoti_bisect::ExitStatus::How::exited);
  CHECK(status.exit_code == 130);
  std::ifstream in("out-int/report.json");
  auto report = nlohmann::json::parse(in);
  CHECK(report["verdict"] == "interrupted");
  CHECK(report["runs"].size() >= 2);
  CHECK(report["runs"].size() < 201);
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("e2e/run");

TEST_CASE("--against-eager: the exported program run eagerly is the reference") {
  auto wrong = run_tool({"run", example("relu_accuracy.pt2").string(), "--inputs",
                         example("relu_accuracy.inputs.pt").string(), "--against-eager", "--no-judge",
                             "--exported-program",
                         example("relu_accuracy.ep.pt2").string(), "--repeats", "1", "--no-bisect"},
                        "out");
  CHECK(wrong.code() == 3);
  CHECK(wrong.report["failure"]["kind"] == "mismatch");
  CHECK(wrong.report["reference"].get<std::string>().find("eager") != std::string::npos);
  CHECK(wrong.report["runs"][0]["comparison"]["max_abs_error"].get<double>() > 1.0);

  auto right = run_tool({"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string(),
                         "--against-eager", "--no-judge",
                             "--exported-program", example("healthy.ep.pt2").string(), "--no-matrix"},
                        "out2");
  CHECK(right.code() == 0);
  CHECK(right.report["runs"][0]["comparison"]["within_tolerance"] == true);

  auto missing = run_tool(
      {"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string(), "--against-eager"},
      "out3");
  CHECK(missing.code() == 2);
  CHECK(missing.err.find("--against-eager needs the exported program") != std::string::npos);
}

TEST_SUITE_END();

namespace {

std::string fmt_of(int n) {
  return "of the flag matrix's " + std::to_string(n) + (n == 1 ? " run" : " runs");
}

// Every count of the job's runs, as each output prints it, against
// report.json's runs[] (issue 51, item 1).
void check_counts_agree(const e2e::Result& r, const fs::path& out, const std::string& label) {
  INFO(label);
  REQUIRE(r.report.is_object());
  const auto& runs = r.report["runs"];
  std::map<std::string, int> by_group;
  for (const auto& run : runs) {
    by_group[run["group"].get<std::string>()] += 1;
  }
  CHECK(r.report["run_counts"] == nlohmann::json(by_group));
  // Console: the counters count up to the last run, with no total, and the
  // closing line gives the same total and groups.
  std::string last = "  [" + std::to_string(runs.size()) + "] ";
  CHECK(r.err.find(last) != std::string::npos);
  CHECK(r.err.find("  [" + std::to_string(runs.size() + 1) + "] ") == std::string::npos);
  CHECK(r.err.find("/" + std::to_string(runs.size()) + "] ") == std::string::npos);
  std::string total = std::to_string(runs.size()) + (runs.size() == 1 ? " run (" : " runs (");
  CHECK(r.out.find("ran: " + total) != std::string::npos);
  std::string md = e2e::read_text(out / "report.md");
  CHECK(md.find("_" + total) != std::string::npos);
  int matrix = by_group.count("matrix") ? by_group["matrix"] : 0;
  if (by_group.count("search")) {
    std::string search = std::to_string(by_group["search"]) + " of the search";
    CHECK(r.out.find(search) != std::string::npos);
    CHECK(md.find(search) != std::string::npos);
  }
  // The verdict's "k of the flag matrix's n runs" is the matrix's count.
  if (r.report["failure"].is_object() && r.report["verdict"] != "could_not_test") {
    // The search's runs the matrix counted (issue 67) are in the search's group.
    const int counted = r.report["failure"]["search_runs_counted"].get<int>();
    CHECK(r.report["failure"]["runs"] == matrix + counted);
    std::string of = fmt_of(matrix + counted);
    CHECK(r.report["verdict_reason"].get<std::string>().find(of) != std::string::npos);
    CHECK(md.find(of) != std::string::npos);
  }
  // junit: one case per run, in one testsuite per group, and the verdict's own.
  std::string junit = e2e::read_text(out / "junit.xml");
  size_t cases = 0;
  for (size_t at = junit.find("<testcase "); at != std::string::npos; at = junit.find("<testcase ", at + 1)) {
    ++cases;
  }
  CHECK(cases == runs.size() + 1);
  for (const auto& [group, n] : by_group) {
    std::string name = group == "matrix" ? "flag matrix" : group;
    CHECK(junit.find("<testsuite name=\"aoti-bisect: " + name + "\" tests=\"" + std::to_string(n) + "\"") !=
          std::string::npos);
  }
  CHECK(junit.find("<testsuite name=\"aoti-bisect: verdict\" tests=\"1\"") != std::string::npos);
  // Builds: the console's words are report.json's two numbers.
  int built = r.report["builds"]["count"], hits = r.report["builds"]["cache_hits"];
  if (built + hits > 0) {
    std::string words =
        built == 0 ? std::string("no build run") : std::to_string(built) + (built == 1 ? " build run" : " builds run");
    CHECK(r.out.find(words) != std::string::npos);
    if (hits > 0) {
      CHECK(r.out.find(std::to_string(hits) + " from the cache") != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("one count of runs per job: the console, the verdict, report.md, report.json and junit.xml agree") {
  SUBCASE("a NaN found first, the matrix after") {
    auto r = run_tool(with(run_args("nan_midway", false), {"--junit"}), "out");
    CHECK(r.code() == 1);
    check_counts_agree(r, "out", "nan_midway");
    CHECK(r.report["run_counts"]["search"] == 1);  // the evidence run: the first run was the trace
    // The plan announced is this job's: 7 runs, then 1 after a steady failure.
    CHECK(r.err.find("the flag matrix follows (7 runs, then 1 more after a steady failure") != std::string::npos);
    CHECK(r.report["run_counts"]["matrix"] == 1 + 6 + 1);  // one repeat was the evidence run
    // One hook per function: the note says how many call sites they serve.
    CHECK(r.err.find(" on the functions the " + std::to_string(r.report["package"]["call_sites"].get<int>()) +
                     " call sites call, one per function") != std::string::npos);
    // The confirm step's range is what its note says was probed.
    for (const auto& step : r.report["bisection"]["steps"]) {
      if (step["purpose"] == "confirm") {
        std::string note = step["note"];
        CHECK(note.find("probed call sites 1-" + std::to_string(step["hi"].get<int>()) + ";") != std::string::npos);
      }
    }
  }
  SUBCASE("a crash, searched after the matrix") {
    auto r = run_tool(with(run_args("wild_gather"), {"--junit"}), "out-crash");
    CHECK(r.code() == 1);
    check_counts_agree(r, "out-crash", "wild_gather");
  }
  SUBCASE("a clean model") {
    auto r = run_tool(with(run_args("healthy"), {"--junit"}), "out-clean");
    CHECK(r.code() == 0);
    check_counts_agree(r, "out-clean", "healthy");
    CHECK(r.report["verdict_reason"].get<std::string>().find(
              "no failure in " + std::to_string(r.report["runs"].size()) + " runs") != std::string::npos);
  }
}
