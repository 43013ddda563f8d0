#pragma once
// A scratch folder: removed, with whatever is left in it (a killed child's
// files, tensor contents), when it goes out of scope.

#include <filesystem>
#include <string>

namespace aoti_bisect {

class ScratchDir {
 public:
  // `path` itself (whoever writes in it creates it).
  explicit ScratchDir(std::filesystem::path path) : m_path(std::move(path)) {}
  // A new folder `<name>-XXXXXX` inside `parent`, both created:
  // Error(internal) naming `parent` where it cannot be.
  static ScratchDir make_in(const std::filesystem::path& parent, const std::string& name = "build");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ScratchDir(ScratchDir&&) = delete;
  ScratchDir& operator=(ScratchDir&&) = delete;

  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

}  // namespace aoti_bisect
