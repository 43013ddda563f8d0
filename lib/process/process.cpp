// Running child processes: spawned with an explicit environment in a group of their own, streams to
// files, a timeout that kills the group, the exit status as a value; the interrupt signal handlers.

#include "process/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "common/error.hpp"
#include "process/child_setup.hpp"
#include "process/group_guard.hpp"

namespace aoti_bisect {

namespace {

using Clock = std::chrono::steady_clock;
using How = ExitStatus::How;

constexpr auto k_poll_interval = std::chrono::milliseconds(10);

// Set by the signal handlers and by request_interrupt() from any thread, so a
// lock-free atomic rather than a volatile sig_atomic_t.
std::atomic<int> g_interrupted{0};
static_assert(std::atomic<int>::is_always_lock_free);

void on_interrupt_signal(int sig) {
  g_interrupted.store(sig);
}

std::string errno_text(const std::string& call, int err = errno) {
  return fmt::format("{}: {}", call, std::strerror(err));
}

// Owns one file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : m_fd(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }
  void reset() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = -1;
  }

 private:
  int m_fd;
};

// Opens with O_CLOEXEC so that no sibling child inherits it; dup2 onto 0-2
// in the child clears the flag there. On failure sets `error`.
int open_cloexec(const std::filesystem::path& path, int flags, std::string& error) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    error = errno_text(fmt::format("open '{}'", path.string()), err);
  }
  return fd;
}

int open_output(const std::filesystem::path& path, std::string& error) {
  if (path.empty()) {
    return open_cloexec("/dev/null", O_WRONLY, error);
  }
  return open_cloexec(path, O_WRONLY | O_CREAT | O_TRUNC, error);
}

// NUL-terminated char* arrays for execve, built before fork (the child may
// not allocate).
class CStrings {
 public:
  explicit CStrings(std::vector<std::string> strings) : m_strings(std::move(strings)) {
    for (std::string& s : m_strings) {
      m_pointers.push_back(s.data());
    }
    m_pointers.push_back(nullptr);
  }
  char* const* get() { return m_pointers.data(); }

 private:
  std::vector<std::string> m_strings;
  std::vector<char*> m_pointers;
};

std::vector<std::string> env_strings(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (const auto& [key, value] : env) {
    out.push_back(key + "=" + value);
  }
  return out;
}

// What the child writes to the report pipe when a step before exec fails.
enum ChildStep : int { step_setpgid, step_signals, step_dup2, step_chdir, step_execve };

struct ChildError {
  int step;
  int err;
};

std::string child_error_text(const ChildError& e, const SpawnSpec& spec) {
  const char* reason = std::strerror(e.err);
  switch (e.step) {
    case step_setpgid: return fmt::format("setpgid: {}", reason);
    case step_signals: return fmt::format("sigaction: {}", reason);
    case step_dup2: return fmt::format("dup2: {}", reason);
    case step_chdir: return fmt::format("chdir '{}': {}", spec.cwd.string(), reason);
    default: return fmt::format("execve '{}': {}", spec.argv.empty() ? std::string() : spec.argv[0], reason);
  }
}

// In the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void report_and_exit(int report_fd, int step) {
  ChildError e{step, errno};
  while (::write(report_fd, &e, sizeof e) < 0 && errno == EINTR) {
  }
  ::_exit(127);
}

// dup2 onto the same number is a no-op that would leave O_CLOEXEC set (a
// caller started with 0-2 closed gets our descriptors there).
bool move_fd(int from, int to) {
  if (from == to) {
    return ::fcntl(to, F_SETFD, 0) == 0;
  }
  return ::dup2(from, to) == to;
}

struct ChildFds {
  int in, out, err, report;
  unsigned long long memory_limit;  // RLIMIT_AS, 0: none
};

[[noreturn]] void exec_child(const ChildFds& fds, pid_t parent, const char* cwd, char* const* argv, char* const* envp) {
  if (::setpgid(0, 0) != 0) {
    report_and_exit(fds.report, step_setpgid);
  }
  // The child dies with the driver, even when the driver is SIGKILLed and
  // cannot kill the group itself; a driver that died before this line is
  // noticed by the changed parent.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  child_setup::limit_memory(fds.memory_limit);
  if (::getppid() != parent) {
    ::_exit(127);
  }
  if (!child_setup::reset_signals()) {
    report_and_exit(fds.report, step_signals);
  }
  if (!move_fd(fds.in, 0) || !move_fd(fds.out, 1) || !move_fd(fds.err, 2)) {
    report_and_exit(fds.report, step_dup2);
  }
  // Descriptors the caller left inheritable are not the child's business;
  // best effort (needs Linux 5.11), the report pipe is CLOEXEC already.
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  if (cwd != nullptr && ::chdir(cwd) != 0) {
    report_and_exit(fds.report, step_chdir);
  }
  ::execve(argv[0], argv, envp);
  report_and_exit(fds.report, step_execve);
}

pid_t waitpid_retry(pid_t pid, int* wstatus, int options) {
  pid_t rc;
  do {
    rc = ::waitpid(pid, wstatus, options);
  } while (rc < 0 && errno == EINTR);
  return rc;
}

// Blocks until the child has exec'd (the CLOEXEC pipe closes: 0 bytes) or
// reported why it could not.
bool read_child_error(int fd, ChildError& e) {
  ssize_t n;
  do {
    n = ::read(fd, &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof e);
}

// Starts the child; returns its pid, or -1 with `error` set.
pid_t spawn(const SpawnSpec& spec, std::string& error) {
  if (spec.argv.empty()) {
    error = "execve: empty argv";
    return -1;
  }
  auto inherited = [&](int fd) {
    int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) {
      error = errno_text("dup");
    }
    return copy;
  };
  const bool own_err = spec.inherit_streams && spec.stderr_path.empty();
  Fd in(spec.inherit_streams ? inherited(0) : open_cloexec("/dev/null", O_RDONLY, error));
  Fd out(in.get() < 0 ? -1 : spec.inherit_streams ? inherited(1) : open_output(spec.stdout_path, error));
  Fd err(out.get() < 0 ? -1 : own_err ? inherited(2) : open_output(spec.stderr_path, error));
  if (err.get() < 0) {
    return -1;
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    error = errno_text("pipe");
    return -1;
  }
  Fd report_read(pipe_fds[0]);
  Fd report_write(pipe_fds[1]);
  CStrings argv(spec.argv);
  CStrings envp(env_strings(spec.env));
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    error = errno_text("fork");
    return -1;
  }
  if (pid == 0) {
    exec_child({in.get(), out.get(), err.get(), report_write.get(), spec.memory_limit_bytes}, parent, cwd, argv.get(),
               envp.get());
  }
  ::setpgid(pid, pid);  // also here, so the group exists whichever side runs first
  report_write.reset();
  ChildError child_error{};
  if (read_child_error(report_read.get(), child_error)) {
    waitpid_retry(pid, nullptr, 0);
    error = child_error_text(child_error, spec);
    return -1;
  }
  return pid;
}

std::string file_tail(const std::filesystem::path& path, size_t tail_bytes) {
  if (path.empty() || tail_bytes == 0) {
    return "";
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return "";
  }
  std::streamoff size = in.tellg();
  std::streamoff start = std::max<std::streamoff>(0, size - static_cast<std::streamoff>(tail_bytes));
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(in.gcount()));
  return tail;
}

std::chrono::duration<double> seconds(double s) {
  return std::chrono::duration<double>(s);
}

void decode_wait_status(int wstatus, ExitStatus& st) {
  if (WIFEXITED(wstatus)) {
    st.how = How::exited;
    st.exit_code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    st.how = How::signaled;
    st.signal = WTERMSIG(wstatus);
    st.core_dumped = WCOREDUMP(wstatus);
  }
}

}  // namespace

struct ProcessSet::Child {
  int token = 0;
  pid_t pid = -1;  // -1: the spawn failed and `status` says why
  SpawnSpec spec;
  Clock::time_point started;
  std::optional<How> stop_reason;  // timed_out or interrupted, once decided
  std::optional<Clock::time_point> term_sent;
  bool kill_sent = false;
  ExitStatus status;

  // Sends TERM to the group once the child is to stop, KILL after the grace.
  void escalate(Clock::time_point now) {
    if (!stop_reason && spec.timeout_s > 0 && now - started >= seconds(spec.timeout_s) && !exited()) {
      // A child that ended before this look is judged by its exit, not by
      // when the driver noticed.
      stop_reason = How::timed_out;
      status.limit_s = spec.timeout_s;
    }
    if (!stop_reason) {
      return;
    }
    if (!term_sent) {
      ::kill(-pid, SIGTERM);
      term_sent = now;
      status.stopped_at = std::chrono::duration<double>(now.time_since_epoch()).count();
    } else if (!kill_sent && now - *term_sent >= seconds(spec.kill_grace_s)) {
      ::kill(-pid, SIGKILL);
      kill_sent = true;
    }
  }

  // Whether the child has ended (its status is left to reap).
  bool exited() const {
    siginfo_t info{};
    int rc;
    do {
      rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    } while (rc < 0 && errno == EINTR);
    return rc == 0 && info.si_pid != 0;
  }

  // Reaps the child if it has ended. A child that was stopped has the rest of
  // its group killed first, while its zombie still holds the group id.
  bool try_reap() {
    siginfo_t info{};
    int rc;
    do {
      rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
      // ECHILD: reaped elsewhere (SIGCHLD ignored, say); no status to give.
      status.spawn_error = errno_text("waitid");
      return true;
    }
    if (info.si_pid == 0) {
      return false;
    }
    // The rest of its group goes with it (a helper it left running), while
    // its zombie still holds the group id.
    ::kill(-pid, SIGKILL);
    int wstatus = 0;
    waitpid_retry(pid, &wstatus, 0);
    release_group(pid);
    decode_wait_status(wstatus, status);
    if (stop_reason) {
      status.how = *stop_reason;
    }
    return true;
  }

  void finish() {
    status.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    status.stdout_tail = file_tail(spec.stdout_path, spec.tail_bytes);
    status.stderr_tail = file_tail(spec.stderr_path, spec.tail_bytes);
  }
};

std::string ExitStatus::describe() const {
  switch (how) {
    case How::exited: return fmt::format("exit {}", exit_code);
    case How::signaled:
      return fmt::format("signal {} ({}){}", signal, signal_name(signal), core_dumped ? " (core dumped)" : "");
    case How::timed_out: return fmt::format("no exit within {:g} s", limit_s > 0 ? limit_s : seconds);
    case How::interrupted: return "interrupted";
    case How::spawn_failed: return "spawn failed: " + spawn_error;
  }
  return "unknown";
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return fmt::format("signal {}", sig);
  }
}

ExitStatus run_process(const SpawnSpec& spec) {
  ProcessSet set;
  set.start(spec);
  return set.wait_any().second;
}

ProcessSet::ProcessSet() = default;

ProcessSet::~ProcessSet() {
  kill_all();
}

int ProcessSet::start(const SpawnSpec& spec) {
  auto c = std::make_unique<Child>();
  c->token = m_next_token++;
  c->spec = spec;
  c->started = Clock::now();
  c->pid = forkserver_spawn(spec);
  if (c->pid < 0) {
    c->pid = spawn(spec, c->status.spawn_error);
  }
  if (c->pid > 0) {
    guard_group(c->pid);  // what the child starts dies with the driver, even on SIGKILL
  }
  m_children.push_back(c.get());
  return c.release()->token;
}

size_t ProcessSet::running() const {
  return m_children.size();
}

std::pair<int, ExitStatus> ProcessSet::wait_any(const std::function<void()>& tick) {
  if (m_children.empty()) {
    return {-1, ExitStatus{}};
  }
  auto next_tick = Clock::now() + std::chrono::milliseconds(200);
  for (;;) {
    if (tick && Clock::now() >= next_tick) {
      tick();
      next_tick = Clock::now() + std::chrono::milliseconds(200);
    }
    bool interrupted = interrupt_requested();
    for (size_t i = 0; i < m_children.size(); ++i) {
      Child* c = m_children[i];
      if (interrupted && !c->stop_reason) {
        c->stop_reason = How::interrupted;
      }
      if (c->pid < 0 || c->try_reap()) {
        c->finish();
        m_children.erase(m_children.begin() + static_cast<std::ptrdiff_t>(i));
        std::unique_ptr<Child> owned(c);
        return {owned->token, std::move(owned->status)};
      }
      c->escalate(Clock::now());
    }
    std::this_thread::sleep_for(k_poll_interval);
  }
}

void ProcessSet::kill_all() {
  for (Child* c : m_children) {
    if (!c->stop_reason) {
      c->stop_reason = How::interrupted;
    }
  }
  while (!m_children.empty()) {
    wait_any();
  }
}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
}

bool interrupt_requested() {
  return g_interrupted.load() != 0;
}

int interrupt_signal() {
  return g_interrupted.load();
}

void request_interrupt() {
  g_interrupted.store(SIGINT);
}

void clear_interrupt() {
  g_interrupted.store(0);
}

}  // namespace aoti_bisect
