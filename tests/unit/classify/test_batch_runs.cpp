#include <doctest/doctest.h>

#include "classify/batch_runs.hpp"
#include "classify/classify.hpp"
#include "protocol/runner.hpp"

using namespace aoti_bisect;
using nlohmann::json;

namespace {

json info(const std::string& dtype, std::vector<int64_t> shape) {
  return {{"name", "input"},          {"dtype", dtype},  {"shape", shape},
          {"strides", json::array()}, {"device", "cpu"}, {"sha256", "x"}};
}

json stats(const std::string& dtype, double min, double max, int nan = 0) {
  return {{"name", "input"}, {"dtype", dtype}, {"shape", {8}}, {"numel", 8},  {"nan", nan},
          {"inf", 0},        {"min", min},     {"max", max},   {"mean", 0.0}, {"checksum", "x"}};
}

// One batch's events: its frame, its inputs (x float, target int64), a run.
std::vector<json> batch(int index, int of, double target_max, bool returned, int rows = 8, int x_nan = 0) {
  std::vector<json> ev = {
      {{"event", "batch"}, {"index", index}, {"of", of}, {"file", "/data/batch" + std::to_string(index) + ".pt"}},
      {{"event", "inputs"}, {"tensors", {info("float32", {rows, 16}), info("int64", {rows})}}},
      {{"event", "input_stats"}, {"tensors", {stats("float32", -2, 2, x_nan), stats("int64", 0, target_max)}}},
      {{"event", "run_begin"}}};
  if (returned) {
    ev.push_back({{"event", "run_end"}});
    ev.push_back({{"event", "outputs"}, {"tensors", {stats("float32", 0, 1)}}});
    ev.push_back({{"event", "batch_end"}, {"index", index}, {"nonfinite", false}});
  }
  return ev;
}

std::vector<json> loop(const std::vector<std::vector<json>>& batches, const std::vector<json>& tail) {
  std::vector<json> ev = {{{"event", "start"}, {"torch", "2.13.0"}}};
  for (size_t i = 0; i < batches.size(); ++i) {
    ev.insert(ev.end(), batches[i].begin(), batches[i].end());
    if (i == 0) {
      ev.push_back({{"event", "loaded"}});
    }
  }
  ev.insert(ev.end(), tail.begin(), tail.end());
  return ev;
}

BatchRun passing(const std::string& int_dtype, double lo, double hi, std::vector<int64_t> shape = {8, 16}) {
  BatchRun b;
  b.returned = true;
  b.inputs = {tensor_info_from_json(info("float32", shape)), tensor_info_from_json(info(int_dtype, {shape[0]}))};
  b.input_stats = {tensor_stats_from_json(stats("float32", -2, 2)), tensor_stats_from_json(stats(int_dtype, lo, hi))};
  return b;
}

}  // namespace

TEST_SUITE_BEGIN("classify/batch_runs");

TEST_CASE("a batch loop's events: each batch, and the run of the last one alone") {
  auto ev = loop({batch(0, 3, 3, true), batch(1, 3, 3, true), batch(2, 3, 4, false)},
                 {{{"event", "error"},
                   {"message", "index out of bounds: 0 <= tmp3 < 4"},
                   {"first_line", "index out of bounds: 0 <= tmp3 < 4"}}});
  auto runs = batch_runs(ev);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].returned);
  CHECK(runs[1].file == "/data/batch1.pt");
  CHECK_FALSE(runs[2].returned);
  CHECK(runs[2].input_stats[1].max == 4.0);
  CHECK(runs[2].inputs[0].shape == std::vector<int64_t>{8, 16});

  auto view = last_batch_view(ev);
  // Earlier batches' inputs, statistics and outputs are gone; the process's
  // events (start, loaded) and the last batch's stay, in order.
  int inputs = 0, outputs = 0;
  for (const auto& e : view) {
    inputs += event_kind(e) == EventKind::inputs ? 1 : 0;
    outputs += event_kind(e) == EventKind::outputs ? 1 : 0;
  }
  CHECK(inputs == 1);
  CHECK(outputs == 0);  // the failing batch wrote none: no earlier batch's outputs stand in for them
  CHECK(view.kind(0) == EventKind::start);
  ExitStatus st;
  st.how = ExitStatus::How::exited;
  st.exit_code = static_cast<int>(RunnerExit::model_error);
  Classification c = classify_run(st, view);
  CHECK(c.kind == OutcomeKind::device_assert);
  CHECK(c.input_stats.size() == 2);
  CHECK(c.input_stats[1].max == 4.0);
  CHECK(c.outputs.empty());

  std::vector<json> plain = {{{"event", "start"}}, {{"event", "outputs"}, {"tensors", json::array()}}};
  CHECK(batch_runs(plain).empty());
  Events plain_view = last_batch_view(plain);
  REQUIRE(plain_view.size() == plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    CHECK(plain_view[i] == plain[i]);
  }
}

TEST_CASE("what distinguishes the failing batch: shapes, dtypes, NaN/Inf, integers outside the passing range") {
  std::vector<BatchRun> ok = {passing("int64", 0, 3), passing("int64", 1, 3)};
  std::vector<const BatchRun*> p = {&ok[0], &ok[1]};

  BatchRun range = passing("int64", 0, 4);
  CHECK(distinguishing_facts(range, p, "batch2.pt") ==
        std::vector<std::string>{"batch2.pt: input 1 holds 4; the other batches hold 0..3"});
  BatchRun both = passing("int64", -1, 7);
  CHECK(distinguishing_facts(both, p, "b.pt") ==
        std::vector<std::string>{"b.pt: input 1 holds -1 and 7; the other batches hold 0..3"});
  BatchRun partial = passing("int64", 0, 2, {2, 16});
  CHECK(distinguishing_facts(partial, p, "batch4.pt") ==
        std::vector<std::string>{"batch4.pt: input 0 has shape [2, 16]; the other batches have [8, 16]",
                                 "batch4.pt: input 1 has shape [2]; the other batches have [8]"});
  BatchRun dtype = passing("int32", 0, 3);
  CHECK(distinguishing_facts(dtype, p, "c.pt") ==
        std::vector<std::string>{"c.pt: input 1 is int32; the other batches hold int64"});
  BatchRun nan = passing("int64", 0, 3);
  nan.input_stats[0].nan_count = 2;
  CHECK(distinguishing_facts(nan, p, "d.pt") ==
        std::vector<std::string>{"d.pt: input 0 holds 2 NaN and 0 Inf; the other batches hold none"});
  // Nothing stands out: no fact; no batch passed: nothing to compare with.
  CHECK(distinguishing_facts(passing("int64", 1, 2), p, "e.pt").empty());
  CHECK(distinguishing_facts(range, {}, "f.pt").empty());
}

TEST_CASE("what distinguishes failing samples: one value where the others hold several, shapes left out") {
  std::vector<BatchRun> ok = {passing("int64", 0, 1, {4, 16}), passing("int64", 0, 1, {2, 16})};
  std::vector<const BatchRun*> p = {&ok[0], &ok[1]};
  BatchRun padding = passing("int64", 0, 0, {1, 16});
  CHECK(distinguishing_facts(padding, p, "sample 4", "the samples that passed", false) ==
        std::vector<std::string>{"sample 4: input 1 holds only 0; the samples that passed hold 0..1"});
  // Shapes are facts between batches, not between sub-batches of one.
  CHECK(distinguishing_facts(passing("int64", 0, 1, {1, 16}), p, "sample 2", "the samples that passed", false).empty());
  // One value inside a range the others share at one value too: nothing.
  std::vector<BatchRun> flat = {passing("int64", 0, 0), passing("int64", 0, 0)};
  std::vector<const BatchRun*> q = {&flat[0], &flat[1]};
  CHECK(distinguishing_facts(passing("int64", 0, 0), q, "x.pt").empty());
}

TEST_SUITE_END();
