#include <csignal>

#include <doctest/doctest.h>

#include "classify/classify.hpp"
#include "protocol/runner.hpp"

using namespace aoti_bisect;
using nlohmann::json;

namespace {

ExitStatus exited(int code, const std::string& err = "") {
  ExitStatus s;
  s.how = ExitStatus::How::exited;
  s.exit_code = code;
  s.stderr_tail = err;
  return s;
}

ExitStatus exited(RunnerExit code, const std::string& err = "") {
  return exited(static_cast<int>(code), err);
}

json stats(const std::string& name, int nan, int inf = 0) {
  return {{"name", name}, {"dtype", "float32"}, {"shape", {2, 2}}, {"numel", 4},  {"nan", nan},
          {"inf", inf},   {"min", 0.0},         {"max", 1.0},      {"mean", 0.5}, {"checksum", "x"}};
}

std::vector<json> finished_run(int out_nan, int in_nan = 0, json comparison = nullptr) {
  std::vector<json> ev = {{{"event", "start"}, {"torch", "2.13.0"}},
                          {{"event", "input_stats"}, {"tensors", {stats("input0", in_nan)}}},
                          {{"event", "outputs"}, {"tensors", {stats("output0", out_nan)}}}};
  if (!comparison.is_null()) {
    comparison["event"] = "comparison";
    ev.push_back(comparison);
  }
  ev.push_back({{"event", "done"}});
  return ev;
}

}  // namespace

TEST_SUITE_BEGIN("classify");

TEST_CASE("classify_run: a clean run is ok") {
  Classification c = classify_run(exited(RunnerExit::ran), finished_run(0));
  CHECK(c.kind == OutcomeKind::ok);
  CHECK(c.first_line.empty());
  CHECK(c.environment.at("torch") == "2.13.0");
}

TEST_CASE("classify_run: a poison run that reached none of the model's allocations says so") {
  auto ev = finished_run(0);
  ev.insert(ev.begin() + 1, json{{"event", "poison"}, {"slots", 0}, {"unbound", {"aoti_torch_empty_strided"}}});
  CHECK(classify_run(exited(RunnerExit::ran), ev).poison_unreached ==
        "the model library has no GOT slot for aoti_torch_empty_strided (no buffer allocated through the C shim's "
        "PLT)");
  ev[1] = json{{"event", "poison"}, {"slots", 0}, {"message", "the model's GOT cannot be made writable: denied"}};
  CHECK(classify_run(exited(RunnerExit::ran), ev).poison_unreached ==
        "the model's GOT cannot be made writable: denied");
  ev[1] = json{{"event", "poison"}, {"slots", 3}};
  CHECK(classify_run(exited(RunnerExit::ran), ev).poison_unreached.empty());
  CHECK(classify_run(exited(RunnerExit::ran), finished_run(0)).poison_unreached.empty());
}

TEST_CASE("classify_run: NaN outputs from finite inputs are nonfinite, even when the reference agrees") {
  json cmp = {{"within_tolerance", true}, {"mismatched", 0}, {"total", 4}};
  Classification c = classify_run(exited(RunnerExit::ran), finished_run(3, 0, cmp));
  CHECK(c.kind == OutcomeKind::nonfinite);
  CHECK(c.first_line == "non-finite outputs from finite inputs (output0: 3 NaN, 0 Inf of 4)");
}

TEST_CASE("classify_run: NaN inputs that give NaN outputs are never ok; the line names the inputs") {
  std::vector<json> ev = finished_run(3, 1);
  ev[1]["tensors"][0]["first_nonfinite"] = {1, 0};
  Classification c = classify_run(exited(RunnerExit::ran), ev);
  CHECK(c.kind == OutcomeKind::nonfinite);
  CHECK(c.first_line ==
        "non-finite outputs (output0: 3 NaN, 0 Inf of 4); the inputs hold NaN/Inf: input0 holds 1 NaN and 0 Inf "
        "(first at [1, 0])");
  SUBCASE("finite outputs from NaN inputs (the model cleans them) are ok") {
    CHECK(classify_run(exited(RunnerExit::ran), finished_run(0, 1)).kind == OutcomeKind::ok);
  }
}

TEST_CASE("classify_run: outside tolerance is a mismatch with the figures") {
  json cmp = {{"within_tolerance", false}, {"mismatched", 4}, {"total", 4},  {"max_abs_error", 1.0},
              {"max_rel_error", 2.0},      {"atol", 1e-5},    {"rtol", 1e-6}};
  Classification c = classify_run(exited(RunnerExit::ran), finished_run(0, 0, cmp));
  CHECK(c.kind == OutcomeKind::mismatch);
  CHECK(c.first_line ==
        "4 of 4 output values outside tolerance: 4 finite values beyond it (max abs error 1, max "
        "rel error 2, atol 1e-05, rtol 1e-06)");
}

// Never an error of 0 for a failing comparison: values the reference holds
// as NaN where the outputs are finite are counted as such (issue 51).
TEST_CASE("mismatch_line: NaN/Inf on one side only counted apart from the finite errors") {
  Comparison c;
  c.within_tolerance = false;
  c.mismatched = 20;
  c.total = 20;
  c.nonfinite_mismatched = 20;
  c.atol = 1e-5;
  c.rtol = 1e-4;
  c.note = "NaN/Inf positions differ in output 0 (20 elements)";
  CHECK(mismatch_line(c) ==
        "20 of 20 output values outside tolerance: all 20 where NaN/Inf sit on one side only "
        "(NaN/Inf positions differ in output 0 (20 elements))");
  CHECK(mismatch_line(c).find("max abs error 0") == std::string::npos);
  c.mismatched = 25;
  c.total = 40;
  c.max_abs_error = 0.5;
  c.max_rel_error = 0.25;
  CHECK(mismatch_line(c) ==
        "25 of 40 output values outside tolerance: 20 where NaN/Inf sit on one side only "
        "(NaN/Inf positions differ in output 0 (20 elements)); 5 finite values beyond it (max abs "
        "error 0.5, max rel error 0.25, atol 1e-05, rtol 0.0001)");
  // A runner of another build that does not count them: what its note says, and the figures as what they are.
  c.nonfinite_mismatched = -1;
  CHECK(mismatch_line(c) ==
        "25 of 40 output values outside tolerance; NaN/Inf positions differ in output 0 (20 "
        "elements); max abs error 0.5, max rel error 0.25, atol 1e-05, rtol 0.0001 among the "
        "values finite on both sides");
}

// The runner's own limit on a call of the model (--time-limit, exit 14):
// a timeout that states its limit and the launch it was inside (issue 51).
TEST_CASE("classify_run: a call past the runner's time limit is a timeout with its limit and its launch") {
  std::vector<json> ev = {{{"event", "start"}, {"torch", "2.13.0"}},
                          {{"event", "loaded"}},
                          {{"event", "run_begin"}},
                          {{"event", "site_begin"}, {"site", 1}, {"kernel", "k1"}},
                          {{"event", "site_end"}, {"site", 1}, {"kernel", "k1"}},
                          {{"event", "site_begin"}, {"site", 2}, {"kernel", "k2"}},
                          {{"event", "time_limit"}, {"seconds", 0.5}, {"clock", 1234.5}}};
  ExitStatus st = exited(RunnerExit::time_limit);
  Classification c = classify_run(st, ev);
  CHECK(c.kind == OutcomeKind::timeout);
  CHECK(c.first_line == "stopped at its 0.5 s limit on a call of the model, inside call site 2 (k2)");
  REQUIRE(c.time_limit_s.has_value());
  CHECK(*c.time_limit_s == 0.5);
  CHECK(c.stopped_at == 1234.5);
  // The driver's own stop (the start and the load past their allowance) states its limit too.
  ExitStatus late;
  late.how = ExitStatus::How::timed_out;
  late.limit_s = 120.3;
  late.seconds = 120.31;
  CHECK(classify_run(late, {{{"event", "start"}}}).first_line ==
        "no exit within 120.3 s, before the model ran (its start and load)");
}

std::vector<json> started_run() {
  return {{{"event", "start"}, {"torch", "2.13.0"}},
          {{"event", "inputs"}, {"tensors", json::array()}},
          {{"event", "input_stats"}, {"tensors", json::array()}},
          {{"event", "loaded"}},
          {{"event", "run_begin"}}};
}

TEST_CASE("classify_run: signals are crashes, whichever signal") {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    ExitStatus s;
    s.how = ExitStatus::How::signaled;
    s.signal = sig;
    Classification c = classify_run(s, started_run());
    CHECK_FALSE(c.internal.has_value());
    CHECK(c.kind == OutcomeKind::crash);
    REQUIRE(c.signal.has_value());
    CHECK(*c.signal == sig);
    CHECK(c.first_line.rfind("killed by " + signal_name(sig), 0) == 0);
  }
}

TEST_CASE("classify_run: the index check line on stderr wins over the generic exception") {
  std::string err = "Error: index out of bounds: 0 <= tmp35 < 5L\n";
  std::vector<json> ev = {
      {{"event", "error"},
       {"message", "run_func_( container_handle_, ...) API call failed at model_container_runner.cpp, line 147"}}};
  Classification c = classify_run(exited(RunnerExit::model_error, err), ev);
  CHECK(c.kind == OutcomeKind::device_assert);
  CHECK(c.first_line == "Error: index out of bounds: 0 <= tmp35 < 5L");
}

TEST_CASE("classify_run: error texts map to their families") {
  struct Case {
    std::string message;
    OutcomeKind kind;
  };
  for (const Case& k : std::vector<Case>{
           {"CUDA error: an illegal memory access was encountered", OutcomeKind::crash},
           {"CUDA error: device-side assert triggered", OutcomeKind::device_assert},
           {"CUDA out of memory. Tried to allocate 2.00 GiB", OutcomeKind::oom},
           {"Expected all tensors to be on the same device, but found cuda:0 and cpu", OutcomeKind::device_mismatch},
           {"Could not run 'aten::foo' with arguments from the 'CPU' backend", OutcomeKind::missing_op},
           {"something else went wrong", OutcomeKind::error}}) {
    CAPTURE(k.message);
    Classification c = classify_run(exited(RunnerExit::model_error), {{{"event", "error"}, {"message", k.message}}});
    CHECK(c.kind == k.kind);
    CHECK(c.first_line == k.message);
  }
}

TEST_CASE("classify_run: runner statuses for inputs, unreadable files and internal failures") {
  Classification m = classify_run(
      exited(RunnerExit::input_mismatch),
      {{{"event", "input_mismatch"}, {"message", "input 0 (arg4_1): dtype int32, the model takes float32"}}});
  CHECK(m.kind == OutcomeKind::input_mismatch);
  CHECK(m.first_line == "input 0 (arg4_1): dtype int32, the model takes float32");

  Classification u = classify_run(exited(RunnerExit::cannot_test),
                                  {{{"event", "fatal"}, {"message", "inputs file 'x' is not in torch.save's format"}}});
  REQUIRE(u.cannot_test.has_value());
  CHECK(*u.cannot_test == "inputs file 'x' is not in torch.save's format");

  Classification i = classify_run(exited(RunnerExit::internal), {});
  CHECK(i.internal.has_value());
}

TEST_CASE("classify_run: a runner that never reached its first event is the tool's failure, not the model's") {
  Classification loader = classify_run(
      exited(127,
             "aoti-bisect-runner: error while loading shared libraries: libtorch_cpu.so: cannot open shared "
             "object file\n"),
      {});
  REQUIRE(loader.internal.has_value());
  CHECK(*loader.internal ==
        "the runner ended before its first event (exit 127): aoti-bisect-runner: error while loading shared "
        "libraries: libtorch_cpu.so: cannot open shared object file");
  Classification silent = classify_run(exited(RunnerExit::ran), {});
  REQUIRE(silent.internal.has_value());
  CHECK(silent.internal->rfind("the runner ended before its first event (exit 0)", 0) == 0);
  // An unreadable file is still a could-not-test, events or not.
  CHECK(classify_run(exited(RunnerExit::cannot_test), {}).cannot_test.has_value());
}

TEST_CASE("classify_run: a signal before the first event is the tool's failure") {
  ExitStatus s;
  s.how = ExitStatus::How::signaled;
  s.signal = SIGSEGV;
  s.stderr_tail = "noise\nfatal error: the runtime could not start\n";
  Classification c = classify_run(s, {});
  REQUIRE(c.internal.has_value());
  CHECK(*c.internal ==
        "the runner was killed by SIGSEGV before its first event: fatal error: the runtime could not start");
  // Once started, a signal (in the model's own loader, its kernels, an abort) stays the model's crash.
  std::vector<json> loading = {{{"event", "start"}}, {{"event", "input_stats"}, {"tensors", json::array()}}};
  Classification crash = classify_run(s, loading);
  CHECK_FALSE(crash.internal.has_value());
  CHECK(crash.kind == OutcomeKind::crash);
}

TEST_CASE("classify_run: a runner that ended without its closing events, its exit naming no model failure") {
  SUBCASE("exit 0 without done is the tool's failure, with the last event") {
    Classification c = classify_run(exited(RunnerExit::ran), started_run());
    REQUIRE(c.internal.has_value());
    CHECK(*c.internal == "the runner exited 0 without its closing events (last event 'run_begin')");
  }
  SUBCASE("exit 0 with the model's error event stays the model's failure") {
    std::vector<json> ev = started_run();
    ev.push_back({{"event", "error"}, {"message", "CUDA error: an illegal memory access was encountered"}});
    Classification c = classify_run(exited(RunnerExit::ran), ev);
    CHECK_FALSE(c.internal.has_value());
    CHECK(c.kind == OutcomeKind::crash);
  }
  SUBCASE("exit 127 after the first event, with the loader's first error line") {
    std::string err = "some warning\n./aoti-bisect-runner: symbol lookup error: ./libtorch_cpu.so: cannot bind\nmore\n";
    Classification c = classify_run(exited(127, err), {{{"event", "start"}}});
    REQUIRE(c.internal.has_value());
    CHECK(*c.internal ==
          "the runner ended without its closing events (exit 127, last event 'start'): "
          "./aoti-bisect-runner: symbol lookup error: ./libtorch_cpu.so: cannot bind");
    CHECK(classify_run(exited(126, "sh: cannot execute\n"), {{{"event", "start"}}}).internal.has_value());
  }
  SUBCASE("exit 127 while the model runs, for a symbol the model cannot bind, is the model's") {
    std::string err = "./runner: symbol lookup error: model.so: undefined symbol: aoti_torch_new_op\n";
    Classification c = classify_run(exited(127, err), started_run());
    CHECK_FALSE(c.internal.has_value());
    CHECK(c.kind == OutcomeKind::missing_op);
    CHECK(c.first_line == "./runner: symbol lookup error: model.so: undefined symbol: aoti_torch_new_op");
  }
  SUBCASE("exit 127 while the model runs, with no known line, is still the tool's") {
    CHECK(classify_run(exited(127, "something odd\n"), started_run()).internal.has_value());
  }
  SUBCASE("another exit status from inside the model stays the model's") {
    Classification c = classify_run(exited(3, "model: giving up\n"), started_run());
    CHECK_FALSE(c.internal.has_value());
    CHECK(c.kind == OutcomeKind::error);
    CHECK(c.first_line == "model: giving up");
  }
}

TEST_CASE("first_error_line: the loader's line, not the last one") {
  CHECK(first_error_line("a: error while loading shared libraries: libc10.so: cannot open shared object file\n"
                         "second line\n") ==
        "a: error while loading shared libraries: libc10.so: cannot open shared object file");
  CHECK(first_error_line("just text\nlast text\n") == "last text");
  CHECK(first_error_line("") == "");
}

TEST_CASE("classify_run: timeouts and unfinished runs") {
  ExitStatus t;
  t.how = ExitStatus::How::timed_out;
  t.seconds = 5;
  CHECK(classify_run(t, {}).kind == OutcomeKind::timeout);
  Classification c = classify_run(exited(RunnerExit::ran), {{{"event", "start"}}});
  CHECK(c.internal.has_value());  // exit 0 without done: see above
}

TEST_CASE("outcome table: names round-trip") {
  for (const auto& info : outcome_table()) {
    CHECK(outcome_from_name(info.name) == info.kind);
  }
  CHECK_FALSE(outcome_from_name("bogus").has_value());
  CHECK_FALSE(is_model_failure(OutcomeKind::input_mismatch));
  CHECK(is_model_failure(OutcomeKind::crash));
}

TEST_SUITE_END();
