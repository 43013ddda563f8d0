#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "common/text.hpp"
#include "job/batches.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

TEST_SUITE_BEGIN("job/batches");

TEST_CASE("natural order: numbers by value, the rest by character") {
  CHECK(natural_less("batch2.pt", "batch10.pt"));
  CHECK_FALSE(natural_less("batch10.pt", "batch2.pt"));
  CHECK(natural_less("batch02.pt", "batch3.pt"));
  CHECK(natural_less("a.pt", "b.pt"));
  CHECK(natural_less("batch.pt", "batch1.pt"));
  CHECK_FALSE(natural_less("x", "x"));
  CHECK(natural_less("run9/b", "run10/a"));
}

TEST_CASE("expand_inputs: files as given, folders and globs in natural order, nothing matched is one line") {
  fs::create_directories("data/sub");
  for (const char* f : {"data/batch10.pt", "data/batch2.pt", "data/batch1.pt", "data/notes.txt", "x.pt"}) {
    std::ofstream(f) << "x";
  }
  auto names = [](const std::vector<fs::path>& v) {
    std::vector<std::string> out;
    for (const auto& p : v) {
      out.push_back(p.generic_string());
    }
    return out;
  };
  CHECK(names(expand_inputs({"x.pt"})) == std::vector<std::string>{"x.pt"});
  CHECK(names(expand_inputs({"data"})) ==
        std::vector<std::string>{"data/batch1.pt", "data/batch2.pt", "data/batch10.pt"});
  CHECK(names(expand_inputs({"data/batch*.pt", "x.pt"})) ==
        std::vector<std::string>{"data/batch1.pt", "data/batch2.pt", "data/batch10.pt", "x.pt"});
  // A missing plain file is named later, by the inspect phase, with the others.
  CHECK(names(expand_inputs({"gone.pt"})) == std::vector<std::string>{"gone.pt"});
  CHECK_THROWS_WITH_AS(expand_inputs({"data/*.bin"}), "inputs 'data/*.bin' matches no file", Error);
  CHECK_THROWS_WITH_AS(expand_inputs({"data/sub"}),
                       "inputs folder 'data/sub' holds no .pt file (each batch is one torch.save file)", Error);
  try {
    expand_inputs({"data/*.bin"});
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::cannot_test);  // exit 4
  }
}

TEST_CASE("batch_records: ok before the failing batch, its kind and line, not_run after") {
  std::vector<BatchRun> ran(3);
  ran[0].returned = true;
  ran[1].returned = true;
  ran[2].returned = false;
  auto r = batch_records({"a.pt", "b.pt", "c.pt", "d.pt"}, ran, "crash", "signal 11");
  REQUIRE(r.size() == 4);
  CHECK(r[0].outcome == "ok");
  CHECK(r[1].outcome == "ok");
  CHECK(r[2].outcome == "crash");
  CHECK(r[2].first_line == "signal 11");
  CHECK(r[3].outcome == "not_run");
  CHECK(r[3].index == 3);
  ran[1].nonfinite = true;  // a batch whose outputs held NaN ends the loop too
  CHECK(batch_records({"a.pt", "b.pt"}, {ran[0], ran[1]}, "nonfinite", "")[1].outcome == "nonfinite");
}

TEST_SUITE_END();
