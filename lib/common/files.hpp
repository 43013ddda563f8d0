#pragma once
// Small file helpers shared by every module.

#include <filesystem>
#include <string>
#include <string_view>

namespace aoti_bisect {

// Whole file as bytes; throws Error(cannot_test) naming `what` and the path.
std::string read_file(const std::filesystem::path& path, const std::string& what);

// The first `n` bytes of a file (fewer when it is shorter; "" when it
// cannot be read).
std::string read_file_head(const std::filesystem::path& path, size_t n);

// Throws Error(cannot_test) "<what> '<path>' does not exist" (or "is a
// directory") unless `path` is a readable regular file.
void require_file(const std::filesystem::path& path, const std::string& what);

// "device:inode:size:mtime" of a file ("" when it cannot be read): the same
// stamp means the same file, unchanged.
std::string file_stamp(const std::filesystem::path& path);

// What tells one build of an extracted package's model library from another
// in the same place: device, inode, size and modification time of each .so
// in PACKAGE_DIR/data/aotinductor/MODEL ("" when there is none). A fork
// server that holds a loaded model serves only runs whose library still has
// the stamp it loaded (docs/runner.md).
std::string model_library_stamp(const std::filesystem::path& package_dir, const std::string& model);

// Writes to a temporary file beside `path`, then renames it over `path`, so a
// reader (or a crash) never sees half a file.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// All of `data` to the open file or socket `fd`, through EINTR and short
// writes; false on any other failure. A socket whose peer is gone is a
// false return, not SIGPIPE. Async-signal-safe.
bool write_all(int fd, std::string_view data);

// Lowercase hex SHA-256 of bytes, and of a file streamed from disk.
std::string sha256_hex(const std::string& bytes);
std::string sha256_file(const std::filesystem::path& path);

// A path as a report shows it: relative to `cwd` when inside it, the home
// directory as "~", otherwise as given. Never leaks more than the user typed.
std::string display_path(const std::filesystem::path& path,
                         const std::filesystem::path& cwd = std::filesystem::current_path());

// Replaces every occurrence of the home directory and of `cwd` in free text
// (error lines, command lines) by "~" and ".".
std::string redact_paths(std::string text, const std::filesystem::path& cwd = std::filesystem::current_path());

}  // namespace aoti_bisect
