// aoti-bisect-runner: the child. Parses its options and calls the runner's
// logic (lib/torchside/runner.hpp): loads one model of an extracted
// package, loads and checks the inputs, runs once, writes events (JSON Lines
// in a mapped file, protocol/events.hpp) and the outputs, and exits with a
// defined status (protocol/runner.hpp). It never talks to the driver except
// through argv, files and its exit status; `--serve` and
// `--serve-persistent` make it a fork server or a persistent runner
// (process/process.hpp, docs/runner.md).

#include <unistd.h>

#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "common/error.hpp"
#include "options.hpp"
#include "process/process.hpp"
#include "protocol/events.hpp"
#include "protocol/runner.hpp"
#include "torchside/runner.hpp"
#include "torchside/torchside.hpp"

namespace ab = aoti_bisect;
namespace ts = aoti_bisect::torchside;

// The symbol an instrumented model (printer level 1) calls around every
// kernel. Exported from this executable (-rdynamic), it takes precedence over
// libtorch's definition for the dlopen'ed model (ELF interposition).
extern "C" __attribute__((visibility("default"))) void aoti_torch_save_tensor_handle(void* self,
                                                                                     const char* tensor_name,
                                                                                     const char* launch_prefix,
                                                                                     const char* kernel_name) {
  ab::torchside::on_probe_call(self, tensor_name, launch_prefix, kernel_name);
}

namespace {

int run_once(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc == 2 && std::string(argv[1]) == ab::k_runner_versions_flag) {
    // What this runner's LibTorch is, before any model: the driver picks the
    // backend profile from it (a HIP build runs "cuda" packages on ROCm).
    ab::torchside::Versions v = ab::torchside::versions("");
    std::printf("%s\n", nlohmann::json{{"torch", v.torch}, {"hip", v.hip}, {"torch_dir", v.torch_dir}}.dump().c_str());
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == ab::k_make_inputs_flag) {
    return ts::make_inputs(argv[2]);
  }
  if (argc == 3 && std::string(argv[1]) == ab::k_compare_outputs_flag) {
    return ts::compare_outputs(argv[2]);
  }
  if (argc == 3 && std::string(argv[1]) == ab::k_kept_inputs_flag) {
    return ts::kept_inputs(argv[2]);
  }
  CLI::App app{"aoti-bisect-runner: runs one AOTI model once (a child of aoti-bisect)"};
  ts::RunnerOptions opt;
  ts::define_runner_options(app, opt);
  try {
    app.parse(argc, argv);
    if (opt.inputs.empty() && opt.batch_list.empty()) {
      throw CLI::RequiredError("--inputs or --batch-list");
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(ab::RunnerExit::usage);
  }
  std::unique_ptr<ab::EventWriter> events;
  try {
    events = std::make_unique<ab::EventWriter>(opt.events);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aoti-bisect-runner: error: %s\n", e.what());
    return static_cast<int>(ab::RunnerExit::internal);
  }
  ts::install_fatal_signal_events();
  try {
    return ts::run_model(opt, *events);
  } catch (const ab::Error& e) {
    events->emit(ab::EventKind::fatal, {{"message", e.what()},
                                        {"kind", e.kind() == ab::ErrorKind::cannot_test ? "cannot_test" : "internal"}});
    std::fprintf(stderr, "aoti-bisect-runner: error: %s\n", e.what());
    return static_cast<int>(e.kind() == ab::ErrorKind::cannot_test ? ab::RunnerExit::cannot_test
                                                                   : ab::RunnerExit::internal);
  } catch (const std::exception& e) {
    events->emit(ab::EventKind::fatal, {{"message", e.what()}, {"kind", "internal"}});
    std::fprintf(stderr, "aoti-bisect-runner: internal error: %s\n", e.what());
    return static_cast<int>(ab::RunnerExit::internal);
  }
}

int served_run(int argc, char** argv) {
  ts::note_forked_by_server();
  return run_once(argc, argv);
}

int persistent_run(int argc, char** argv) {
  const int rc = run_once(argc, argv);
  ts::note_persistent_run_done();
  return rc;
}

// serve_forks' and serve_persistent's `prepare`: the request's options,
// then the model loaded (runner.hpp preload_model). Never throws.
bool prepare(int argc, char** argv, bool persistent) {
  try {
    CLI::App app;
    ts::RunnerOptions opt;
    ts::define_runner_options(app, opt);
    app.parse(argc, argv);
    return ts::preload_model(opt, persistent);
  } catch (...) {
    return false;
  }
}

bool preload(int argc, char** argv) {
  return prepare(argc, argv, false);
}
bool preload_persistent(int argc, char** argv) {
  return prepare(argc, argv, true);
}

}  // namespace

int main(int argc, char** argv) {
  if (ab::is_forkserver_request(argc, argv)) {
    // Returns only in the server, at the driver's end of stream.
    return ab::serve_forks(served_run, preload);
  }
  if (ab::is_persistent_request(argc, argv)) {
    // Returns at the driver's end of stream, or after a run that failed.
    const int rc = ab::serve_persistent(persistent_run, preload_persistent);
    std::fflush(nullptr);
    ::_exit(rc);
  }
  // Ends without the static destructors (LibTorch's take about a quarter
  // second here, a tax on every run): events and outputs are written and
  // closed by now, and stdio is flushed.
  const int rc = run_once(argc, argv);
  std::fflush(nullptr);
  ::_exit(rc);
}
