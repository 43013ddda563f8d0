#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "package_fixture.hpp"
#include "process/group_guard.hpp"
#include "process/process.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;
using How = ExitStatus::How;

namespace {

const std::map<std::string, std::string> k_path_env = {{"PATH", "/usr/bin:/bin"}};

SpawnSpec shell(const std::string& script) {
  SpawnSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = k_path_env;
  return spec;
}

void spit(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A zombie still answers kill(pid, 0) and the container's init may never
// reap it, so "alive" means: exists and is not a zombie.
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) {
    return false;
  }
  std::string stat = fixture::read("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// SIGKILL is delivered asynchronously; give the kernel a moment.
bool gone_soon(pid_t pid) {
  for (int i = 0; i < 100 && alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return !alive(pid);
}

// Waits until the child has written a pid line to `path`.
pid_t read_pid(const fs::path& path) {
  for (int i = 0; i < 200; ++i) {
    std::string text = fixture::read(path);
    if (!text.empty() && text.back() == '\n') {
      return static_cast<pid_t>(std::stol(text));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

// Points our own stdin at an open pipe, so a child that inherited it would
// block or show "pipe:[...]" instead of passing by luck.
struct StdinIsPipe {
  int saved = ::dup(0);
  int fds[2] = {-1, -1};
  StdinIsPipe() {
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(::dup2(fds[0], 0) == 0);
  }
  ~StdinIsPipe() {
    ::dup2(saved, 0);
    ::close(saved);
    ::close(fds[0]);
    ::close(fds[1]);
  }
};

// Restores the interrupt flag and the signal dispositions a test changed.
struct InterruptGuard {
  struct sigaction old_int {};
  struct sigaction old_term {};
  InterruptGuard() {
    ::sigaction(SIGINT, nullptr, &old_int);
    ::sigaction(SIGTERM, nullptr, &old_term);
    clear_interrupt();
  }
  ~InterruptGuard() {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    clear_interrupt();
  }
};

}  // namespace

TEST_SUITE_BEGIN("process");

TEST_CASE("run_process reports the exit code") {
  SUBCASE("exit 0") {
    ExitStatus st = run_process(shell("exit 0"));
    CHECK(st.how == How::exited);
    CHECK(st.exit_code == 0);
    CHECK(st.signal == 0);
    CHECK(st.ok());
    CHECK(st.describe() == "exit 0");
    CHECK(st.seconds > 0);
    CHECK(st.seconds < 2);
  }
  SUBCASE("exit 3") {
    ExitStatus st = run_process(shell("exit 3"));
    CHECK(st.how == How::exited);
    CHECK(st.exit_code == 3);
    CHECK_FALSE(st.ok());
    CHECK(st.describe() == "exit 3");
  }
}

TEST_CASE("run_process keeps a signal a signal") {
  // ulimit -c 0 keeps core files out of the test directory; a piped
  // core_pattern may still dump, so core_dumped is not asserted here.
  SUBCASE("SIGSEGV") {
    ExitStatus st = run_process(shell("ulimit -c 0; kill -SEGV $$"));
    CHECK(st.how == How::signaled);
    CHECK(st.signal == SIGSEGV);
    CHECK(st.exit_code == -1);
    CHECK_FALSE(st.ok());
    CHECK(st.describe() == std::string("signal 11 (SIGSEGV)") + (st.core_dumped ? " (core dumped)" : ""));
  }
  SUBCASE("SIGBUS") {
    ExitStatus st = run_process(shell("ulimit -c 0; kill -BUS $$"));
    CHECK(st.how == How::signaled);
    CHECK(st.signal == SIGBUS);
    CHECK(signal_name(st.signal) == "SIGBUS");
  }
}

TEST_CASE("describe and signal_name") {
  ExitStatus st;
  SUBCASE("core dumped") {
    st.how = How::signaled;
    st.signal = SIGABRT;
    st.core_dumped = true;
    CHECK(st.describe() == "signal 6 (SIGABRT) (core dumped)");
  }
  SUBCASE("timeout") {
    st.how = How::timed_out;
    st.signal = SIGTERM;
    st.seconds = 5.04;
    CHECK(st.describe() == "no exit within 5.04 s");
    st.limit_s = 5;
    CHECK(st.describe() == "no exit within 5 s");  // the limit, not when the driver noticed
  }
  SUBCASE("interrupted") {
    st.how = How::interrupted;
    CHECK(st.describe() == "interrupted");
  }
  SUBCASE("default is a failed spawn") {
    st.spawn_error = "fork: Resource temporarily unavailable";
    CHECK_FALSE(st.ok());
    CHECK(st.describe() == "spawn failed: fork: Resource temporarily unavailable");
  }
  SUBCASE("signal names") {
    CHECK(signal_name(SIGSEGV) == "SIGSEGV");
    CHECK(signal_name(SIGBUS) == "SIGBUS");
    CHECK(signal_name(SIGILL) == "SIGILL");
    CHECK(signal_name(SIGFPE) == "SIGFPE");
    CHECK(signal_name(SIGABRT) == "SIGABRT");
    CHECK(signal_name(SIGKILL) == "SIGKILL");
    CHECK(signal_name(SIGTERM) == "SIGTERM");
    CHECK(signal_name(SIGINT) == "SIGINT");
    CHECK(signal_name(SIGTRAP) == "SIGTRAP");
    CHECK(signal_name(SIGPIPE) == "SIGPIPE");
    CHECK(signal_name(0) == "signal 0");
    CHECK(signal_name(77) == "signal 77");
  }
}

TEST_CASE("the child's environment is exactly the env map") {
  SpawnSpec spec;
  spec.argv = {"/usr/bin/env"};
  spec.stdout_path = "env.txt";
  SUBCASE("one variable") {
    spec.env = {{"A", "1"}};
    REQUIRE(run_process(spec).ok());
    CHECK(fixture::read("env.txt") == "A=1\n");
  }
  SUBCASE("empty") {
    REQUIRE(run_process(spec).ok());
    CHECK(fixture::read("env.txt") == "");
  }
  SUBCASE("values with '=' and spaces, sorted by name") {
    spec.env = {{"B", "x=y"}, {"A", "two words"}};
    REQUIRE(run_process(spec).ok());
    CHECK(fixture::read("env.txt") == "A=two words\nB=x=y\n");
  }
}

TEST_CASE("argv is passed as is, without a shell") {
  SpawnSpec spec;
  spec.argv = {"/bin/sh", "-c", "printf '%s|' \"$0\" \"$@\"", "zero", "a b", "$HOME", "*"};
  spec.stdout_path = "argv.txt";
  REQUIRE(run_process(spec).ok());
  CHECK(fixture::read("argv.txt") == "zero|a b|$HOME|*|");
}

TEST_CASE("cwd: the child runs there, output paths stay relative to the caller") {
  fs::create_directory("sub");
  SpawnSpec spec = shell("pwd -P; echo file > here.txt");
  spec.cwd = "sub";
  spec.stdout_path = "pwd.txt";
  REQUIRE(run_process(spec).ok());
  CHECK(fixture::read("pwd.txt") == fs::canonical("sub").string() + "\n");
  CHECK(fixture::read("sub/here.txt") == "file\n");
  CHECK_FALSE(fs::exists("sub/pwd.txt"));
}

TEST_CASE("stdin is /dev/null, unset streams go to /dev/null") {
  StdinIsPipe stdin_is_pipe;
  SUBCASE("cat ends at once with no output") {
    SpawnSpec spec;
    spec.argv = {"/bin/cat"};
    spec.stdout_path = "cat.txt";
    spec.timeout_s = 5;
    ExitStatus st = run_process(spec);
    CHECK(st.how == How::exited);
    CHECK(st.exit_code == 0);
    CHECK(st.seconds < 2);
    CHECK(fixture::read("cat.txt") == "");
  }
  SUBCASE("fds 0 and 1") {
    // The substitution runs in a subshell; $$ stays the shell we spawned.
    SpawnSpec spec = shell("fds=$(readlink /proc/$$/fd/0 /proc/$$/fd/1); echo \"$fds\" >&2");
    spec.stderr_path = "fds.txt";
    REQUIRE(run_process(spec).ok());
    CHECK(fixture::read("fds.txt") == "/dev/null\n/dev/null\n");
  }
  SUBCASE("no other descriptor of ours leaks into the child") {
    int inheritable = ::open("leak.txt", O_WRONLY | O_CREAT, 0644);  // no O_CLOEXEC
    REQUIRE(inheritable >= 3);
    SpawnSpec spec;
    spec.argv = {"/bin/ls", "/proc/self/fd"};
    spec.stdout_path = "fdlist.txt";
    ExitStatus st = run_process(spec);
    ::close(inheritable);
    REQUIRE(st.ok());
    // 0-2 plus the one ls opens to list the directory.
    CHECK(fixture::read("fdlist.txt") == "0\n1\n2\n3\n");
  }
}

TEST_CASE("a caller with stdin and stdout closed still gives the child its streams") {
  int saved_in = ::dup(0);
  int saved_out = ::dup(1);
  ::close(0);
  ::close(1);
  SpawnSpec spec;
  spec.argv = {"/usr/bin/readlink", "/proc/self/fd/0", "/proc/self/fd/1"};
  spec.stdout_path = "links.txt";
  ExitStatus st = run_process(spec);
  ::dup2(saved_in, 0);
  ::dup2(saved_out, 1);
  ::close(saved_in);
  ::close(saved_out);
  CHECK(st.ok());
  CHECK(fixture::read("links.txt") == "/dev/null\n" + fs::canonical("links.txt").string() + "\n");
}

TEST_CASE("output files are truncated, created 0644, and their tails kept") {
  mode_t old_umask = ::umask(022);
  spit("out.txt", "old content that is longer\n");
  SpawnSpec spec = shell("printf short; printf 0123456789abcdefghij >&2");
  spec.stdout_path = "out.txt";
  spec.stderr_path = "err.txt";
  spec.tail_bytes = 5;
  ExitStatus st = run_process(spec);
  ::umask(old_umask);
  REQUIRE(st.ok());
  CHECK(fixture::read("out.txt") == "short");
  CHECK(fixture::read("err.txt") == "0123456789abcdefghij");
  CHECK(st.stdout_tail == "short");
  CHECK(st.stderr_tail == "fghij");
  CHECK((fs::status("err.txt").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read));

  SUBCASE("tail larger than the stream keeps it all") {
    spec.tail_bytes = 8192;
    st = run_process(spec);
    CHECK(st.stderr_tail == "0123456789abcdefghij");
  }
  SUBCASE("no files, no tails") {
    spec.stdout_path.clear();
    spec.stderr_path.clear();
    st = run_process(spec);
    CHECK(st.stdout_tail == "");
    CHECK(st.stderr_tail == "");
  }
}

TEST_CASE("a timeout kills the whole group") {
  // The child prints its background grandchild's pid, then waits for it.
  SpawnSpec spec;
  SUBCASE("TERM is enough") {
    spec = shell("sleep 1000 & echo $!; wait");
    spec.timeout_s = 0.3;
    spec.kill_grace_s = 5;
    spec.stdout_path = "grandchild.txt";
    ExitStatus st = run_process(spec);
    CHECK(st.how == How::timed_out);
    CHECK(st.signal == SIGTERM);
    CHECK(st.seconds >= 0.3);
    CHECK(st.seconds < 2);
    pid_t grandchild = static_cast<pid_t>(std::stol(st.stdout_tail));
    CHECK(gone_soon(grandchild));
  }
  SUBCASE("TERM ignored by both: KILL after the grace period") {
    spec = shell("trap '' TERM; sleep 1000 & echo $!; wait");
    spec.timeout_s = 0.3;
    spec.kill_grace_s = 0.3;
    spec.stdout_path = "grandchild.txt";
    ExitStatus st = run_process(spec);
    CHECK(st.how == How::timed_out);
    CHECK(st.signal == SIGKILL);
    CHECK(st.seconds >= 0.6);
    CHECK(st.seconds < 2);
    pid_t grandchild = static_cast<pid_t>(std::stol(st.stdout_tail));
    CHECK(gone_soon(grandchild));
  }
  SUBCASE("TERM reaches the grandchild, not only the leader") {
    // The leader survives TERM (a trap), collects the grandchild's status
    // (143: killed by TERM) and stays until KILL.
    spec = shell("trap 'echo term > trap.txt' TERM; sleep 1000 & wait; wait $!; echo $? > status.txt; exec sleep 1000");
    spec.timeout_s = 0.3;
    spec.kill_grace_s = 0.3;
    ExitStatus st = run_process(spec);
    CHECK(st.how == How::timed_out);
    CHECK(st.signal == SIGKILL);
    CHECK(fixture::read("trap.txt") == "term\n");
    CHECK(fixture::read("status.txt") == "143\n");
  }
  SUBCASE("the leader exits on TERM, a grandchild ignoring it is killed anyway") {
    spec = shell("(trap '' TERM; exec sleep 1000) & echo $!; wait");
    spec.timeout_s = 0.3;
    spec.kill_grace_s = 5;
    spec.stdout_path = "grandchild.txt";
    ExitStatus st = run_process(spec);
    CHECK(st.how == How::timed_out);
    CHECK(st.signal == SIGTERM);
    CHECK(st.seconds < 2);
    pid_t grandchild = static_cast<pid_t>(std::stol(st.stdout_tail));
    CHECK(gone_soon(grandchild));
  }
}

TEST_CASE("a child that exits leaving a helper running: the helper dies when the child is reaped") {
  SpawnSpec spec = shell("sleep 1000 & echo $!");
  spec.stdout_path = "helper.txt";
  ExitStatus st = run_process(spec);
  CHECK(st.ok());
  pid_t helper = static_cast<pid_t>(std::stol(st.stdout_tail));
  CHECK(gone_soon(helper));
}

TEST_CASE("the group guard runs in its own session once a child has started") {
  CHECK(run_process(shell("true")).ok());
  pid_t guard = group_guard_pid();
  REQUIRE(guard > 0);
  CHECK(::kill(guard, 0) == 0);     // alive while this process lives
  CHECK(::getsid(guard) == guard);  // outside our session: a Ctrl-C or group kill leaves it be
  CHECK(::getpgid(guard) != ::getpgid(0));
  // Nothing that looks for this process by its command line takes the guard for it.
  std::ifstream in("/proc/" + std::to_string(guard) + "/cmdline", std::ios::binary);
  std::string cmd((std::istreambuf_iterator<char>(in)), {});
  std::string name = cmd.c_str();  // up to its first NUL; as much of the name as the area holds
  CHECK(name.size() >= 10);
  CHECK(std::string("aoti-bisect-group-guard").rfind(name, 0) == 0);
}

TEST_CASE("signals the caller ignores are default again in the child") {
  InterruptGuard guard;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ignore, nullptr);
  SpawnSpec spec;
  spec.argv = {"/bin/sleep", "1000"};
  spec.timeout_s = 0.2;
  spec.kill_grace_s = 1;
  ExitStatus st = run_process(spec);
  CHECK(st.how == How::timed_out);
  CHECK(st.signal == SIGTERM);
}

TEST_CASE("a child that ends in time is not touched by its timeout") {
  SpawnSpec spec = shell("exit 4");
  spec.timeout_s = 5;
  ExitStatus st = run_process(spec);
  CHECK(st.how == How::exited);
  CHECK(st.exit_code == 4);
}

TEST_CASE("spawn failures are values with the failing call's name") {
  SpawnSpec spec;
  spec.argv = {"/nonexistent/program"};
  ExitStatus st;
  SUBCASE("missing program") {
    st = run_process(spec);
    CHECK(st.spawn_error == "execve '/nonexistent/program': No such file or directory");
    CHECK(st.describe() == "spawn failed: execve '/nonexistent/program': No such file or directory");
  }
  SUBCASE("not executable") {
    spit("data.txt", "#!/bin/sh\n");
    ::chmod("data.txt", 0644);
    spec.argv = {"./data.txt"};
    st = run_process(spec);
    CHECK(st.spawn_error == "execve './data.txt': Permission denied");
  }
  SUBCASE("no PATH search") {
    spec.argv = {"sh", "-c", "true"};
    spec.env = k_path_env;
    st = run_process(spec);
    CHECK(st.spawn_error == "execve 'sh': No such file or directory");
  }
  SUBCASE("missing cwd") {
    spec.argv = {"/bin/sh", "-c", "true"};
    spec.cwd = "no-such-dir";
    st = run_process(spec);
    CHECK(st.spawn_error == "chdir 'no-such-dir': No such file or directory");
  }
  SUBCASE("output file in a missing directory") {
    spec.argv = {"/bin/sh", "-c", "true"};
    spec.stderr_path = "no-such-dir/err.txt";
    st = run_process(spec);
    CHECK(st.spawn_error == "open 'no-such-dir/err.txt': No such file or directory");
  }
  SUBCASE("empty argv") {
    spec.argv.clear();
    st = run_process(spec);
    CHECK(st.spawn_error == "execve: empty argv");
  }
  CHECK(st.how == How::spawn_failed);
  CHECK(st.exit_code == -1);
  CHECK_FALSE(st.ok());
}

TEST_CASE("ProcessSet returns children in the order they finish") {
  ProcessSet set;
  int slow = set.start(shell("sleep 0.6; exit 1"));
  int fast = set.start(shell("sleep 0.2; exit 2"));
  int middle = set.start(shell("sleep 0.4; exit 3"));
  CHECK(set.running() == 3);

  auto [t1, s1] = set.wait_any();
  CHECK(t1 == fast);
  CHECK(s1.exit_code == 2);
  CHECK(set.running() == 2);
  auto [t2, s2] = set.wait_any();
  CHECK(t2 == middle);
  CHECK(s2.exit_code == 3);
  auto [t3, s3] = set.wait_any();
  CHECK(t3 == slow);
  CHECK(s3.exit_code == 1);
  CHECK(s3.seconds >= 0.6);
  CHECK(set.running() == 0);
  CHECK(set.wait_any().first == -1);
}

TEST_CASE("ProcessSet: a failed spawn comes back from wait_any, a timeout only hits its child") {
  ProcessSet set;
  SpawnSpec hang = shell("sleep 1000");
  hang.timeout_s = 0.2;
  SpawnSpec quick = shell("sleep 0.4; exit 5");
  SpawnSpec missing;
  missing.argv = {"/nonexistent/program"};
  int hang_token = set.start(hang);
  int quick_token = set.start(quick);
  int missing_token = set.start(missing);
  CHECK(set.running() == 3);

  auto [t1, s1] = set.wait_any();
  CHECK(t1 == missing_token);
  CHECK(s1.how == How::spawn_failed);
  auto [t2, s2] = set.wait_any();
  CHECK(t2 == hang_token);
  CHECK(s2.how == How::timed_out);
  auto [t3, s3] = set.wait_any();
  CHECK(t3 == quick_token);
  CHECK(s3.how == How::exited);
  CHECK(s3.exit_code == 5);
}

TEST_CASE("ProcessSet's destructor and kill_all end the children's groups") {
  SpawnSpec spec = shell("sleep 1000 & echo $!; wait");
  SUBCASE("destructor") {
    spec.stdout_path = "d.txt";
    pid_t grandchild = -1;
    {
      ProcessSet set;
      set.start(spec);
      grandchild = read_pid("d.txt");
      REQUIRE(grandchild > 0);
      REQUIRE(alive(grandchild));
    }
    CHECK(gone_soon(grandchild));
  }
  SUBCASE("kill_all") {
    spec.stdout_path = "k.txt";
    ProcessSet set;
    set.start(spec);
    pid_t grandchild = read_pid("k.txt");
    REQUIRE(grandchild > 0);
    REQUIRE(alive(grandchild));
    set.kill_all();
    CHECK(set.running() == 0);
    CHECK(gone_soon(grandchild));
  }
}

TEST_CASE("an interrupt stops every child and reports it as interrupted") {
  InterruptGuard guard;
  SUBCASE("requested before the call") {
    request_interrupt();
    SpawnSpec spec = shell("sleep 1000");
    spec.timeout_s = 5;  // if the interrupt were missed: timed_out, not a hang
    ExitStatus st = run_process(spec);
    CHECK(st.how == How::interrupted);
    CHECK(st.describe() == "interrupted");
    CHECK(st.seconds < 1.5);
  }
  SUBCASE("requested from another thread while children run") {
    ProcessSet set;
    SpawnSpec a = shell("echo $$; exec sleep 1000");
    a.stdout_path = "a.txt";
    a.timeout_s = 5;
    SpawnSpec b = shell("sleep 1000 & echo $!; wait");
    b.stdout_path = "b.txt";
    b.timeout_s = 5;
    set.start(a);
    set.start(b);
    pid_t child_a = read_pid("a.txt");
    pid_t grandchild_b = read_pid("b.txt");
    REQUIRE(child_a > 0);
    REQUIRE(grandchild_b > 0);
    REQUIRE(alive(child_a));
    REQUIRE(alive(grandchild_b));
    std::thread interrupter([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      request_interrupt();
    });
    ExitStatus s1 = set.wait_any().second;
    ExitStatus s2 = set.wait_any().second;
    interrupter.join();
    CHECK(s1.how == How::interrupted);
    CHECK(s2.how == How::interrupted);
    CHECK(set.running() == 0);
    CHECK_FALSE(alive(child_a));
    CHECK(gone_soon(grandchild_b));
  }
}

TEST_CASE("install_interrupt_handlers turns SIGINT and SIGTERM into the flag") {
  InterruptGuard guard;
  install_interrupt_handlers();
  CHECK_FALSE(interrupt_requested());
  SUBCASE("SIGINT") {
    ::raise(SIGINT);
    CHECK(interrupt_requested());
  }
  SUBCASE("SIGTERM") {
    ::raise(SIGTERM);
    CHECK(interrupt_requested());
  }
  clear_interrupt();
  CHECK_FALSE(interrupt_requested());
}

TEST_CASE("current_environment and self_executable") {
  ::setenv("AOTI_BISECT_TEST_VAR", "a=b c", 1);
  std::map<std::string, std::string> env = current_environment();
  CHECK(env.at("AOTI_BISECT_TEST_VAR") == "a=b c");
  ::unsetenv("AOTI_BISECT_TEST_VAR");
  CHECK(current_environment().count("AOTI_BISECT_TEST_VAR") == 0);

  fs::path self = self_executable();
  CHECK(self.is_absolute());
  CHECK(self.filename() == "unit_tests");
}

TEST_SUITE_END();
