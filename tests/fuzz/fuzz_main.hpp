#pragma once
// Shared by the libFuzzer targets: a violation of the property (targets.hpp)
// aborts, so libFuzzer keeps the input as a crash.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "fuzz/targets.hpp"

namespace fuzz {

// A folder of this process's own under the temporary directory.
inline std::filesystem::path scratch() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("aoti-bisect-fuzz-" + std::to_string(::getpid()));
  return dir;
}

inline void check_property(const std::function<void()>& f) {
  std::string broken = violation(f);
  if (!broken.empty()) {
    std::fprintf(stderr, "property violated: %s\n", broken.c_str());
    std::abort();
  }
}

}  // namespace fuzz
