// The program's stderr teed (stderr_tee.hpp).
#include "capture/stderr_tee.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

StderrTee::StderrTee(fs::path fifo) : m_fifo(std::move(fifo)) {
  ::unlink(m_fifo.c_str());
  if (::mkfifo(m_fifo.c_str(), 0600) != 0) {
    throw Error(ErrorKind::internal, fmt::format("cannot make '{}': {}", m_fifo.string(), std::strerror(errno)));
  }
  m_thread = std::thread([this] { pump(); });
}

StderrTee::~StderrTee() { finish(); }

std::string StderrTee::finish() {
  m_done = true;
  if (m_thread.joinable()) {
    m_thread.join();
  }
  ::unlink(m_fifo.c_str());
  return m_tail;
}

void StderrTee::pump() {
  int fd = ::open(m_fifo.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  char buf[8192];
  int idle_after_done = 0;
  while (idle_after_done < 5) {
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 100);
    if (ready > 0) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) {
        break;  // every writer closed it
      }
      ssize_t off = 0;
      while (off < n) {
        ssize_t w = ::write(2, buf + off, static_cast<size_t>(n - off));
        if (w <= 0) {
          break;
        }
        off += w;
      }
      m_tail.append(buf, static_cast<size_t>(n));
      if (m_tail.size() > 64 * 1024) {
        m_tail.erase(0, m_tail.size() - 64 * 1024);
      }
    } else if (m_done) {
      ++idle_after_done;
    }
  }
  ::close(fd);
}

}  // namespace aoti_bisect
