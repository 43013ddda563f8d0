#pragma once
// What the fork server (forkserver.cpp) and the persistent runner
// (persistent.cpp) share: their flags, a request on the wire (written by the
// driver, read by the server), the reply's writing, and the double fork that
// makes what a server starts the driver's child.
//
// Wire format (a Unix stream socket, the server's stdin and stdout): a
// request is NUL-terminated fields "arg=", "env=K=V", "cwd=", "out=", "err=",
// "mem=", ended by an empty field; the reply is one line, "pid N", "pid N
// held" (the server holds prepared state) or "error WHY". Any error makes
// the driver exec the run itself.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "process/process.hpp"

namespace aoti_bisect::server {

inline constexpr std::string_view k_serve_flag = "--serve";
inline constexpr std::string_view k_persistent_flag = "--serve-persistent";

struct Request {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "K=V"
  std::string cwd, out, err;
  unsigned long long memory_limit = 0;
};

// The request of a spawn, as the driver writes it (paths made absolute).
std::string request_text(const SpawnSpec& spec);
// Reads one request; false at end of stream or on a malformed one.
// `buffer` holds what was read past it.
bool read_request(int fd, std::string& buffer, Request& req);
// `args` as main() takes them (pointers into `args`, null-terminated).
std::vector<char*> argv_of(std::vector<std::string>& args);
// A run's stdout or stderr file (empty: /dev/null), truncated.
int open_output(const std::string& path);

// Forks a process that `become` turns into what it is (it never returns),
// reparented to the driver at once: its parent, a middle process, exits
// right after the fork, and it waits to be the driver's (in a process
// group of its own, dying with the driver) before `become` runs. Its pid
// (its own process group's), or -1 with `why`. Only async-signal-safe calls
// between the forks.
template <typename Become>
pid_t fork_reparented(pid_t driver, Become&& become, const char* what, std::string& why) {
  int report[2] = {-1, -1};
  pid_t pid = -1;
  if (::pipe2(report, O_CLOEXEC) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  if (pid_t middle = ::fork(); middle < 0) {
    why = std::string("fork: ") + std::strerror(errno);
  } else if (middle == 0) {
    pid_t child = ::fork();
    if (child == 0) {
      ::setpgid(0, 0);
      // The parent exits at once: wait to be the driver's, then die with it.
      for (int i = 0; i < 20000 && ::getppid() != driver; ++i) {
        ::usleep(100);
      }
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != driver) {
        ::_exit(127);
      }
      become();
    }
    if (child > 0) {
      ::setpgid(child, child);  // also here, so the group exists before the driver hears of it
    }
    ssize_t ignored = ::write(report[1], &child, sizeof child);
    (void)ignored;
    ::_exit(0);
  } else {
    ::close(report[1]);
    report[1] = -1;
    int status = 0;
    while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
    }
    if (::read(report[0], &pid, sizeof pid) != static_cast<ssize_t>(sizeof pid) || pid <= 0) {
      why = std::string("fork: the ") + what + " did not start";
      pid = -1;
    }
  }
  for (int fd : report) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  return pid;
}

}  // namespace aoti_bisect::server
