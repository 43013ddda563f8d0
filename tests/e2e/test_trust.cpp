// Trust: nothing but the package's own .so runs code. An exported program
// whose pickled parts (or symbolic shapes) would run code when loaded
// unsafely is refused with one line and exit 4, and the code never runs. And
// a runner that cannot start is the tool's failure (exit 5), never a
// reproduced failure of the model.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"
#include "process/process.hpp"
#include "skip.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

namespace {

std::string error_lines(const e2e::Result& r, int* count) {
  std::string line;
  *count = 0;
  size_t pos = 0;
  while ((pos = r.err.find("aoti-bisect: error: ", pos)) != std::string::npos) {
    ++*count;
    line = r.err.substr(pos, r.err.find('\n', pos) - pos);
    pos += 1;
  }
  return line;
}

std::string python() {
  const char* chosen = std::getenv("AOTI_BISECT_PYTHON");
  return chosen != nullptr && *chosen != '\0' ? chosen : "python3";
}

// tests/data/make_hostile_ep.py: a copy of `src` whose `part` creates
// `marker` when unpickled (or parsed) unsafely. False when this torch has no
// such part.
bool make_hostile(const fs::path& src, const fs::path& dst, const fs::path& marker, const std::string& part) {
  fs::path script = fs::path(__FILE__).parent_path().parent_path() / "data" / "make_hostile_ep.py";
  aoti_bisect::SpawnSpec spec;
  spec.argv = {"/usr/bin/env", python(), script.string(), src.string(), dst.string(), marker.string(), "--part", part};
  spec.env = aoti_bisect::current_environment();
  spec.stderr_path = fs::absolute("make_hostile." + part + ".stderr");
  spec.timeout_s = 300;
  aoti_bisect::ExitStatus st = aoti_bisect::run_process(spec);
  if (st.how == aoti_bisect::ExitStatus::How::exited && st.exit_code == 3) {
    return false;
  }
  INFO(st.stderr_tail);
  REQUIRE(st.ok());
  return true;
}

// The refusal every hostile program gets: exit 4, one error line naming the
// file and saying why, and the code never ran.
void check_refused(const e2e::Result& r, const fs::path& marker, const std::string& file, const std::string& what) {
  INFO(r.err);
  CHECK_FALSE(fs::exists(marker));
  CHECK(r.code() == 4);
  int count = 0;
  std::string line = error_lines(r, &count);
  CHECK(count == 1);
  CHECK(line.find("'" + file) != std::string::npos);
  CHECK(line.find("cannot be loaded safely") != std::string::npos);
  CHECK(line.find(what) != std::string::npos);
}

// nan_midway (NaN from its log kernel) searched with probes from a given
// exported program.
e2e::Result run_source_exported(const fs::path& ep) {
  return run_tool(
      {"run", example("nan_midway.pt2").string(), "--inputs", example("nan_midway.inputs.pt").string(),
       "--no-judge", "--exported-program", ep.string(), "--source", "exported_program", "--no-matrix", "--cache-dir",
       "cache-source"},
      "out", e2e::warm_inductor());
}

fs::path fake_runner(const std::string& name, const std::string& body) {
  fs::path p = fs::absolute(name);
  std::ofstream(p) << "#!/bin/sh\n" << body;
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/trust");

TEST_CASE("aoti-bisect build: an exported program whose parts would run code is refused, exit 4") {
  struct Case {
    std::string part;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{{"sample_inputs", "its part 'data/sample_inputs/model.pt' holds a pickled"},
                                         {"weight", "its part 'data/weights/weight_0' holds a pickled object"},
                                         {"legacy_weights", "its part 'data/weights/model.pt' holds a pickled"},
                                         {"opaque_constant", "saved with plain pickle"},
                                         {"sym_expr", "its graph holds a symbolic expression that is not plain"}}) {
    CAPTURE(c.part);
    fs::path marker = fs::absolute("ran." + c.part);
    fs::path ep = fs::absolute("hostile_" + c.part + ".pt2");
    if (!make_hostile(example("healthy.ep.pt2"), ep, marker, c.part)) {
      aoti_bisect::test::skip("this torch's exported programs have no " + c.part + ": its hostile-part case");
      continue;
    }
    auto r = run_tool({"build", ep.string(), "--cache-dir", "cache-" + c.part}, "");
    check_refused(r, marker, ep.filename().string(), c.says);
  }
}

TEST_CASE("run --against-eager: a hostile --exported-program is refused before any run, exit 4") {
  fs::path marker = fs::absolute("ran.eager");
  fs::path ep = fs::absolute("hostile_eager.pt2");
  REQUIRE(make_hostile(example("healthy.ep.pt2"), ep, marker, "sample_inputs"));
  auto r = run_tool({"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string(),
                     "--against-eager", "--no-judge", "--exported-program", ep.string(), "--no-matrix"},
                    "out");
  check_refused(r, marker, ep.filename().string(), "holds a pickled object");
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] == "could_not_test");
  CHECK(r.report["error"].get<std::string>().find("hostile_eager.pt2") != std::string::npos);
  CHECK(r.report["runs"].empty());
}

TEST_CASE("run --against-eager: a package whose own exported program is hostile is refused, exit 4") {
  fs::path marker = fs::absolute("ran.combined");
  fs::path pkg = fs::absolute("hostile_combined.pt2");
  REQUIRE(make_hostile(example("nan_midway.combined.pt2"), pkg, marker, "weight"));
  auto r = run_tool(
      {"run", pkg.string(), "--inputs", example("nan_midway.inputs.pt").string(), "--against-eager", "--no-matrix"},
      "out");
  check_refused(r, marker, pkg.filename().string(), "holds a pickled object");
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] == "could_not_test");
}

TEST_CASE("run --source exported_program: a hostile exported program never runs, and the reason names it") {
  fs::path marker = fs::absolute("ran.source");
  fs::path ep = fs::absolute("hostile_source.pt2");
  REQUIRE(make_hostile(example("nan_midway.ep.pt2"), ep, marker, "sample_inputs"));
  auto r = run_source_exported(ep);
  INFO(r.err);
  CHECK_FALSE(fs::exists(marker));
  CHECK(r.code() == 4);
  REQUIRE(r.report.is_object());
  std::string reason = r.report["verdict_reason"].get<std::string>();
  CHECK(reason.find("exported program 'hostile_source.pt2' cannot be loaded safely") != std::string::npos);
  CHECK(r.report["builds"]["count"] == 0);
}

TEST_CASE("run --source exported_program: a hostile exported program is refused, exit 4") {
  fs::path marker = fs::absolute("ran.source4");
  fs::path ep = fs::absolute("hostile_source4.pt2");
  REQUIRE(make_hostile(example("nan_midway.ep.pt2"), ep, marker, "weight"));
  auto r = run_source_exported(ep);
  check_refused(r, marker, ep.filename().string(), "holds a pickled object");
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] == "could_not_test");
}

TEST_CASE("a runner that cannot start is an internal error, exit 5, never the model's failure") {
  const std::string loader_line =
      "aoti-bisect-runner: error while loading shared libraries: libtorch_cpu.so: cannot open shared object file: "
      "No such file or directory";
  struct Case {
    std::string name;
    std::string body;
    std::string says;
  };
  // The events file is the value after --events.
  const std::string events = "while [ $# -gt 0 ]; do [ \"$1\" = --events ] && ev=\"$2\"; shift; done\n";
  for (const Case& c : std::vector<Case>{
           {"loader", "echo 'some banner' >&2\necho '" + loader_line + "' >&2\nexit 127\n",
            "the runner ended before its first event (exit 127): " + loader_line},
           {"silent", "exit 0\n", "the runner ended before its first event (exit 0)"},
           {"unfinished", events + "echo '{\"event\":\"start\",\"t\":0}' > \"$ev\"\nexit 0\n",
            "the runner exited 0 without its closing events (last event 'start')"},
           {"started_then_127",
            events + "echo '{\"event\":\"start\",\"t\":0}' > \"$ev\"\necho 'runner: symbol lookup error: libc10.so: "
                     "cannot bind' >&2\nexit 127\n",
            "the runner ended without its closing events (exit 127, last event 'start'): runner: symbol lookup "
            "error: libc10.so: cannot bind"}}) {
    CAPTURE(c.name);
    fs::path runner = fake_runner("fake-runner-" + c.name, c.body);
    auto r = run_tool({"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string()},
                      "out", {{"AOTI_BISECT_RUNNER", runner.string()}});
    INFO(r.err);
    CHECK(r.code() == 5);
    int count = 0;
    std::string line = error_lines(r, &count);
    CHECK(count == 1);
    CHECK(line.find(c.says) != std::string::npos);
    REQUIRE(r.report.is_object());
    CHECK(r.report["verdict"] == "internal_error");
    CHECK(r.report["error"].get<std::string>().find(c.says) != std::string::npos);
    CHECK(r.report["failure"].is_null());
    // The baseline stops the job: no matrix, no search.
    CHECK(r.report["runs"].size() == 1);
  }
}

TEST_CASE("a runner that started and then crashed in the model stays the model's crash") {
  // The real runner on a real fault (wild_gather reads out of bounds): a
  // model failure, reproduced, never an internal error.
  auto r = run_tool({"run", example("wild_gather.pt2").string(), "--inputs", example("wild_gather.inputs.pt").string(),
                     "--no-matrix", "--no-bisect"},
                    "out");
  INFO(r.err);
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] != "internal_error");
  CHECK(r.code() == 3);
  CHECK(r.report["failure"].is_object());
}

TEST_SUITE_END();
