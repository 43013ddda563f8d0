#pragma once
// Reading zip archives with memory that follows their real content, never
// the sizes their entries declare: entries are streamed, and every archive
// gets a cap relative to its own size (zip_expansion_cap).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "common/text.hpp"

namespace aoti_bisect {

// The most bytes an archive of `archive_bytes` may hold once expanded, for
// one entry and for all of them together: archive bytes x 1100 + 1 MiB.
// Deflate's best ratio is about 1032:1, so no honest archive goes past it;
// the constant covers tiny archives, whose directory outweighs their data.
uint64_t zip_expansion_cap(uint64_t archive_bytes);

// A name taken from an archive (an entry, a pickled key) as a message shows
// it: control characters written as escapes ("\n", "\x01"), so that the
// message stays one line whatever the archive holds.

// One open zip archive, read entry by entry under its cap. Two readers
// implement it: libzip's (ZipReader, archive/zip_libzip.hpp), which the
// driver reads packages and inputs with, and LibTorch's own
// (lib/torchside/zip_torch.cpp), which the runner reads inputs with, so
// that a runner built on a user's machine links no zip library. Every
// failure is Error(cannot_test) "<what> '<path>': entry '<name>' ...;
// <remedy>".
class ZipEntries {
 public:
  ZipEntries(std::filesystem::path path, std::string what, std::string remedy);
  virtual ~ZipEntries() = default;
  ZipEntries(const ZipEntries&) = delete;
  ZipEntries& operator=(const ZipEntries&) = delete;

  virtual uint64_t count() const = 0;
  virtual std::string name(uint64_t index) const = 0;  // "" when the archive has none
  virtual uint64_t declared_size(uint64_t index) const = 0;

  // Refuses entries whose declared sizes pass the cap, each or in all.
  void check_declared_sizes() const;

  // Streams entry `index` to `sink` in chunks of at most 1 MiB. Refuses an
  // entry that holds more or fewer bytes than it declares, one that pushes
  // the bytes streamed so far by this reader past the cap, and one that
  // fails to decompress or to match its checksum.
  virtual void stream(uint64_t index, const std::function<void(const char*, size_t)>& sink) = 0;
  // The index of entry `name`; Error(cannot_test) when there is none.
  virtual uint64_t index_of(const std::string& name) const = 0;
  // The whole text of entry `name` (which must exist).
  std::string read(const std::string& name);

  // Error(cannot_test) about entry `name`: "<what> '<path>': entry '<name>'
  // <problem>; <remedy>".
  [[noreturn]] void fail(const std::string& name, const std::string& problem) const;

  const std::filesystem::path& path() const { return m_path; }

 protected:
  uint64_t archive_bytes() const;  // the archive's size on disk (0 when it cannot be read)

  std::filesystem::path m_path;
  std::string m_what;
  std::string m_remedy;
  uint64_t m_cap;
  uint64_t m_streamed = 0;
};

// Opens `path` as a zip archive ("<what> '<path>' cannot be read (...)", or
// "... is a damaged zip archive (...); <remedy>" as Error(cannot_test)).
using ZipOpener = std::function<std::unique_ptr<ZipEntries>(const std::filesystem::path& path, const std::string& what,
                                                            const std::string& remedy)>;

}  // namespace aoti_bisect
