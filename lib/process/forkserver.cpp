// The runner's fork server. Starting aoti-bisect-runner costs about half a
// second before main() does anything (LibTorch's static initialisers), as
// much as one run of a ResNet-50 on the CPU. A server started once per
// environment pays that once; every run is still a fresh process: the server
// forks a child that forks the run and exits at once, so the run is
// reparented to the driver (a child subreaper) and the driver waits for it,
// times it out and kills its group exactly as it does a child it exec'd.
// The server reads no inputs and starts no thread. The program may prepare
// it before each fork (serve_forks' `prepare`: the runner loads the model of
// its first request there, once per environment and package), so that what
// a run inherits is LibTorch after its static initialisers and, where the
// program chose, the loaded model, nothing else; a server that holds one
// says so in its replies, and the driver keeps at most one such server
// alive (each holds a copy of its model's weights). The request on the wire
// and what the persistent runner (persistent.cpp) shares with the server:
// server_request.hpp.
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/files.hpp"
#include "process/child_setup.hpp"
#include "process/group_guard.hpp"
#include "process/process.hpp"
#include "process/server_request.hpp"

extern char** environ;

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

int g_server_runs = 0;  // runs this fork server started before the current one

int threads_of_this_process() {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator("/proc/self/task", ec); !ec && it != fs::directory_iterator(); ++it) {
    ++n;
  }
  return n;
}

// In the run, before run_once: what exec_child does for an exec'd run.
[[noreturn]] void become_run(const server::Request& req, int in, int out, int err, int (*run_once)(int, char**)) {
  child_setup::limit_memory(req.memory_limit);
  child_setup::reset_signals();
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  ::close_range(3, ~0U, 0);
  if (!req.cwd.empty() && ::chdir(req.cwd.c_str()) != 0) {
    ::_exit(127);
  }
  ::clearenv();
  for (const std::string& kv : req.env) {
    ::putenv(::strdup(kv.c_str()));
  }
  // What glibc reads once, at its start, applied the way it would have
  // been: the server never had it (applied_in_the_run).
  if (const char* perturb = ::getenv("MALLOC_PERTURB_"); perturb != nullptr) {
    ::mallopt(M_PERTURB, std::atoi(perturb));
  }
  std::vector<char*> argv;
  for (const std::string& a : req.argv) {
    argv.push_back(::strdup(a.c_str()));
  }
  argv.push_back(nullptr);
  const int rc = run_once(static_cast<int>(req.argv.size()), argv.data());
  // Without the static destructors (LibTorch's take about a quarter second
  // here): the run has written and closed what it writes.
  std::fflush(nullptr);
  ::_exit(rc);
}

// Starts one run; its pid, or -1 with `why`.
pid_t start_run(const server::Request& req, pid_t driver, int (*run_once)(int, char**), std::string& why) {
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out = server::open_output(req.out);
  int err = server::open_output(req.err);
  pid_t run = -1;
  if (in < 0 || out < 0 || err < 0) {
    why = std::string("open: ") + std::strerror(errno);
  } else {
    run = server::fork_reparented(
        driver, [&] { become_run(req, in, out, err, run_once); }, "run", why);
  }
  for (int fd : {in, out, err}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  return run;
}

// The driver's side: one server per environment, at most k_live_servers
// alive at once. Each holds LibTorch after its start (about 100 MB resident),
// and a job's matrix makes one environment per variant, most of which serve
// one run: beyond the limit, the server that has served the fewest runs (the
// older on a tie) is stopped, and started again if its environment is asked
// for later. Two keep the baseline environment's and the last variant's.
constexpr size_t k_live_servers = 2;
// The key of a server started ahead of its first run (forkserver_prestart),
// before the model it will hold is known; no SpawnSpec::server_key is one.
const char* const k_spare_key = "\nstarted ahead";

struct Server {
  pid_t pid = -1;
  int fd = -1;  // the socket
  bool dead = false;
  bool holds = false;     // its last reply said it holds prepared state (a loaded model)
  uint64_t served = 0;    // runs it started
  uint64_t last_use = 0;  // the registry's clock at its last request
};

struct Registry {
  std::mutex mutex;
  fs::path program;
  bool forked_runs = true;  // false: persistent runs only
  // By environment and server key (SpawnSpec::server_key).
  std::map<std::pair<std::map<std::string, std::string>, std::string>, Server> servers;
  uint64_t clock = 0;
  ~Registry() {
    for (auto& [key, s] : servers) {
      if (s.fd >= 0) {
        ::close(s.fd);  // the server reads the end of its stream and exits
      }
    }
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

// A server's stop: SIGKILL and reap (about 11 ms for one holding LibTorch).
void stop_server(Server& s) {
  ::close(s.fd);
  ::kill(s.pid, SIGKILL);
  while (::waitpid(s.pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  release_group(s.pid);  // its runs are in groups of their own, untouched
  s = Server{};
}

// Before a run of `user`: every other server that holds a loaded model is
// stopped, so that the model's weights are in memory at most twice (one
// server's, shared with its runs, and the run's own where it loads them).
void stop_other_holders(Registry& r, const Server& user) {
  for (auto& [key, s] : r.servers) {
    if (&s != &user && s.pid >= 0 && s.holds) {
      stop_server(s);
    }
  }
}

// Stops live servers until fewer than k_live_servers are alive, the one that
// has served the fewest runs first (the older on a tie).
void make_room(Registry& r) {
  for (;;) {
    Server* victim = nullptr;
    size_t live = 0;
    for (auto& [key, s] : r.servers) {
      if (s.pid < 0) {
        continue;
      }
      ++live;
      if (victim == nullptr || std::pair(s.served, s.last_use) < std::pair(victim->served, victim->last_use)) {
        victim = &s;
      }
    }
    if (live < k_live_servers || victim == nullptr) {
      return;
    }
    stop_server(*victim);
  }
}

Server start_server(const fs::path& program, const std::map<std::string, std::string>& env, bool persistent) {
  Server s;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    s.dead = true;
    return s;
  }
  std::vector<std::string> env_text;
  for (const auto& [k, v] : env) {
    env_text.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& e : env_text) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  std::string prog = program.string();
  std::string flag(persistent ? server::k_persistent_flag : server::k_serve_flag);
  char* argv[] = {prog.data(), flag.data(), nullptr};
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    child_setup::reset_signals();
    ::dup2(sv[1], 0);
    ::dup2(sv[1], 1);
    ::dup2(devnull, 2);
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  ::close(sv[1]);
  if (devnull >= 0) {
    ::close(devnull);
  }
  if (pid < 0) {
    ::close(sv[0]);
    s.dead = true;
    return s;
  }
  s.pid = pid;
  guard_group(pid);  // what a run of it leaves behind dies with the driver, even on SIGKILL
  s.fd = sv[0];
  return s;
}

// One reply line, waiting at most `timeout`, and no longer once the driver
// is interrupted.
bool read_reply(int fd, std::string& line, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  line.clear();
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || interrupt_requested()) {
      return false;
    }
    struct pollfd p {
      fd, POLLIN, 0
    };
    int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 200)));
    if ((rc < 0 && errno == EINTR) || rc == 0) {
      continue;
    }
    if (rc < 0) {
      return false;
    }
    char c;
    ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) {
      return false;
    }
    if (c == '\n') {
      return true;
    }
    line.push_back(c);
  }
}

}  // namespace

bool is_forkserver_request(int argc, char** argv) {
  return argc == 2 && argv[1] == server::k_serve_flag;
}

int serve_forks(int (*run_once)(int argc, char** argv), bool (*prepare)(int argc, char** argv)) {
  pid_t driver = ::getppid();
  ::signal(SIGPIPE, SIG_DFL);
  std::string buffer;
  for (;;) {
    server::Request req;
    if (!server::read_request(0, buffer, req)) {
      return 0;
    }
    bool holds = false;
    if (prepare != nullptr) {
      std::vector<char*> argv = server::argv_of(req.argv);
      holds = prepare(static_cast<int>(req.argv.size()), argv.data());
    }
    std::string why;
    pid_t pid = -1;
    if (int n = threads_of_this_process(); n != 1) {
      why = "the server has " + std::to_string(n) + " threads; forking it is not safe";
    } else {
      pid = start_run(req, driver, run_once, why);  // the run sees g_server_runs as it was
      g_server_runs += pid > 0 ? 1 : 0;
    }
    std::string reply = pid > 0 ? "pid " + std::to_string(pid) + (holds ? " held" : "") + "\n" : "error " + why + "\n";
    if (!write_all(1, reply)) {
      return 0;
    }
  }
}

int forkserver_runs_before() {
  return g_server_runs;
}

void forkserver_stop_all() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& [key, s] : r.servers) {
    if (s.pid > 0) {
      stop_server(s);
    }
  }
}

bool applied_in_the_run(const std::string& name) {
  // AOTI_RUNTIME_CHECK_INPUTS: the generated wrapper reads it at the model's
  // first run (a function's static), which a server never makes.
  // AOTI_BISECT_POISON: the runner binds its poison after the load, in the
  // run. MALLOC_PERTURB_: glibc reads it at its start; the run sets it with
  // mallopt (become_run). OMP_NUM_THREADS: libgomp reads it at its start;
  // the run sets it with at::set_num_threads (the runner, when forked).
  // ATEN_CPU_CAPABILITY is not one: the load may dispatch ATen's kernels,
  // which fixes the capability.
  return name == "AOTI_RUNTIME_CHECK_INPUTS" || name == "AOTI_BISECT_POISON" || name == "MALLOC_PERTURB_" ||
         name == "OMP_NUM_THREADS";
}

void use_forkserver(const fs::path& program, bool forked_runs) {
  const char* off = std::getenv("AOTI_BISECT_FORKSERVER");
  if (off != nullptr && std::string(off) == "0") {
    return;
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return;  // the runs could not be the driver's children
  }
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().program = program;
  registry().forked_runs = forked_runs;
}

namespace {

// A server's environment: a run's, less the variables a forked run applies
// itself (a persistent runner applies none: it keeps them all).
std::map<std::string, std::string> server_env_of(const std::map<std::string, std::string>& env, bool persistent) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : env) {
    if (persistent || !applied_in_the_run(k)) {
      out.emplace(k, v);
    }
  }
  return out;
}

}  // namespace

void forkserver_prestart(const std::map<std::string, std::string>& env) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.program.empty() || !r.forked_runs) {
    return;
  }
  const std::map<std::string, std::string> server_env = server_env_of(env, false);
  Server& spare = r.servers[{server_env, k_spare_key}];
  if (spare.pid < 0) {
    make_room(r);
    spare = start_server(r.program, server_env, false);
  }
}

int forkserver_spawn(const SpawnSpec& spec) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.program.empty() || spec.argv.empty() || fs::path(spec.argv[0]) != r.program ||
      (!spec.persistent && !r.forked_runs)) {
    return -1;
  }
  // A forked run takes the variables a run reads only once it starts from
  // its request: the server of the environment without them serves it
  // (the matrix's variants share the baseline's loaded model).
  const std::map<std::string, std::string> server_env = server_env_of(spec.env, spec.persistent);
  Server& s = r.servers[{server_env, spec.server_key + (spec.persistent ? "\npersistent" : "")}];
  if (s.dead) {
    return -1;
  }
  if (s.pid < 0 && !spec.persistent) {
    // A server started ahead for this environment (forkserver_prestart)
    // serves it: LibTorch's start was paid while the driver worked.
    auto spare = r.servers.find({server_env, k_spare_key});
    if (spare != r.servers.end() && spare->second.pid > 0) {
      s = spare->second;
      r.servers.erase(spare);
    }
  }
  if (s.pid > 0) {
    // A persistent runner ends itself after a run that failed (and dies
    // with a run that crashed): a new one serves the next run.
    int status = 0;
    if (::waitpid(s.pid, &status, WNOHANG) == s.pid) {
      ::close(s.fd);
      release_group(s.pid);
      s = Server{};
    }
  }
  stop_other_holders(r, s);
  if (s.pid < 0) {
    make_room(r);  // `s` itself is not alive
    s = start_server(r.program, server_env, spec.persistent);
    if (s.dead) {
      return -1;
    }
  }
  const std::string req = server::request_text(spec);
  std::string line;
  // The first request waits for the server's own start (LibTorch's) and for
  // what it prepares (the model's load), which is part of the run's time:
  // at most the run's own time limit.
  const auto wait = std::chrono::milliseconds(
      static_cast<long long>(1000 * (spec.timeout_s > 0 ? std::max(60.0, spec.timeout_s) : 3600.0)));
  if (!write_all(s.fd, req) || !read_reply(s.fd, line, wait) || line.rfind("pid ", 0) != 0) {
    stop_server(s);
    s.dead = true;  // from now on this environment's runs are exec'd
    return -1;
  }
  ++s.served;
  s.last_use = ++r.clock;
  s.holds = line.size() > 5 && line.compare(line.size() - 5, 5, " held") == 0;
  return static_cast<pid_t>(std::strtol(line.c_str() + 4, nullptr, 10));
}

}  // namespace aoti_bisect
