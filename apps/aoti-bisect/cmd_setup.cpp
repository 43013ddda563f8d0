// `aoti-bisect setup [--python PY] [--cache-dir DIR]`: builds ahead what a
// first job would wait for: the runner against a torch (where none is
// beside the driver for it) and the replay host (the LibTorch part of a
// culprit's one-kernel replay), both cached, so that a first job's answer
// and root cause come without builds. scripts/build runs it.

#include <cstdio>

#include <fmt/format.h>

#include "commands.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "harness/runner_build.hpp"
#include "harness/runner_choice.hpp"
#include "inductor/build.hpp"
#include "repro/replay_host_build.hpp"

namespace aoti_bisect::cli {
namespace fs = std::filesystem;

namespace {

void say(const std::string& line) { std::fprintf(stderr, "aoti-bisect: %s\n", redact_paths(line).c_str()); }

int setup(const std::string& python, const fs::path& cache_dir) {
  std::optional<TorchInstall> beside = default_runner_torch();
  std::optional<TorchInstall> wanted = beside;
  if (!python.empty() || !beside) {
    auto found = python_torch(python.empty() ? "python3" : python);
    if (auto* why = std::get_if<std::string>(&found)) {
      throw Error(ErrorKind::cannot_test, "setup: no torch to set up for (" + *why + "); give --python PATH");
    }
    wanted = std::get<TorchInstall>(found);
  }
  if (!beside || beside->torch_dir != wanted->torch_dir) {
    RunnerBuild built = build_runner(*wanted, cache_dir, 1800, say);
    std::fprintf(stdout, "setup: the runner against torch %s %s: %s\n", wanted->version.c_str(),
                 built.cache_hit ? "was built before" : fmt::format("built in {:.0f} s", built.seconds).c_str(),
                 display_path(built.runner).c_str());
    return 0;
  }
  ReplayHostBuild host =
      build_replay_host(wanted->torch_dir, default_cache_dir(), 1800, say);
  if (!host.ok) {
    throw Error(ErrorKind::internal, "setup: the replay host could not be built: " + host.error);
  }
  std::fprintf(stdout, "setup: the runner beside aoti-bisect is built against torch %s; the replay host %s\n",
               wanted->version.c_str(),
               host.cached ? "was built before" : fmt::format("is built ({:.0f} s)", host.seconds).c_str());
  return 0;
}

}  // namespace

Action add_setup_command(CLI::App& app) {
  auto python = std::make_shared<std::string>();
  auto cache = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "setup",
      "Build ahead what a first job would wait for: the runner against a torch (where none is beside aoti-bisect "
      "for it) and the replay host of a culprit's one-kernel replay, both cached");
  cmd->add_option("--python", *python, "the Python whose torch to set up for (default: the runner beside "
                                       "aoti-bisect's torch, else python3's)");
  cmd->add_option("--cache-dir", *cache, "the build cache (default: $XDG_CACHE_HOME/aoti-bisect)");
  return [python, cache]() { return setup(*python, *cache); };
}

}  // namespace aoti_bisect::cli
