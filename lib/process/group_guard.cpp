// The group guard: a process forked once that SIGKILLs the children's process groups still registered
// when its socket to the driver closes, however the driver died.

#include "process/group_guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace aoti_bisect {
namespace {

// One message: +pgid registers, -pgid releases.
struct Record {
  int32_t op;
  int32_t pgid;
};
constexpr int32_t k_add = 1;
constexpr int32_t k_release = 2;
constexpr int k_max_groups = 4096;

// The guard's whole life: async-signal-safe calls only (it is forked from a
// process that may run threads), no allocation.
[[noreturn]] void guard_main(int fd) {
  static pid_t groups[k_max_groups];
  int n = 0;
  Record rec{};
  size_t have = 0;
  for (;;) {
    ssize_t got = ::read(fd, reinterpret_cast<char*>(&rec) + have, sizeof rec - have);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;  // the driver is gone
    }
    have += static_cast<size_t>(got);
    if (have < sizeof rec) {
      continue;
    }
    have = 0;
    if (rec.op == k_add && n < k_max_groups && rec.pgid > 1) {
      groups[n++] = rec.pgid;
    } else if (rec.op == k_release) {
      for (int i = 0; i < n; ++i) {
        if (groups[i] == rec.pgid) {
          groups[i] = groups[--n];
          break;
        }
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    ::kill(-groups[i], SIGKILL);
  }
  ::_exit(0);
}

// Its command line reads "aoti-bisect-group-guard", so that nothing that
// looks for the driver by its command line (ps, pkill -f, a test) takes the
// guard for it: the argument area is overwritten in place, as setproctitle
// does. Async-signal-safe calls only.
void name_this_process() {
  static char cmdline[65536];
  int fd = ::open("/proc/self/cmdline", O_RDONLY);
  if (fd < 0) {
    return;
  }
  ssize_t total = 0;
  for (;;) {
    ssize_t got = ::read(fd, cmdline + total, sizeof cmdline - static_cast<size_t>(total));
    if (got <= 0) {
      break;
    }
    total += got;
  }
  ::close(fd);
  static constexpr char k_name[] = "aoti-bisect-group-guard";
  // program_invocation_name is argv[0], the start of the area; a short area
  // gets as much of the name as fits.
  if (program_invocation_name == nullptr || total < 2) {
    return;
  }
  for (ssize_t i = 0; i < total; ++i) {
    program_invocation_name[i] = i < total - 1 && i < static_cast<ssize_t>(sizeof k_name) ? k_name[i] : '\0';
  }
}

struct Guard {
  std::mutex mutex;
  int fd = -1;  // the driver's end
  pid_t pid = -1;
  bool tried = false;

  void start() {
    tried = true;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return;
    }
    pid_t child = ::fork();
    if (child == 0) {
      ::setsid();  // outside the driver's group and terminal: a Ctrl-C or a group kill leaves it to do its job
      int mine = ::fcntl(sv[1], F_DUPFD, 10);  // above stdio, whatever the driver had open
      int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
      }
      if (mine < 0 || ::dup2(mine, 3) != 3) {
        ::_exit(1);
      }
      ::close_range(4, ~0U, 0);  // the driver's end among them: only the driver holds it now
      name_this_process();
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        ::signal(sig, SIG_DFL);  // not the driver's handlers: a signal sent to it ends it
      }
      guard_main(3);
    }
    ::close(sv[1]);
    if (child < 0) {
      ::close(sv[0]);
      return;
    }
    fd = sv[0];
    pid = child;
  }

  void send(int32_t op, pid_t pgid) {
    std::lock_guard<std::mutex> lock(mutex);
    if (op == k_add && !tried) {
      start();
    }
    if (fd < 0 || pgid <= 1) {
      return;
    }
    Record rec{op, static_cast<int32_t>(pgid)};
    ssize_t sent;
    do {
      sent = ::send(fd, &rec, sizeof rec, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != static_cast<ssize_t>(sizeof rec)) {
      ::close(fd);  // the guard is gone: the children keep PR_SET_PDEATHSIG
      fd = -1;
    }
  }
};

Guard& guard() {
  // Never destroyed: the socket closes when the process ends, whichever way.
  static Guard* g = new Guard;
  return *g;
}

}  // namespace

void guard_group(pid_t pgid) {
  guard().send(k_add, pgid);
}

void release_group(pid_t pgid) {
  guard().send(k_release, pgid);
}

pid_t group_guard_pid() {
  std::lock_guard<std::mutex> lock(guard().mutex);
  return guard().pid;
}

}  // namespace aoti_bisect
