#pragma once
// Which torch a package was built with, as far as the package shows it: a
// package records no version, but its wrapper's recorded compile command
// (or a sources-only package's flags) names the torch include folder it was
// compiled against, and its library's dynamic section the LibTorch
// libraries it needs. Where that folder still holds a torch, its version.

#include <filesystem>
#include <string>
#include <vector>

namespace aoti_bisect {

struct PackageTorch {
  std::string torch_dir;               // the torch folder the build used, as recorded ("" when unknown)
  std::string version;                 // "2.15.0" where that folder still holds a torch; "" otherwise
  std::vector<std::string> libraries;  // the LibTorch libraries its library needs ("libtorch.so", "libc10.so")
  bool known() const { return !torch_dir.empty() || !libraries.empty(); }
};

// From the wrapper's text (its `// Compile cmd` comment), a sources-only
// package's compile flags JSON, and the extracted library (empty: none).
PackageTorch package_torch(const std::string& wrapper_source, const std::string& compile_flags_json,
                           const std::filesystem::path& library);

// "2.15.0+cu132" -> "2.15.0"; "" for "".
std::string torch_release(const std::string& version);

// The version of the torch in `torch_dir` (a torch package's version.py or
// a LibTorch distribution's build-version); "" when there is none.
std::string torch_version_in(const std::filesystem::path& torch_dir);

}  // namespace aoti_bisect
