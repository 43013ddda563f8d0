#pragma once
// The replay host (resources/replay_host.cpp: the part of every one-kernel
// replay that includes LibTorch's heavy headers, about 15 s to compile)
// built ahead, into the cache the job's replays use, once per torch and
// compiler: with the runner (harness/runner_build.hpp) and by `aoti-bisect
// setup`, so that a first job's root cause does not wait for it. The
// replay script builds it itself where it is missing (repro/replay.hpp).

#include <filesystem>
#include <functional>
#include <string>

namespace aoti_bisect {

// Where the job's replays keep their builds: $AOTI_BISECT_REPLAY_CACHE, else
// `cache_dir`/replay (`cache_dir`: the build cache, resolved: inductor/build.hpp's default_cache_dir()
// where the user named none).
std::filesystem::path replay_cache_dir(const std::filesystem::path& cache_dir);

// Where the replay host is kept: per torch installation, not per job cache
// ($AOTI_BISECT_REPLAY_HOST_CACHE, else $AOTI_BISECT_REPLAY_CACHE, else
// `default_cache`/replay: inductor/build.hpp's default_cache_dir()), so that a
// job with a fresh --cache-dir finds the one `aoti-bisect setup` built.
std::filesystem::path replay_host_cache_dir(const std::filesystem::path& default_cache);

struct ReplayHostBuild {
  bool ok = false;
  bool cached = false;  // it was built before
  double seconds = 0;
  std::string error;  // one line, when not ok
};

// Builds the replay host against the torch in `torch_dir` (include/, lib/)
// with the C++ standard the packages of this torch record (-std=c++20),
// into replay_host_cache_dir(default_cache), unless it is there.
// `announce` is told one line before a build (not when it is there).
ReplayHostBuild build_replay_host(const std::filesystem::path& torch_dir, const std::filesystem::path& default_cache,
                                  double timeout_s, const std::function<void(const std::string&)>& announce = {});

}  // namespace aoti_bisect
