// The fork server's and persistent runner's requests: a spawn written by the driver and read by the
// server as NUL-terminated fields; argv and output files for what the server starts.

#include "process/server_request.hpp"

#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>

namespace aoti_bisect::server {
namespace fs = std::filesystem;

std::string request_text(const SpawnSpec& spec) {
  std::string req;
  auto field = [&](std::string_view key, const std::string& value) {
    req += key;
    req += value;
    req.push_back('\0');
  };
  for (const auto& a : spec.argv) {
    field("arg=", a);
  }
  for (const auto& [k, v] : spec.env) {
    field("env=", k + "=" + v);
  }
  std::error_code ec;
  auto absolute = [&](const fs::path& p) { return p.empty() ? std::string() : fs::absolute(p, ec).string(); };
  field("cwd=", absolute(spec.cwd));
  field("out=", absolute(spec.stdout_path));
  field("err=", absolute(spec.stderr_path));
  field("mem=", std::to_string(spec.memory_limit_bytes));
  req.push_back('\0');
  return req;
}

bool read_request(int fd, std::string& buffer, Request& req) {
  for (;;) {
    size_t end = buffer.find(std::string("\0\0", 2));
    if (end != std::string::npos) {
      std::string block = buffer.substr(0, end + 1);
      buffer.erase(0, end + 2);
      size_t at = 0;
      while (at < block.size()) {
        size_t nul = block.find('\0', at);
        std::string field = block.substr(at, nul - at);
        at = nul + 1;
        auto value = [&](std::string_view key) { return field.substr(key.size()); };
        if (field.rfind("arg=", 0) == 0) {
          req.argv.push_back(value("arg="));
        } else if (field.rfind("env=", 0) == 0) {
          req.env.push_back(value("env="));
        } else if (field.rfind("cwd=", 0) == 0) {
          req.cwd = value("cwd=");
        } else if (field.rfind("out=", 0) == 0) {
          req.out = value("out=");
        } else if (field.rfind("err=", 0) == 0) {
          req.err = value("err=");
        } else if (field.rfind("mem=", 0) == 0) {
          req.memory_limit = std::strtoull(value("mem=").c_str(), nullptr, 10);
        }
      }
      return !req.argv.empty();
    }
    char chunk[4096];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  return argv;
}

int open_output(const std::string& path) {
  return ::open(path.empty() ? "/dev/null" : path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

}  // namespace aoti_bisect::server
