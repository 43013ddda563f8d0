#pragma once
// Reading zip archives with memory that follows their real content, never
// the sizes their entries declare: entries are streamed, and every archive
// gets a cap relative to its own size (zip_expansion_cap).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "common/text.hpp"

struct zip;  // libzip's zip_t

namespace aoti_bisect {

// The most bytes an archive of `archive_bytes` may hold once expanded, for
// one entry and for all of them together: archive bytes x 1100 + 1 MiB.
// Deflate's best ratio is about 1032:1, so no honest archive goes past it;
// the constant covers tiny archives, whose directory outweighs their data.
uint64_t zip_expansion_cap(uint64_t archive_bytes);

// A name taken from an archive (an entry, a pickled key) as a message shows
// it: control characters written as escapes ("\n", "\x01"), so that the
// message stays one line whatever the archive holds.


// One open archive, read under its cap. Every failure is Error(cannot_test)
// "<what> '<path>': entry '<name>' ...; <remedy>".
class ZipReader {
 public:
  // Takes ownership of `z` (opened by the caller, who words its own errors).
  ZipReader(zip* z, std::filesystem::path path, std::string what, std::string remedy);
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  uint64_t count() const;
  std::string name(uint64_t index) const;       // "" when libzip has none
  uint64_t declared_size(uint64_t index) const;

  // Refuses entries whose declared sizes pass the cap, each or in all.
  void check_declared_sizes() const;

  // Streams entry `index` to `sink` in chunks of at most 1 MiB. Refuses an
  // entry that holds more or fewer bytes than it declares, one that pushes
  // the bytes streamed so far by this reader past the cap, and one that
  // fails to decompress or to match its checksum.
  void stream(uint64_t index, const std::function<void(const char*, size_t)>& sink);
  // The index of entry `name`; Error(cannot_test) when there is none.
  uint64_t index_of(const std::string& name) const;
  // The whole text of entry `name` (which must exist).
  std::string read(const std::string& name);

  // Error(cannot_test) about entry `name`: "<what> '<path>': entry '<name>'
  // <problem>; <remedy>".
  [[noreturn]] void fail(const std::string& name, const std::string& problem) const;

 private:
  zip* m_zip;
  std::filesystem::path m_path;
  std::string m_what;
  std::string m_remedy;
  uint64_t m_cap;
  uint64_t m_streamed = 0;
};

}  // namespace aoti_bisect
