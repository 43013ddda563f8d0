#pragma once
// A runner built against another torch, once per torch and per version of
// the runner's sources, from the tool's own sources (CMake, the runner
// target alone), and kept in the build cache (`runners/`), as the hook
// library is. Builds of one key are serialized by a lock file, so that the
// cases of a triage wait for one build instead of starting several.

#include <filesystem>
#include <functional>
#include <string>

#include "harness/runner_choice.hpp"

namespace aoti_bisect {

struct RunnerBuild {
  std::filesystem::path runner;  // the executable
  bool cache_hit = false;
  double seconds = 0;
  std::string key;  // the cache folder's name
};

// The tool's sources a runner is built from: the installed copy
// (<prefix>/share/aoti-bisect/source), else the source tree this tool was
// built from; empty when neither is there.
std::filesystem::path runner_source_dir();

// Where the runner for `torch` is kept, built or not; empty without sources.
std::filesystem::path runner_cache_path(const TorchInstall& torch, const std::filesystem::path& cache_dir);

// Builds (or finds) the runner for `torch`. Throws Error(cannot_test) with
// one line naming the torch, what failed and the log, when it cannot.
RunnerBuild build_runner(const TorchInstall& torch, const std::filesystem::path& cache_dir, double timeout_s,
                         const std::function<void(const std::string&)>& progress);

}  // namespace aoti_bisect
