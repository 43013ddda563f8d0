// What the driver asks of the system around it: its environment, its own
// executable, a program on PATH, the machine's memory.
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "common/error.hpp"
#include "process/process.hpp"

extern char** environ;

namespace aoti_bisect {

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t eq = text.find('=');
    if (eq != std::string_view::npos) {
      env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
    }
  }
  return env;
}

std::filesystem::path self_executable() {
  std::error_code ec;
  std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    throw Error(ErrorKind::internal, "cannot read /proc/self/exe: " + ec.message());
  }
  return path;
}

std::optional<std::filesystem::path> find_program(const std::string& name) {
  namespace fs = std::filesystem;
  if (name.find('/') != std::string::npos) {
    return fs::absolute(name);
  }
  const char* env = std::getenv("PATH");
  std::stringstream path(env == nullptr ? "" : env);
  std::string dir;
  while (std::getline(path, dir, ':')) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) {
      return fs::absolute(candidate);
    }
  }
  return std::nullopt;
}

unsigned long long physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<unsigned long long>(pages) * static_cast<unsigned long long>(page) : 0;
}

}  // namespace aoti_bisect
