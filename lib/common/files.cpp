// Small file helpers: reading and checking files, atomic writes, file and model library stamps, SHA-256
// of bytes and files, and paths shown or redacted against the working and home directories.

#include "common/files.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/sha256.hpp"
#include "common/text.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

void require_file(const fs::path& path, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw Error(ErrorKind::cannot_test, fmt::format("{} '{}' does not exist", what, path.string()));
  }
  if (fs::is_directory(path, ec)) {
    throw Error(ErrorKind::cannot_test, fmt::format("{} '{}' is a directory, expected a file", what, path.string()));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    throw Error(ErrorKind::cannot_test, fmt::format("{} '{}' cannot be read (permission denied)", what, path.string()));
  }
}

std::string read_file(const fs::path& path, const std::string& what) {
  require_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::cannot_test, fmt::format("{} '{}' cannot be read", what, path.string()));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file_atomic(const fs::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
  }
  fs::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  // A failed write (disk full, read-only) leaves nothing behind and says why.
  auto fail = [&](int err) {
    fs::remove(tmp, ec);
    throw Error(ErrorKind::internal, fmt::format("cannot write '{}' ({})", path.string(), std::strerror(err)));
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    fail(errno);
  }
  size_t written = std::fwrite(content.data(), 1, content.size(), f);
  int err = written == content.size() ? 0 : errno;
  if (std::fflush(f) != 0 && err == 0) {
    err = errno;
  }
  if (std::fclose(f) != 0 && err == 0) {
    err = errno;
  }
  if (err != 0 || written != content.size()) {
    fail(err != 0 ? err : EIO);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    fail(errno);
  }
}

namespace {

std::string home_dir() {
  const char* home = std::getenv("HOME");
  return home && *home && std::string(home) != "/" ? std::string(home) : std::string();
}

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

std::string sha256_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::cannot_test, fmt::format("'{}' cannot be read", path.string()));
  }
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    h.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  return h.hex();
}

namespace {

// `a` inside folder `base` (or equal to it): the rest after the separator.
std::optional<std::string> under(const std::string& a, const std::string& base) {
  if (base.empty() || base == "/") {
    return std::nullopt;
  }
  if (a == base) {
    return std::string();
  }
  if (a.size() > base.size() && a.compare(0, base.size(), base) == 0 && a[base.size()] == '/') {
    return a.substr(base.size() + 1);
  }
  return std::nullopt;
}

// The path's forms that can be checked against cwd and home: as written but
// with `.` and `..` resolved, and with every symlink resolved (so
// `/proc/self/root/...` and `HOME/../name/x` are caught too).
std::vector<std::string> path_forms(const fs::path& abs) {
  std::error_code ec;
  std::vector<std::string> forms = {abs.lexically_normal().string()};
  fs::path canon = fs::weakly_canonical(abs, ec);
  if (!ec && canon.string() != forms.front()) {
    forms.push_back(canon.lexically_normal().string());
  }
  return forms;
}

// The display form of an absolute path when it lies under cwd or home.
std::optional<std::string> shown_under(const fs::path& abs, const fs::path& cwd) {
  std::vector<std::string> bases_cwd = path_forms(cwd);
  std::string home = home_dir();
  std::vector<std::string> bases_home = home.empty() ? std::vector<std::string>{} : path_forms(home);
  for (const auto& form : path_forms(abs)) {
    for (const auto& c : bases_cwd) {
      if (auto rest = under(form, c)) {
        return rest->empty() ? "." : *rest;
      }
    }
    for (const auto& h : bases_home) {
      if (auto rest = under(form, h)) {
        return rest->empty() ? "~" : "~/" + *rest;
      }
    }
  }
  return std::nullopt;
}

bool path_token_start(const std::string& text, size_t i) {
  if (text[i] != '/' || i + 1 >= text.size() || text[i + 1] == '/' || text[i + 1] == ' ') {
    return false;
  }
  if (i == 0) {
    return true;
  }
  char p = text[i - 1];
  return std::isspace(static_cast<unsigned char>(p)) || std::strchr("'\"`([{<=,:;", p) != nullptr;
}

bool path_token_end(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || std::strchr("'\"`)]}>,;:", c) != nullptr;
}

}  // namespace

std::string display_path(const fs::path& path, const fs::path& cwd) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (auto shown = shown_under(abs, cwd)) {
    return *shown;
  }
  return redact_paths(path.string(), cwd);
}

std::string redact_paths(std::string text, const fs::path& cwd) {
  // Every absolute path in the text, judged by what it names, not how it is
  // spelled.
  std::string out;
  out.reserve(text.size());
  std::map<std::string, std::string> seen;
  for (size_t i = 0; i < text.size();) {
    if (!path_token_start(text, i)) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && !path_token_end(text[end])) {
      ++end;
    }
    std::string token = text.substr(i, end - i);
    auto it = seen.find(token);
    if (it == seen.end()) {
      it = seen.emplace(token, shown_under(fs::path(token), cwd).value_or(token)).first;
    }
    out += it->second;
    i = end;
  }
  // What no token boundary delimits (`-I/home/me/x`): the spelled folders.
  std::string c = cwd.lexically_normal().string();
  if (!c.empty() && c != "/") {
    out = replace_all(std::move(out), c + "/", "");
  }
  std::string home = home_dir();
  if (!home.empty()) {
    out = replace_all(std::move(out), home + "/", "~/");
  }
  return out;
}

std::string read_file_head(const std::filesystem::path& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string out(n, '\0');
  in.read(out.data(), static_cast<std::streamsize>(n));
  out.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return out;
}

std::string file_stamp(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return "";
  }
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

std::string model_library_stamp(const std::filesystem::path& package_dir, const std::string& model) {
  std::vector<std::string> stamps;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(package_dir / "data" / "aotinductor" / model, ec)) {
    if (std::string stamp = file_stamp(e.path()); e.path().extension() == ".so" && !stamp.empty()) {
      stamps.push_back(e.path().filename().string() + ":" + stamp);
    }
  }
  std::sort(stamps.begin(), stamps.end());
  std::string out;
  for (const auto& s : stamps) {
    out += s + ";";
  }
  return out;
}

bool write_all(int fd, std::string_view data) {
  bool socket = true;  // until the descriptor says otherwise
  while (!data.empty()) {
    ssize_t n = socket ? ::send(fd, data.data(), data.size(), MSG_NOSIGNAL) : ::write(fd, data.data(), data.size());
    if (n < 0 && errno == ENOTSOCK && socket) {
      socket = false;
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace aoti_bisect
