#pragma once
// Running child processes: argv and an explicit environment (no shell), a
// process group of their own, stdin from /dev/null, stdout and stderr to
// files, a timeout that kills the whole group (TERM, then KILL after a grace
// period). The outcome is a value: an exit stays an exit, a signal a signal.

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace aoti_bisect {

struct SpawnSpec {
  std::vector<std::string> argv;           // argv[0] is the program path (no PATH search)
  std::map<std::string, std::string> env;  // the child's whole environment
  std::filesystem::path cwd;               // empty: inherit
  std::filesystem::path stdout_path;       // empty: /dev/null
  std::filesystem::path stderr_path;       // empty: /dev/null
  // The caller's own stdin and stdout (and stderr where stderr_path is
  // empty): a user's program run in the foreground (`aoti-bisect capture`).
  bool inherit_streams = false;
  // Both are opened by the parent before the child's chdir: a relative path
  // is relative to the caller's working directory, not to `cwd`.
  double timeout_s = 0;                       // 0: none
  double kill_grace_s = 2.0;                  // TERM -> KILL delay
  unsigned long long memory_limit_bytes = 0;  // the child's address space (RLIMIT_AS); 0: none
  size_t tail_bytes = 8192;                   // how much of each stream ExitStatus keeps
  // Runs with the same environment and key share a fork server (empty: the
  // environment alone); the runner's server holds the key's model loaded.
  std::string server_key;
  // Served by a persistent runner (serve_persistent): the run happens in a
  // process that already ran others of this environment and key, with the
  // model loaded once (the CUDA path: no fork after CUDA is initialised).
  bool persistent = false;
};

struct ExitStatus {
  enum class How { exited, signaled, timed_out, interrupted, spawn_failed };
  How how = How::spawn_failed;
  int exit_code = -1;  // how == exited
  int signal = 0;      // how == signaled (also the signal that ended a timed-out child)
  bool core_dumped = false;
  double seconds = 0;       // wall time from spawn to reap
  double stopped_at = 0;    // timed_out/interrupted: steady-clock seconds (CLOCK_MONOTONIC) when the stop began
  double limit_s = 0;       // timed_out: the limit it ran past (SpawnSpec::timeout_s)
  std::string stdout_tail;  // last tail_bytes of the streams
  std::string stderr_tail;
  std::string spawn_error;  // how == spawn_failed: "execve '/path/to/prog': No such file or directory"

  bool ok() const { return how == How::exited && exit_code == 0; }
  // "exit 0", "exit 3", "signal 11 (SIGSEGV)", "timeout after 5.0 s", ...
  std::string describe() const;
};

// "SIGSEGV" for 11 and so on; "signal N" when unknown.
std::string signal_name(int sig);

// Runs one child to completion (or timeout / interruption).
ExitStatus run_process(const SpawnSpec& spec);

// Several children at once (for --jobs). Not thread-safe; one owner.
class ProcessSet {
 public:
  ProcessSet();
  ~ProcessSet();  // kills whatever still runs
  ProcessSet(const ProcessSet&) = delete;
  ProcessSet& operator=(const ProcessSet&) = delete;

  // Starts a child; returns its token. A failed spawn is reported by wait_any
  // as How::spawn_failed, never thrown.
  int start(const SpawnSpec& spec);
  // Children started and not yet returned by wait_any (failed spawns too).
  size_t running() const;
  // Blocks until one child ends; returns its token and status. Enforces
  // timeouts. If an interrupt was requested (see below), kills every group
  // and reports the children as How::interrupted. With no children, returns
  // token -1. `tick`, when given, is called about every 0.2 s meanwhile.
  std::pair<int, ExitStatus> wait_any(const std::function<void()>& tick = {});
  // Stops every child (TERM to its group, KILL after its grace) and reaps it;
  // their statuses are dropped.
  void kill_all();

 private:
  struct Child;
  std::vector<Child*> m_children;
  int m_next_token = 0;
};

// The runner's fork server (forkserver.cpp): after use_forkserver(program),
// a spawn of `program` is started by a server of that environment, which
// paid the program's start-up once, and reparented to this process (a child
// subreaper), so that it is waited for, timed out and killed like any child.
// Each run is still its own process. AOTI_BISECT_FORKSERVER=0 turns it off;
// any failure of a server makes its environment's runs exec'd again.
// `forked_runs` false: only persistent runs (SpawnSpec::persistent) are
// served, the rest exec'd (a device job).
void use_forkserver(const std::filesystem::path& program, bool forked_runs = true);
// -1 where the spec is not served (another program, no server, a failure).
int forkserver_spawn(const SpawnSpec& spec);
// Starts a server for a run of `env` (the whole environment) now, so that
// LibTorch's start overlaps the driver's work until that run (extraction,
// the inputs); the first forked spawn of that environment, whatever its
// model, takes it. No effect before use_forkserver, or for persistent runs.
void forkserver_prestart(const std::map<std::string, std::string>& env);
// Stops every server and the model it holds (a job's runs are done); a
// later spawn starts a new one.
void forkserver_stop_all();
// A variable a forked run applies itself, from its request, after the fork
// (the runner reads it only once a run starts, or the run sets what it
// sets): a spawn whose environment differs from a server's only in these is
// served by that server, with the model it has loaded (docs/runner.md).
bool applied_in_the_run(const std::string& name);
// In a run a fork server started: the runs it started before this one
// (the runner's `start` event, `server_runs_before`).
int forkserver_runs_before();
// The program's side: `program --serve` (is_forkserver_request) runs
// serve_forks, which returns 0 at the end of the driver's stream and never
// returns in a run: each run calls run_once with its argv and exits with it.
// `prepare`, where given, is called in the server with each request's argv
// before the fork (the runner loads the model there: docs/runner.md); it
// returns whether the server now holds state worth keeping (a loaded
// model), and must not throw. A server that has started a thread by then
// forks nothing more: that request and the rest are exec'd.
bool is_forkserver_request(int argc, char** argv);
int serve_forks(int (*run_once)(int argc, char** argv), bool (*prepare)(int argc, char** argv) = nullptr);

// The persistent runner (persistent.cpp; docs/runner.md, "The persistent
// runner"): `program --serve-persistent` (is_persistent_request) runs each
// request in its own process, one after another. `prepare` loads the first request's model;
// a request it cannot serve (prepare returns false) is answered with an
// error, and the driver execs it. For each run the server forks a stand-in,
// a process that only waits, reparented to the driver like a forked run:
// the driver waits for it, times it out and kills its group as it does any
// run, and the server joins that group for the run's time, so that a kill
// reaches the model too. The stand-in exits with the run's exit status, or
// dies of the signal that killed the run (SIGKILL where the server died
// without a word). After a run that did not end with exit 0 the server
// exits: an error may leave the device unusable (CUDA's are sticky).
bool is_persistent_request(int argc, char** argv);
int serve_persistent(int (*run_once)(int argc, char** argv), bool (*prepare)(int argc, char** argv));
// In a persistent run, before the process ends in a way serve_persistent
// does not see (std::_Exit, a fatal signal's handler): tells the stand-in.
// `signal` > 0: the run dies of it; else it exits with `exit_code`.
// Async-signal-safe; nothing outside a persistent run.
void persistent_run_ends(int exit_code, int signal = 0);
// Whether this process is a persistent runner between or in runs.
bool in_persistent_runner();

// Interrupt handling: install_interrupt_handlers() makes SIGINT, SIGTERM and
// SIGHUP set a flag (and nothing else); process waits notice it, kill their
// groups and return How::interrupted. The driver then writes its partial
// report. Children also get SIGKILL when the driver dies (PR_SET_PDEATHSIG),
// so even a SIGKILLed driver leaves no runner behind.
void install_interrupt_handlers();
bool interrupt_requested();
int interrupt_signal();    // the signal that requested it (SIGINT for request_interrupt), 0 if none
void request_interrupt();  // for tests
void clear_interrupt();    // for tests

// The current process's environment as a map (the base that variants add to).
std::map<std::string, std::string> current_environment();

// A program name without '/' looked up on PATH (run_process does no PATH
// search); a name with '/' made absolute. nullopt when not found.
std::optional<std::filesystem::path> find_program(const std::string& name);

// The machine's RAM in bytes (sysconf); 0 when unknown.
unsigned long long physical_memory_bytes();

// Absolute path of the running executable (/proc/self/exe).
std::filesystem::path self_executable();

}  // namespace aoti_bisect
