#pragma once
// A stored (uncompressed) zip entry copied out by the kernel: an AOTI
// package keeps its model library stored, and a 1 GiB library written
// through read() and write() takes 6 s on this project's machine where
// copy_file_range takes 0.5 s (and CRC-32 over it 0.3 s). Read from the
// archive's own central directory and the entry's local header (ZIP64
// included); anything that does not add up leaves the entry to the reader
// that streams it.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace aoti_bisect {

struct StoredEntry {
  uint64_t data_offset = 0;  // of its bytes in the archive
  uint64_t size = 0;
  uint32_t crc = 0;  // CRC-32, as the central directory records it
};

// Entry `name` of `archive` when it is stored, unencrypted, and its central
// directory record and local header agree; nullopt otherwise.
std::optional<StoredEntry> stored_entry(const std::filesystem::path& archive, const std::string& name);

enum class CopyResult {
  copied,   // the bytes written to `dest`, their CRC-32 the one recorded
  cannot,   // the kernel would not copy (another file system): stream it instead
  bad_crc,  // written, but their CRC-32 is not the one recorded: damaged
};
// With `check` false the bytes are copied and not read back: `copied` then
// says only that they were written, and check_copy says the rest.
CopyResult copy_stored(const std::filesystem::path& archive, const StoredEntry& entry,
                       const std::filesystem::path& dest, bool check = true);

// Whether `file`, a copy copy_stored made unchecked, holds `entry.size`
// bytes whose CRC-32 is `entry.crc`: copied or bad_crc (cannot when it
// cannot be read).
CopyResult check_copy(const std::filesystem::path& file, const StoredEntry& entry);

}  // namespace aoti_bisect
