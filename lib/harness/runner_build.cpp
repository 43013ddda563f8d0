// Building a runner against another torch from the tool's own sources with CMake, cached per torch and
// sources digest under runners/, one build per key at a time behind a lock file.

#include "harness/runner_build.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "inductor/build.hpp"
#include "process/process.hpp"
#include "repro/replay_host_build.hpp"

#ifndef AOTI_BISECT_SOURCE_DIR
#define AOTI_BISECT_SOURCE_DIR ""
#endif

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

bool has_sources(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "CMakeLists.txt", ec) &&
         fs::is_directory(dir / "apps" / "aoti-bisect-runner", ec);
}

// The header-only libraries a wheel ships for the runner (fmt, nlohmann-
// json, CLI11, xxHash: share/aoti-bisect/vendor/include beside the sources);
// "" in a source tree, whose build takes the system's.
fs::path vendor_include(const fs::path& src) {
  std::error_code ec;
  fs::path dir = src.parent_path() / "vendor" / "include";
  return fs::is_directory(dir, ec) ? dir : fs::path();
}

// What the runner is built from: its CMake files, the modules it links and
// the headers a wheel ships for it. A change to any of them is another runner.
std::string sources_digest(const fs::path& src) {
  std::vector<fs::path> files = {src / "CMakeLists.txt", src / "lib" / "CMakeLists.txt",
                                 src / "apps" / "CMakeLists.txt"};
  for (const char* sub : {"apps/aoti-bisect-runner", "lib/common", "lib/protocol", "lib/process", "lib/archive",
                          "lib/inputs", "lib/wrapper", "lib/package", "lib/codegen", "lib/torchside"}) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(src / sub, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec)) {
        files.push_back(it->path());
      }
    }
  }
  if (fs::path vendor = vendor_include(src); !vendor.empty()) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(vendor, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec)) {
        files.push_back(it->path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    // Named from the sources' folder, or from the share folder above it for
    // the vendored headers ("../vendor/include/fmt/core.h").
    text += fs::relative(f, src).string() + "\n" + sha256_file(f) + "\n";
  }
  return sha256_hex(text);
}

// "2.14.1+cu130" -> "2.14.1-cu130": a folder name.
std::string folder_safe(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-';
  }
  return out;
}

// Holds an exclusive lock on a file for its lifetime.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : m_fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (m_fd >= 0) {
      while (::flock(m_fd, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  ~FileLock() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int m_fd;
};

// The line of a build log that says what went wrong: CMake's first error
// message, else the compiler's first "error:", else the last line.
std::string why_from_log(const fs::path& log, const ExitStatus& st) {
  std::string text;
  try {
    text = read_file(log, "build log");
  } catch (const std::exception&) {
  }
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  std::string why;
  for (size_t i = 0; i < lines.size() && why.empty(); ++i) {
    if (lines[i].rfind("CMake Error", 0) == 0) {
      // Its message: the indented lines after it, up to a blank one.
      for (size_t j = i + 1; j < lines.size() && !trim(lines[j]).empty(); ++j) {
        why += (why.empty() ? "" : " ") + std::string(trim(lines[j]));
      }
      if (why.empty()) {
        why = std::string(trim(lines[i]));
      }
    }
  }
  for (size_t i = 0; i < lines.size() && why.empty(); ++i) {
    if (lines[i].find("error:") != std::string::npos) {
      why = std::string(trim(lines[i]));
    }
  }
  for (size_t i = lines.size(); i > 0 && why.empty(); --i) {
    why = std::string(trim(lines[i - 1]));
  }
  if (why.empty()) {
    why = st.describe();
  }
  return why.size() > 300 ? why.substr(0, 300) + "..." : why;
}

// The last "[k/N]" a build tool printed in `log` ("" when none yet).
std::string build_step_of(const fs::path& log) {
  std::ifstream in(log, std::ios::binary | std::ios::ate);
  if (!in) {
    return "";
  }
  std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - 4096));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t end = text.size(); end > 0;) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string_view line(text.data() + start, end - start);
    if (line.size() > 3 && line[0] == '[' && line.find('/') != std::string_view::npos &&
        line.find(']') != std::string_view::npos && line.find('/') < line.find(']')) {
      return std::string(line.substr(1, line.find(']') - 1));
    }
    end = start == 0 ? 0 : start - 1;
  }
  return "";
}

// Runs one step of the build; with `progress`, says every 10 s how far the
// build tool has got ("runner build: step 34/61 after 40 s"): a runner build takes about
// 1.5 minutes on 2 cores, and a silent console looks stuck.
void run_step(const std::vector<std::string>& argv, const fs::path& log, double timeout_s, const TorchInstall& torch,
              const char* step, const std::function<void(const std::string&)>& progress = {}) {
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = current_environment();
  spec.stdout_path = log;
  spec.stderr_path = log.string() + ".err";
  spec.timeout_s = timeout_s;
  // The watcher is stopped and joined however this scope ends (run_process
  // may throw); a progress line that cannot be written ends the lines, not
  // the build.
  struct Watcher {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread thread;
    ~Watcher() {
      if (thread.joinable()) {
        {
          std::lock_guard<std::mutex> lock(m);
          done = true;
        }
        cv.notify_all();
        thread.join();
      }
    }
  } watch;
  if (progress) {
    watch.thread = std::thread([&watch, &log, &progress, step] {
      auto start = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(watch.m);
      while (!watch.cv.wait_for(lock, std::chrono::seconds(10), [&] { return watch.done; })) {
        std::string at = build_step_of(log);
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        try {
          progress(at.empty() ? fmt::format("runner build ({}): {:.0f} s so far", step, s)
                              : fmt::format("runner build: step {} after {:.0f} s", at, s));
        } catch (...) {
          return;
        }
      }
    });
  }
  ExitStatus st = run_process(spec);
  // One log: the errors after the output.
  try {
    std::string err = read_file(spec.stderr_path, "build log");
    if (!err.empty()) {
      write_file_atomic(log, read_file(log, "build log") + err);
    }
    std::error_code ec;
    fs::remove(spec.stderr_path, ec);
  } catch (const std::exception&) {
  }
  if (!st.ok()) {
    throw Error(
        ErrorKind::cannot_test,
        fmt::format("a runner against torch {} ({}) could not be built: {} failed ({}): {}; the whole log is "
                    "{}",
                    torch.version, torch.torch_dir.string(), step, st.describe(), why_from_log(log, st), log.string()));
  }
}

}  // namespace

fs::path runner_cache_path(const TorchInstall& torch, const fs::path& cache_dir) {
  const fs::path src = runner_source_dir();
  if (src.empty()) {
    return {};
  }
  std::string key =
      folder_safe(torch.version) + "-" +
      sha256_hex(std::string(AOTI_BISECT_VERSION) + "\n" + sources_digest(src) + "\n" + torch.torch_dir.string() +
                 "\n" + torch.version + "\n" + (find_program("ninja") ? "ninja" : "make"))
          .substr(0, 16);
  return fs::absolute(cache_dir.empty() ? default_cache_dir() : cache_dir) / "runners" / key / "aoti-bisect-runner";
}

fs::path runner_source_dir() {
  fs::path installed = self_executable().parent_path().parent_path() / "share" / "aoti-bisect" / "source";
  if (has_sources(installed)) {
    return installed;
  }
  fs::path tree = AOTI_BISECT_SOURCE_DIR;
  return has_sources(tree) ? tree : fs::path();
}

namespace {

RunnerBuild build_runner_binary(const TorchInstall& torch, const fs::path& cache_dir, double timeout_s,
                                const std::function<void(const std::string&)>& progress) {
  auto start = std::chrono::steady_clock::now();
  const fs::path src = runner_source_dir();
  if (src.empty()) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("the package wants a runner against torch {}, and this aoti-bisect has no sources to "
                            "build one from (neither share/aoti-bisect/source beside it nor its source tree); "
                            "install aoti-bisect with its sources, or build it against that torch",
                            torch.version));
  }
  std::optional<fs::path> cmake = find_program("cmake");
  if (!cmake) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("the package wants a runner against torch {}, and building one needs cmake, which is not "
                            "on PATH; install it (pip install cmake ninja, or apt-get install cmake)",
                            torch.version));
  }
  std::optional<fs::path> ninja = find_program("ninja");
  RunnerBuild out;
  const fs::path dir = runner_cache_path(torch, cache_dir).parent_path();
  out.key = dir.filename().string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("the runner cache '{}' cannot be made: {}", dir.string(), ec.message()));
  }
  out.runner = dir / "aoti-bisect-runner";
  FileLock lock(dir / ".lock");
  if (fs::is_regular_file(out.runner, ec)) {
    out.cache_hit = true;
    return out;
  }
  if (progress) {
    progress(fmt::format("building a runner against torch {} ({}), once: it is kept in {}", torch.version,
                         display_path(torch.torch_dir), display_path(dir)));
  }
  const fs::path build = dir / "build";
  std::vector<std::string> configure = {cmake->string(),
                                        "-S",
                                        src.string(),
                                        "-B",
                                        build.string(),
                                        "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                                        "-DAOTI_BISECT_RUNNER_ONLY=ON",
                                        "-DAOTI_BISECT_BUILD_TESTS=OFF",
                                        "-DTorch_DIR=" + (torch.torch_dir / "share" / "cmake" / "Torch").string()};
  // A CUDA build of torch makes find_package(Torch) look for the CUDA
  // toolkit (scripts/build does the same).
  std::error_code cuda_ec;
  if (fs::exists(torch.torch_dir / "lib" / "libtorch_cuda.so", cuda_ec)) {
    std::string root;
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
      if (const char* v = std::getenv(var); root.empty() && v != nullptr && *v != '\0') {
        root = v;
      }
    }
    if (root.empty() && fs::is_regular_file("/usr/local/cuda/include/cuda_runtime.h", cuda_ec)) {
      root = "/usr/local/cuda";
    }
    if (root.empty()) {
      throw Error(ErrorKind::cannot_test,
                  fmt::format("the package wants a runner against torch {}, a CUDA build of torch: building one "
                              "needs the CUDA toolkit, which is not found; set CUDA_HOME to it",
                              torch.version));
    }
    configure.push_back("-DCUDA_TOOLKIT_ROOT_DIR=" + root);
    configure.push_back("-DCUDAToolkit_ROOT=" + root);
  }
  if (!torch.python.empty()) {
    configure.push_back("-DPython3_EXECUTABLE=" + torch.python);
  }
  if (fs::path vendor = vendor_include(src); !vendor.empty()) {
    configure.push_back("-DAOTI_BISECT_VENDOR_INCLUDE=" + vendor.string());
  }
  if (ninja) {
    configure.push_back("-G");
    configure.push_back("Ninja");
  }
  run_step(configure, dir / "configure.log", timeout_s, torch, "configure");
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  run_step({cmake->string(), "--build", build.string(), "--target", "aoti-bisect-runner", "-j", std::to_string(cores)},
           dir / "build.log", timeout_s, torch, "the build", progress);
  fs::path tmp = dir / fmt::format("aoti-bisect-runner.{}.tmp", ::getpid());
  fs::copy_file(build / "apps" / "aoti-bisect-runner", tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) {
    fs::rename(tmp, out.runner, ec);
  }
  if (ec) {
    throw Error(ErrorKind::cannot_test, fmt::format("the runner built against torch {} cannot be stored in '{}': {}",
                                                    torch.version, dir.string(), ec.message()));
  }
  // The objects are not needed again (a change of sources is another key).
  fs::remove_all(build, ec);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace

RunnerBuild build_runner(const TorchInstall& torch, const fs::path& cache_dir, double timeout_s,
                         const std::function<void(const std::string&)>& progress) {
  RunnerBuild out = build_runner_binary(torch, cache_dir, timeout_s, progress);
  // The replay host with it (issue 67): a job's root cause then finds it built.
  ReplayHostBuild host =
      build_replay_host(torch.torch_dir, default_cache_dir(), timeout_s, progress);
  if (progress && !host.cached) {
    progress(host.ok ? fmt::format("the replay host is built ({:.0f} s)", host.seconds)
                     : "the replay host was not built (a culprit's replay builds it when it runs): " + host.error);
  }
  return out;
}

}  // namespace aoti_bisect
