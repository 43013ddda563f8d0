// Many batches end to end (issue 26): a data loader's batches run in one
// process in the given order; the first that fails is named with what
// distinguishes it, run alone, and searched. Real packages exported with a
// dynamic batch dimension (examples/make_examples.py loader_*).

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::read_text;
using e2e::run_tool;
using Json = nlohmann::json;

namespace {

std::string s(const fs::path& p) {
  return p.string();
}

bool has_fact(const Json& report, const std::string& fact) {
  for (const auto& f : report["failure"]["batch"]["facts"]) {
    if (f.get<std::string>().find(fact) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/batches");

TEST_CASE("a loader's third batch of 5 holds a target of 4 among four classes: the batch, the value, the loss kernel") {
  auto meta = meta_of("loader_class_index");
  auto r = run_tool({"run", s(example("loader_class_index.pt2")), "--inputs",
                     s(example("loader_class_index.batch*.pt")), "--repeats", "1"},
                    "out");
  CHECK_MESSAGE(r.code() == 1, r.err);
  REQUIRE(r.report["failure"].is_object());
  CHECK(r.report["failure"]["kind"] == "device_assert");
  const Json& batch = r.report["failure"]["batch"];
  REQUIRE(batch.is_object());
  CHECK(batch["index"] == 2);
  CHECK(batch["file"].get<std::string>().find("loader_class_index.batch2.pt") != std::string::npos);
  CHECK(has_fact(r.report, "loader_class_index.batch2.pt: input 1 holds 4; the other batches hold 0..3"));
  CHECK(r.report["needs_history"] == false);
  REQUIRE(r.report["batches"].size() == 5);
  CHECK(r.report["batches"][1]["outcome"] == "ok");
  CHECK(r.report["batches"][2]["outcome"] == "device_assert");
  CHECK(r.report["batches"][2]["first_line"].get<std::string>().find("index out of bounds") != std::string::npos);
  CHECK(r.report["batches"][3]["outcome"] == "not_run");
  // The loss kernel, named from the failing batch alone.
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["culprit"]["kernel"].get<std::string>().find("nll_loss") != std::string::npos);
  // Then shrunk inside the failing batch: target[5] = 4 is the sixth sample,
  // and the reproduce command runs it alone.
  const Json& minimal = r.report["inputs"]["minimal"];
  REQUIRE(minimal.is_object());
  CHECK(minimal["samples"] == Json::array({6}));
  CHECK(minimal["of"] == 8);
  CHECK(minimal["alone"] == true);
  CHECK(minimal["facts"] == Json::array({"sample 6: input 1 holds 4; the samples that passed hold 0..3"}));
  CHECK(r.report["reproduce_command"].get<std::string>().find("--inputs out/repro/minimal.inputs.pt --no-matrix") !=
        std::string::npos);
  // The report says it where a person reads it, and the progress showed the loop.
  std::string md = read_text("out/report.md");
  CHECK(md.find("## Batches") != std::string::npos);
  // Numbered from 1, like call sites: batch2.pt is the third (report.json's index is 0-based).
  size_t said = md.find("batch 3 of 5 (");
  CHECK(said != std::string::npos);
  CHECK(md.find("loader_class_index.batch2.pt) failed first", said) != std::string::npos);
  CHECK(md.find("| 3 | `") != std::string::npos);
  CHECK(md.find("input 1 holds 4; the other batches hold 0..3") != std::string::npos);
  CHECK(r.out.find("input 1 holds 4; the other batches hold 0..3") != std::string::npos);
  // (The per-batch progress line comes from watching the events while the
  // loop runs: every 10 s on a plain stderr, so none in a loop this short.)
  CHECK_MESSAGE(r.err.find("[batches] 5 batches in one process, in the given order") != std::string::npos, r.err);
}

TEST_CASE("a folder of batches where only the last, partial one fails: its shape stands out, its kernel is named") {
  auto meta = meta_of("loader_partial");
  fs::create_directories("loader");
  for (int i = 0; i < 5; ++i) {
    std::string name = "loader_partial.batch" + std::to_string(i) + ".pt";
    fs::copy_file(example(name), fs::path("loader") / ("step" + std::to_string(i) + ".pt"));
  }
  auto r = run_tool({"run", s(example("loader_partial.pt2")), "--inputs", "loader", "--repeats", "1"}, "out");
  CHECK_MESSAGE(r.code() == 1, r.err);
  CHECK(r.report["failure"]["kind"] == "nonfinite");
  CHECK(r.report["failure"]["batch"]["index"] == 4);
  CHECK(r.report["failure"]["batch"]["file"] == "loader/step4.pt");
  CHECK(has_fact(r.report, "step4.pt: input 0 has shape [2, 16]; the other batches have [8, 16]"));
  CHECK(r.report["needs_history"] == false);
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  // The report's inputs are the failing batch's.
  CHECK(r.report["inputs"]["path"] == "loader/step4.pt");
}

TEST_CASE("a healthy list: clean, with the count, in one run") {
  std::vector<std::string> args = {"run", s(example("loader_class_index.pt2"))};
  for (int i : {0, 1, 3, 4}) {
    args.insert(args.end(), {"--inputs", s(example("loader_class_index.batch" + std::to_string(i) + ".pt"))});
  }
  auto r = run_tool(args, "out");
  CHECK_MESSAGE(r.code() == 0, r.err);
  CHECK(r.report["verdict"] == "clean");
  CHECK(r.report["verdict_reason"] == "no failure in 4 batches (one run; no crash, no NaN/Inf)");
  CHECK(r.report["runs"].size() == 1);
  REQUIRE(r.report["batches"].size() == 4);
  for (const auto& b : r.report["batches"]) {
    CHECK(b["outcome"] == "ok");
  }
  CHECK(r.report["failure"].is_null());
}

TEST_CASE("--calls N: the same batch N times in one process; the failing call's number") {
  auto clean = run_tool({"run", s(example("loader_class_index.pt2")), "--inputs",
                         s(example("loader_class_index.batch0.pt")), "--calls", "3"},
                        "out");
  CHECK_MESSAGE(clean.code() == 0, clean.err);
  CHECK(clean.report["verdict_reason"] == "no failure in 3 calls (one run; no crash, no NaN/Inf)");
  auto bad = run_tool({"run", s(example("loader_class_index.pt2")), "--inputs",
                       s(example("loader_class_index.batch2.pt")), "--calls", "3", "--no-bisect"},
                      "out2");
  CHECK_MESSAGE(bad.code() == 3, bad.err);
  CHECK(bad.report["failure"]["batch"]["call"] == 1);
  CHECK(bad.report["failure"]["batch"]["index"] == 0);
  CHECK(bad.out.find("call 1 of 3 (") != std::string::npos);
}

TEST_CASE("--all-batches: the loop goes on past the first failure; every failing batch, grouped by signature") {
  std::vector<std::string> args = {
      "run", s(example("loader_class_index.pt2")), "--all-batches", "--repeats", "1", "--no-bisect"};
  for (int i : {0, 2, 1, 2, 3}) {
    args.insert(args.end(), {"--inputs", s(example("loader_class_index.batch" + std::to_string(i) + ".pt"))});
  }
  auto r = run_tool(args, "out");
  CHECK_MESSAGE(r.code() == 3, r.err);
  CHECK(r.report["failure"]["batch"]["index"] == 1);
  REQUIRE(r.report["batch_groups"].size() == 1);
  CHECK(r.report["batch_groups"][0]["batches"] == Json({1, 3}));
  CHECK(r.report["batch_groups"][0]["kind"] == "device_assert");
  REQUIRE(r.report["batches"].size() == 5);
  CHECK(r.report["batches"][2]["outcome"] == "ok");
  CHECK(r.report["batches"][3]["outcome"] == "device_assert");
  CHECK(r.report["batches"][4]["outcome"] == "ok");
  CHECK(read_text("out/report.md").find("Every failing batch") != std::string::npos);
  // The console's count agrees with the report's groups.
  CHECK_MESSAGE(r.err.find("aoti-bisect: --all-batches: 2 of 5 batches failed, 1 signature\n") != std::string::npos,
                r.err);
}

TEST_CASE("bad batches: another structure, an unreadable file, a glob matching nothing: one line, exit 4") {
  auto other =
      run_tool({"run", s(example("loader_class_index.pt2")), "--inputs", s(example("loader_class_index.batch0.pt")),
                "--inputs", s(example("loader_partial.batch1.pt"))},
               "out");
  CHECK(other.code() == 4);
  CHECK(other.report["verdict"] == "could_not_test");
  CHECK_MESSAGE(other.report["error"].get<std::string>().find("loader_partial.batch1.pt' (batch 2 of 2) does not fit "
                                                              "model 'model': the inputs file holds 1 tensor, the "
                                                              "model takes 2") != std::string::npos,
                other.report["error"]);
  std::ofstream("garbage.pt") << "not a torch.save file";
  auto garbage = run_tool({"run", s(example("loader_class_index.pt2")), "--inputs",
                           s(example("loader_class_index.batch0.pt")), "--inputs", "garbage.pt"},
                          "out2");
  CHECK(garbage.code() == 4);
  CHECK_MESSAGE(garbage.err.find("inputs file 'garbage.pt'") != std::string::npos, garbage.err);
  auto none = run_tool({"run", s(example("loader_class_index.pt2")), "--inputs", "nowhere/*.pt"}, "out3");
  CHECK(none.code() == 4);
  CHECK(none.err.find("aoti-bisect: error: inputs 'nowhere/*.pt' matches no file") != std::string::npos);
  CHECK(none.report["verdict"] == "could_not_test");
  auto mixed =
      run_tool({"run", s(example("loader_class_index.pt2")), "--inputs", s(example("loader_class_index.batch0.pt")),
                "--inputs", s(example("loader_class_index.batch1.pt")), "--calls", "2"},
               "out4");
  CHECK(mixed.code() == 2);
  CHECK(mixed.err.find("--calls N runs one inputs file N times: give one --inputs with it") != std::string::npos);
}

TEST_SUITE_END();
