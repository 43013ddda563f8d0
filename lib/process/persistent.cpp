// The persistent runner (docs/runner.md, "The persistent runner"): the
// model loaded once, each request run in this process, each run stood for
// by a stand-in the driver waits for, times out and kills like any run
// (process.hpp serve_persistent). Only where the runs may not be forked
// from a process that holds a device runtime: on CUDA.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "process/process.hpp"
#include "process/server_request.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// In a persistent runner: the write end of the current run's stand-in
// (-1 between runs), and whether this process is one.
volatile int g_stand_in_fd = -1;
bool g_persistent = false;

// The stand-in's whole life (forked from a process that may run threads:
// async-signal-safe calls only). It waits for the word of the run it
// stands for: {exit code, signal}; end of stream without one means the
// server died unseen (SIGKILL, the OOM killer): it dies of SIGKILL too.
[[noreturn]] void become_stand_in(int word_fd) {
  ::dup2(word_fd, 0);
  ::close_range(1, ~0U, 0);
  int word[2] = {0, 0};
  size_t have = 0;
  while (have < sizeof word) {
    ssize_t n = ::read(0, reinterpret_cast<char*>(word) + have, sizeof word - have);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    have += static_cast<size_t>(n);
  }
  int sig = have < sizeof word ? SIGKILL : word[1];
  if (sig > 0 && sig < 65) {
    struct rlimit no_core {
      0, 0
    };
    ::setrlimit(RLIMIT_CORE, &no_core);  // the run's signal, not a core of this process
    ::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
    ::raise(sig);
    ::_exit(128 + sig);
  }
  ::_exit(word[0] & 0xff);
}

// Starts the stand-in of one persistent run; its pid, or -1 with `why`.
// `word_fd` (the write end) stays with the caller.
pid_t start_stand_in(pid_t driver, int& word_fd, std::string& why) {
  int word[2] = {-1, -1};
  if (::pipe2(word, O_CLOEXEC) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  const pid_t stand_in = server::fork_reparented(
      driver, [&] { become_stand_in(word[0]); }, "stand-in", why);
  ::close(word[0]);
  if (stand_in > 0) {
    word_fd = word[1];
  } else {
    ::close(word[1]);
  }
  return stand_in;
}

void tell_stand_in(int exit_code, int signal) {
  int fd = g_stand_in_fd;
  if (fd < 0) {
    return;
  }
  int word[2] = {exit_code, signal};
  ssize_t ignored = ::write(fd, word, sizeof word);
  (void)ignored;
}

// Runs one request in this process, its streams and folder the run's, in
// the stand-in's group; returns its exit code.
int run_here(const server::Request& req, pid_t stand_in, int (*run_once)(int, char**)) {
  int saved[3] = {::fcntl(0, F_DUPFD_CLOEXEC, 10), ::fcntl(1, F_DUPFD_CLOEXEC, 10), ::fcntl(2, F_DUPFD_CLOEXEC, 10)};
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out = server::open_output(req.out);
  int err = server::open_output(req.err);
  std::fflush(nullptr);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  for (int fd : {in, out, err}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  std::error_code ec;
  fs::path home = fs::current_path(ec);
  if (!req.cwd.empty()) {
    fs::current_path(req.cwd, ec);
  }
  ::setpgid(0, stand_in);  // a stop of the run's group stops the model too
  std::vector<std::string> args = req.argv;
  std::vector<char*> argv = server::argv_of(args);
  const int rc = run_once(static_cast<int>(args.size()), argv.data());
  std::fflush(nullptr);
  ::setpgid(0, 0);  // out of the group before the stand-in ends: the driver kills what is left in it
  if (!home.empty()) {
    fs::current_path(home, ec);
  }
  for (int i = 0; i < 3; ++i) {
    if (saved[i] >= 0) {
      ::dup2(saved[i], i);
      ::close(saved[i]);
    }
  }
  return rc;
}

}  // namespace

bool is_persistent_request(int argc, char** argv) {
  return argc == 2 && argv[1] == server::k_persistent_flag;
}

bool in_persistent_runner() {
  return g_persistent;
}

void persistent_run_ends(int exit_code, int signal) {
  tell_stand_in(exit_code, signal);
}

int serve_persistent(int (*run_once)(int argc, char** argv), bool (*prepare)(int argc, char** argv)) {
  pid_t driver = ::getppid();
  g_persistent = true;
  ::signal(SIGPIPE, SIG_IGN);  // a run's write to a closed pipe is an error, not this server's death
  // The requests come on stdin, the replies go on stdout: both move off
  // 0 and 1, which each run takes for its own.
  const int sock = ::fcntl(0, F_DUPFD_CLOEXEC, 10);
  if (int null = ::open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::close(null);
  }
  std::string buffer;
  for (;;) {
    server::Request req;
    if (!server::read_request(sock, buffer, req)) {
      return 0;
    }
    std::vector<char*> argv = server::argv_of(req.argv);
    if (!prepare(static_cast<int>(req.argv.size()), argv.data())) {
      if (!write_all(sock, "error the persistent runner cannot serve this request\n")) {
        return 0;
      }
      continue;
    }
    std::string why;
    int word_fd = -1;
    pid_t stand_in = start_stand_in(driver, word_fd, why);
    if (stand_in <= 0) {
      write_all(sock, "error " + why + "\n");
      return 0;
    }
    if (!write_all(sock, "pid " + std::to_string(stand_in) + " held\n")) {
      ::close(word_fd);
      return 0;
    }
    g_stand_in_fd = word_fd;
    const int rc = run_here(req, stand_in, run_once);
    tell_stand_in(rc, 0);
    g_stand_in_fd = -1;
    ::close(word_fd);
    if (rc != 0) {
      return rc;  // an error may have left the device unusable: the next run starts afresh
    }
  }
}

}  // namespace aoti_bisect
