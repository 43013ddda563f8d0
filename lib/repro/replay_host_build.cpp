// The replay host built ahead (replay_host_build.hpp): the replay script's
// own host step (`replay --host-only`), run from a folder holding only the
// host's files, with the variables the job's replays run under.
#include "repro/replay_host_build.hpp"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "common/files.hpp"
#include "common/scratch_dir.hpp"
#include "common/text.hpp"
#include "process/process.hpp"
#include "repro/resources.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

fs::path replay_cache_dir(const fs::path& cache_dir) {
  const char* env = std::getenv("AOTI_BISECT_REPLAY_CACHE");
  if (env != nullptr && *env != '\0') {
    return env;
  }
  return fs::absolute(cache_dir) / "replay";
}

fs::path replay_host_cache_dir(const fs::path& default_cache) {
  for (const char* var : {"AOTI_BISECT_REPLAY_HOST_CACHE", "AOTI_BISECT_REPLAY_CACHE"}) {
    const char* env = std::getenv(var);
    if (env != nullptr && *env != '\0') {
      return env;
    }
  }
  return fs::absolute(default_cache) / "replay";
}

ReplayHostBuild build_replay_host(const fs::path& torch_dir, const fs::path& default_cache, double timeout_s,
                                  const std::function<void(const std::string&)>& announce) {
  ReplayHostBuild out;
  const auto start = std::chrono::steady_clock::now();
  const fs::path cache = replay_host_cache_dir(default_cache);
  ScratchDir dir = ScratchDir::make_in(fs::temp_directory_path(), "aoti-bisect-replay-host");
  std::string script(replay_script_template());
  for (const auto& [key, value] :
       std::initializer_list<std::pair<const char*, std::string>>{{"@WHAT@", "the replay host"},
                                                                  {"@WHAT_SHORT@", "the replay host"},
                                                                  {"@PROBLEM@", "''"},
                                                                  {"@TRACED_PROBLEM@", "''"},
                                                                  {"@FILES@", ""},
                                                                  {"@SOURCES@", ""},
                                                                  {"@KERNEL@", ""},
                                                                  {"@KERNEL_FLAGS@", ""},
                                                                  {"@DRIVER_STD@", "-std=c++20"},
                                                                  {"@LINK_OPENMP@", ""},
                                                                  {"@LOADS_PYTHON@", "0"}}) {
    script = replace_all(script, key, value);
  }
  write_file_atomic(dir.path() / "replay", script);
  fs::permissions(dir.path() / "replay", fs::perms::owner_all, fs::perm_options::add);
  write_file_atomic(dir.path() / "replay_host.h", std::string(replay_host_header()));
  write_file_atomic(dir.path() / "replay_host.cpp", std::string(replay_host_source()));
  auto step = [&](const char* mode, std::string& said) {
    SpawnSpec spec;
    spec.argv = {(dir.path() / "replay").string(), mode};
    spec.env = current_environment();
    spec.env["AOTI_BISECT_REPLAY_CACHE"] = cache.string();
    spec.env["AOTI_BISECT_REPLAY_HOST_CACHE"] = cache.string();
    spec.env["TORCH_DIR"] = torch_dir.string();
    spec.stdout_path = dir.path() / "stdout.txt";
    spec.timeout_s = timeout_s;
    spec.tail_bytes = 1 << 12;
    ExitStatus st = run_process(spec);
    std::error_code ec;
    said = fs::is_regular_file(spec.stdout_path, ec) ? read_file(spec.stdout_path, "replay output") : "";
    if (!st.ok()) {
      out.error = last_nonempty_line(said.empty() ? st.stderr_tail : said);
      out.error = out.error.empty() ? st.describe() : out.error;
    }
    return st.ok();
  };
  std::string said;
  if (!step("--host-path", said)) {
    return out;
  }
  std::error_code ec;
  out.cached = fs::is_regular_file(last_nonempty_line(said), ec);
  if (!out.cached && announce) {
    announce(fmt::format("building the replay host against torch in {} (the part of a culprit's one-kernel replay "
                         "that includes LibTorch's headers), once per torch and compiler: it is kept in {}",
                         display_path(torch_dir), display_path(cache)));
  }
  out.ok = out.cached || step("--host-only", said);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace aoti_bisect
