// Reading zip archives with memory that follows their real content, under a cap.
#include "archive/zip.hpp"

#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// See zip_expansion_cap: deflate's best ratio (about 1032:1) with a margin.
constexpr uint64_t k_max_expansion = 1100;
constexpr uint64_t k_cap_floor = 1 << 20;

uint64_t file_size_or_zero(const fs::path& path) {
  std::error_code ec;
  uint64_t n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

}  // namespace

uint64_t zip_expansion_cap(uint64_t archive_bytes) {
  const uint64_t max = UINT64_MAX - k_cap_floor;
  return (archive_bytes > max / k_max_expansion ? max : archive_bytes * k_max_expansion) + k_cap_floor;
}

uint64_t ZipEntries::archive_bytes() const {
  return file_size_or_zero(m_path);
}

ZipEntries::ZipEntries(fs::path path, std::string what, std::string remedy)
    : m_path(std::move(path)),
      m_what(std::move(what)),
      m_remedy(std::move(remedy)),
      m_cap(zip_expansion_cap(file_size_or_zero(m_path))) {}

void ZipEntries::fail(const std::string& name, const std::string& problem) const {
  throw Error(ErrorKind::cannot_test, fmt::format("{} '{}': entry '{}' {}; {}", m_what, m_path.string(),
                                                  printable_name(name), problem, m_remedy));
}

void ZipEntries::check_declared_sizes() const {
  uint64_t archive = archive_bytes();
  uint64_t total = 0;
  for (uint64_t i = 0, n = count(); i < n; ++i) {
    uint64_t size = declared_size(i);
    if (size > m_cap) {
      fail(name(i),
           fmt::format("declares {} bytes, more than a {}-byte archive can hold (at most {})", size, archive, m_cap));
    }
    total += size;  // both at most the cap, far from wrapping
    if (total > m_cap) {
      fail(name(i), fmt::format("brings the bytes its entries declare to {}, more than a {}-byte archive can "
                                "hold (at most {})",
                                total, archive, m_cap));
    }
  }
}

std::string ZipEntries::read(const std::string& entry) {
  std::string out;
  stream(index_of(entry), [&](const char* p, size_t n) { out.append(p, n); });
  return out;
}

}  // namespace aoti_bisect
