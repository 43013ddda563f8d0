#pragma once

#include <filesystem>

namespace aoti_bisect {

// Removes a directory tree when it goes out of scope (extracted packages).
class ScopedDir {
 public:
  explicit ScopedDir(std::filesystem::path p) : m_path(std::move(p)) {}
  ~ScopedDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  ScopedDir(const ScopedDir&) = delete;
  ScopedDir& operator=(const ScopedDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

}  // namespace aoti_bisect
