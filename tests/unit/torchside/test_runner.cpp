// The runner's logic (lib/torchside/runner.hpp) without a package: what it
// refuses and reports before any model runs (the end-to-end tests run it on
// real packages).
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "protocol/events.hpp"
#include "protocol/runner.hpp"
#include "torch_doctest.hpp"
#include "torchside/runner.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

TEST_CASE("runner: a fork server preloads only on the CPU; no preload throws, and a failed one is not retried") {
  torchside::RunnerOptions cuda;
  cuda.package_dir = "/nonexistent/package";
  cuda.device_key = "cuda";
  cuda.events = "events.jsonl";
  cuda.inputs = "in.pt";
  CHECK_FALSE(torchside::preload_model(cuda, false));  // never a device before a fork
  // The first request was seen: later ones get the same answer, no load.
  CHECK_FALSE(torchside::preload_model(cuda, true));
}

TEST_CASE("runner: a run whose inputs cannot be read reports its start, then cannot test") {
  fs::path dir = fs::temp_directory_path() / ("aoti-bisect-runner-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  torchside::RunnerOptions opt;
  opt.package_dir = (dir / "package").string();
  opt.device_key = "cpu";
  opt.inputs = (dir / "missing.inputs.pt").string();
  opt.events = (dir / "events.jsonl").string();
  bool cannot_test = false;
  {
    EventWriter events(opt.events);
    try {
      torchside::run_model(opt, events);
    } catch (const Error& e) {
      cannot_test =
          e.kind() == ErrorKind::cannot_test && std::string(e.what()).find("missing.inputs.pt") != std::string::npos;
    }
  }
  CHECK(cannot_test);
  auto events = Events::read(opt.events);
  REQUIRE_FALSE(events.empty());
  CHECK(event_kind(events.front()) == EventKind::start);
  CHECK(events.front()["device_key"] == "cpu");
  CHECK(events.front()["persistent"] == false);
  CHECK(events.front()["pid"] == ::getpid());
  fs::remove_all(dir);
}
