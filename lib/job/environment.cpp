// What the report says about the machine: OS, Python version, git revision and CPU model; the commands
// run with a time limit, and a missing tool leaves its field empty.

#include "job/environment.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "process/process.hpp"

namespace aoti_bisect {
namespace {

std::string run_for_line(const std::vector<std::string>& argv) {
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = current_environment();
  spec.timeout_s = 10;
  spec.kill_grace_s = 1;
  // The tails come from files: give the streams one each, removed afterwards.
  std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("aoti-bisect-env-" + std::to_string(::getpid()));
  spec.stdout_path = tmp.string() + ".out";
  spec.stderr_path = tmp.string() + ".err";
  ExitStatus st = run_process(spec);
  std::error_code ec;
  std::filesystem::remove(spec.stdout_path, ec);
  std::filesystem::remove(spec.stderr_path, ec);
  if (!st.ok()) {
    return "";
  }
  std::string out = st.stdout_tail.empty() ? st.stderr_tail : st.stdout_tail;
  return out.substr(0, out.find('\n'));
}

std::string program_path(const std::string& name) {
  auto found = find_program(name);
  return found ? found->string() : "";
}

std::string os_release_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') {
        v = v.substr(1, v.size() - 2);
      }
      return v;
    }
  }
  return "";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        return line.substr(line.find_first_not_of(' ', colon + 1));
      }
    }
  }
  return "";
}

}  // namespace

void probe_host_environment(Environment& env) {
  struct utsname un {};
  if (::uname(&un) == 0) {
    env.os = std::string(un.sysname) + " " + un.release + " " + un.machine;
    std::string distro = os_release_name();
    if (!distro.empty()) {
      env.os += " (" + distro + ")";
    }
  }
  if (std::string python = program_path("python3"); !python.empty()) {
    std::string v = run_for_line({python, "--version"});
    env.python_version = v.rfind("Python ", 0) == 0 ? v.substr(7) : v;
  }
  if (std::string git = program_path("git"); !git.empty()) {
    env.git_revision = run_for_line({git, "rev-parse", "--short=12", "HEAD"});
  }
  if (env.device_name.empty() && (env.device.empty() || env.device == "cpu")) {
    env.device_name = cpu_model();
  }
}

}  // namespace aoti_bisect
