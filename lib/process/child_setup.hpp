#pragma once
// What a child does to itself before it becomes a run, whether it is exec'd
// (process.cpp) or forked by the fork server (forkserver.cpp). Only
// async-signal-safe calls: the exec'd child runs it between fork and exec.

#include <signal.h>
#include <sys/resource.h>

namespace aoti_bisect::child_setup {

// Signals the parent ignores or handles stay so in the child unless reset.
inline bool reset_signals() {
  sigset_t none;
  sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) {
    return false;
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGPIPE, SIGCHLD}) {
    if (::sigaction(sig, &dfl, nullptr) != 0) {
      return false;
    }
  }
  return true;
}

// The child's address space (RLIMIT_AS); 0: none. Best effort: a lower hard
// limit already set stays.
inline void limit_memory(unsigned long long bytes) {
  if (bytes != 0) {
    struct rlimit lim {};
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(bytes);
    ::setrlimit(RLIMIT_AS, &lim);
  }
}

}  // namespace aoti_bisect::child_setup
