#include "common/files.hpp"

#include <algorithm>
#include <cctype>
#include <vector>
#include <optional>
#include <map>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>

#include "common/error.hpp"

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

// FIPS 180-4 SHA-256, streaming.
class Sha256 {
 public:
  void update(const unsigned char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      m_block[m_fill++] = data[i];
      if (m_fill == 64) {
        transform();
        m_bits += 512;
        m_fill = 0;
      }
    }
  }
  std::string hex() {
    uint64_t bits = m_bits + static_cast<uint64_t>(m_fill) * 8;
    unsigned char pad = 0x80;
    update(&pad, 1);
    unsigned char zero = 0;
    while (m_fill != 56) {
      update(&zero, 1);
    }
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) {
      len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    }
    update(len, 8);
    std::string out;
    for (uint32_t v : m_h) {
      out += fmt::format("{:08x}", v);
    }
    return out;
  }

 private:
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void transform() {
    static constexpr std::array<uint32_t, 64> k = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = (uint32_t(m_block[4 * i]) << 24) | (uint32_t(m_block[4 * i + 1]) << 16) |
             (uint32_t(m_block[4 * i + 2]) << 8) | uint32_t(m_block[4 * i + 3]);
    }
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = m_h[0], b = m_h[1], c = m_h[2], d = m_h[3], e = m_h[4], f = m_h[5], g = m_h[6], h = m_h[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    m_h[0] += a; m_h[1] += b; m_h[2] += c; m_h[3] += d;
    m_h[4] += e; m_h[5] += f; m_h[6] += g; m_h[7] += h;
  }

  std::array<uint32_t, 8> m_h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char m_block[64] = {};
  size_t m_fill = 0;
  uint64_t m_bits = 0;
};

std::string home_dir() {
  const char* home = std::getenv("HOME");
  return home && *home && std::string(home) != "/" ? std::string(home) : std::string();
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) {
    return;
  }
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
}

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  Sha256 h;
  h.update(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return h.hex();
}

std::string sha256_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::cannot_test, fmt::format("'{}' cannot be read", path.string()));
  }
  Sha256 h;
  std::array<char, 1 << 16> buf;
  while (in.read(buf.data(), buf.size()) || in.gcount() > 0) {
    h.update(reinterpret_cast<const unsigned char*>(buf.data()), static_cast<size_t>(in.gcount()));
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
    replace_all(out, c + "/", "");
  }
  std::string home = home_dir();
  if (!home.empty()) {
    replace_all(out, home + "/", "~/");
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

}  // namespace aoti_bisect
