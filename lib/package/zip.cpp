#include "package/zip.hpp"

#include <vector>

#include <fmt/format.h>
#include <zip.h>

#include "common/error.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// See zip_expansion_cap: deflate's best ratio (about 1032:1) with a margin.
constexpr uint64_t k_max_expansion = 1100;
constexpr uint64_t k_cap_floor = 1 << 20;
constexpr size_t k_chunk = 1 << 20;

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

ZipReader::ZipReader(zip* z, fs::path path, std::string what, std::string remedy)
    : m_zip(z),
      m_path(std::move(path)),
      m_what(std::move(what)),
      m_remedy(std::move(remedy)),
      m_cap(zip_expansion_cap(file_size_or_zero(m_path))) {}

ZipReader::~ZipReader() { zip_discard(m_zip); }

uint64_t ZipReader::count() const {
  zip_int64_t n = zip_get_num_entries(m_zip, 0);
  return n < 0 ? 0 : static_cast<uint64_t>(n);
}

std::string ZipReader::name(uint64_t index) const {
  const char* n = zip_get_name(m_zip, index, 0);
  return n == nullptr ? std::string() : std::string(n);
}

uint64_t ZipReader::declared_size(uint64_t index) const {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(m_zip, index, 0, &st) != 0 || (st.valid & ZIP_STAT_SIZE) == 0) {
    return 0;
  }
  return st.size;
}

void ZipReader::fail(const std::string& name, const std::string& problem) const {
  throw Error(ErrorKind::cannot_test, fmt::format("{} '{}': entry '{}' {}; {}", m_what, m_path.string(),
                                                  printable_name(name), problem, m_remedy));
}

void ZipReader::check_declared_sizes() const {
  uint64_t archive = file_size_or_zero(m_path);
  uint64_t total = 0;
  for (uint64_t i = 0, n = count(); i < n; ++i) {
    uint64_t size = declared_size(i);
    if (size > m_cap) {
      fail(name(i), fmt::format("declares {} bytes, more than a {}-byte archive can hold (at most {})", size,
                                archive, m_cap));
    }
    total += size;  // both at most the cap, far from wrapping
    if (total > m_cap) {
      fail(name(i), fmt::format("brings the bytes its entries declare to {}, more than a {}-byte archive can "
                                "hold (at most {})",
                                total, archive, m_cap));
    }
  }
}

void ZipReader::stream(uint64_t index, const std::function<void(const char*, size_t)>& sink) {
  const std::string entry = name(index);
  const uint64_t declared = declared_size(index);
  zip_file_t* f = zip_fopen_index(m_zip, index, 0);
  if (f == nullptr) {
    fail(entry, fmt::format("cannot be read ({})", zip_strerror(m_zip)));
  }
  std::vector<char> buf(k_chunk);
  uint64_t got = 0;
  zip_int64_t n = 0;
  while ((n = zip_fread(f, buf.data(), buf.size())) > 0) {
    got += static_cast<uint64_t>(n);
    if (got > declared || m_streamed + got > m_cap) {
      zip_fclose(f);
      fail(entry, got > declared ? fmt::format("holds more bytes than the {} it declares", declared)
                                 : fmt::format("expands past {} bytes, more than a {}-byte archive can hold",
                                               m_cap, file_size_or_zero(m_path)));
    }
    sink(buf.data(), static_cast<size_t>(n));
  }
  bool damaged = n < 0;
  if (zip_fclose(f) != 0 || damaged) {
    fail(entry, "is damaged (truncated or bad checksum)");
  }
  if (got != declared) {
    fail(entry, fmt::format("declares {} bytes but holds {} (truncated or damaged)", declared, got));
  }
  m_streamed += got;
}

uint64_t ZipReader::index_of(const std::string& entry) const {
  zip_int64_t index = zip_name_locate(m_zip, entry.c_str(), 0);
  if (index < 0) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("{} '{}' has no entry '{}'", m_what, m_path.string(), printable_name(entry)));
  }
  return static_cast<uint64_t>(index);
}

std::string ZipReader::read(const std::string& entry) {
  std::string out;
  stream(index_of(entry), [&](const char* p, size_t n) { out.append(p, n); });
  return out;
}

}  // namespace aoti_bisect
