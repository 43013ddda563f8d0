// The output folder: a lock file that allows one run at a time, work folders of dead runs removed, and
// an earlier run's files moved to previous/.

#include "job/out_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "common/files.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

constexpr const char* k_lock_name = ".aoti-bisect.lock";
constexpr const char* k_previous = "previous";

std::string read_pid(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return text.empty() ? "unknown" : text;
}

}  // namespace

const std::vector<std::string>& run_products() {
  static const std::vector<std::string> names = {"report.json", "report.md", "report.svg",        "junit.xml",
                                                 "runs",        "repro",     "eager-reference.pt"};
  return names;
}

OutDir::OutDir(const fs::path& dir, const std::vector<std::string>& products) {
  std::string shown = display_path(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw Error(ErrorKind::usage, fmt::format("output folder '{}' cannot be created ({}); choose another --out", shown,
                                              ec ? ec.message() : "not a folder"));
  }
  fs::path lock = dir / k_lock_name;
  // The lock file is removed when its run ends: one opened just before
  // that removal is no lock at all, so the lock taken must still be the
  // file the folder holds, else it is taken again.
  for (int attempt = 0;; ++attempt) {
    m_fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0) {
      throw Error(ErrorKind::usage, fmt::format("output folder '{}' is not writable ({}); choose another --out", shown,
                                                std::strerror(errno)));
    }
    if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
      std::string pid = read_pid(m_fd);
      ::close(m_fd);
      m_fd = -1;
      throw Error(ErrorKind::usage,
                  fmt::format("output folder '{}' is in use by another aoti-bisect run (pid {}); wait for it to end or "
                              "choose another --out",
                              shown, pid));
    }
    struct stat held {
    }, named{};
    if ((::fstat(m_fd, &held) == 0 && ::stat(lock.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
         held.st_dev == named.st_dev) ||
        attempt >= 8) {
      break;
    }
    ::close(m_fd);  // the run that held it removed it meanwhile
    m_fd = -1;
  }
  m_lock = lock;
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(m_fd, 0) != 0 || ::pwrite(m_fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    int err = errno;
    ::close(m_fd);
    m_fd = -1;
    throw Error(ErrorKind::usage, fmt::format("output folder '{}' is not writable ({}); choose another --out", shown,
                                              std::strerror(err != 0 ? err : ENOSPC)));
  }
  // Holding the lock, every other work folder belongs to a run that is gone.
  std::vector<std::string> stale;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(".work-", 0) == 0) {
      fs::remove_all(entry.path(), ec);
      stale.push_back(name.substr(6));
    }
  }
  if (!stale.empty()) {
    m_notes.push_back(
        fmt::format("removed the work folder{} of {} earlier run{} that ended without cleaning up (pid {})",
                    stale.size() == 1 ? "" : "s", stale.size(), stale.size() == 1 ? "" : "s", fmt::join(stale, ", ")));
  }
  std::vector<fs::path> earlier;
  for (const auto& name : products) {
    if (fs::exists(fs::symlink_status(dir / name, ec))) {
      earlier.push_back(dir / name);
    }
  }
  if (earlier.empty()) {
    return;
  }
  fs::path previous = dir / k_previous;
  fs::remove_all(previous, ec);
  fs::create_directories(previous, ec);
  for (const auto& p : earlier) {
    fs::rename(p, previous / p.filename(), ec);
    if (ec) {
      throw Error(ErrorKind::usage,
                  fmt::format("output folder '{}': an earlier run's '{}' cannot be moved to {}/ ({}); "
                              "choose another --out",
                              shown, p.filename().string(), k_previous, ec.message()));
    }
  }
  m_notes.push_back(fmt::format("an earlier run's files in this output folder were moved to {}/", k_previous));
}

OutDir::~OutDir() {
  if (m_fd >= 0) {
    ::unlink(m_lock.c_str());  // while still held: a run waiting for it opens a new one
    ::close(m_fd);             // releases the lock
  }
}

}  // namespace aoti_bisect
