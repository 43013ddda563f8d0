// libzip's reader of zip archives: the driver's, for packages and inputs.
#include "archive/zip_libzip.hpp"

#include <vector>

#include <fmt/format.h>
#include <zip.h>

#include "common/error.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

constexpr size_t k_chunk = 1 << 20;

}  // namespace

ZipReader::ZipReader(zip* z, fs::path path, std::string what, std::string remedy)
    : ZipEntries(std::move(path), std::move(what), std::move(remedy)), m_zip(z) {}

ZipReader::~ZipReader() {
  zip_discard(m_zip);
}

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
                                 : fmt::format("expands past {} bytes, more than a {}-byte archive can hold", m_cap,
                                               archive_bytes()));
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

std::unique_ptr<ZipEntries> open_zip_libzip(const fs::path& path, const std::string& what, const std::string& remedy) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (z == nullptr) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    std::string why = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    const std::string who = what + " '" + path.string() + "'";
    bool unreadable = err == ZIP_ER_NOENT || err == ZIP_ER_OPEN || err == ZIP_ER_READ;
    throw Error(ErrorKind::cannot_test, unreadable
                                            ? fmt::format("{} cannot be read ({})", who, why)
                                            : fmt::format("{} is a damaged zip archive ({}); {}", who, why, remedy));
  }
  return std::make_unique<ZipReader>(z, path, what, remedy);
}

}  // namespace aoti_bisect
