// A scratch folder made with mkdtemp and removed, with everything in it, when it goes out of scope.

#include "common/scratch_dir.hpp"

#include <stdlib.h>

#include <fmt/format.h>

#include "common/error.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

ScratchDir ScratchDir::make_in(const fs::path& parent, const std::string& name) {
  std::error_code ec;
  fs::create_directories(parent, ec);
  std::string tmpl = (parent / (name + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw Error(ErrorKind::internal, fmt::format("cannot create a folder in '{}'", parent.string()));
  }
  return ScratchDir(tmpl);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

}  // namespace aoti_bisect
