#pragma once
// A package built with aot_inductor.package_cpp_only=True ships its model's
// sources instead of its library: `<stem>.wrapper.cpp` (the cpp kernels
// inside it), the flags to compile and link it (`<stem>.wrapper_compile_flags
// .json`, `<stem>.wrapper_linker_flags.json`), and its weights as an object
// (`<hash>.weights.o`). LibTorch's loader compiles it at load time, with
// those flags, against the LibTorch that loads it (model_package_loader.cpp:
// two compiler runs, no CMake). The driver does the same, once, into its
// cache, so that every run loads the same library and the search sees it
// like any package's.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "package/package.hpp"

namespace aoti_bisect {

struct SourcesOnly {
  std::filesystem::path wrapper_cpp;  // in the extracted model folder
  std::filesystem::path compile_flags;
  std::filesystem::path linker_flags;
  std::vector<std::filesystem::path> objects;  // the weights object(s), linked in first
  std::filesystem::path library;               // where the built library goes: <stem>.so beside the wrapper
};

// The files of a package_cpp_only model in its extracted folder
// (`model_dir`: data/aotinductor/<model>/), or nullopt for a package that
// ships its library (or lacks the flags to build one).
std::optional<SourcesOnly> sources_only(const std::filesystem::path& model_dir, const ModelFiles& model);

// One compiler command from a flags JSON as Inductor writes it (compiler,
// definitions, cflags without their dash, include_dirs, passthrough_args of
// several words, and for a link ldflags, libraries, libraries_dirs), as
// LibTorch's loader assembles it, without a shell. Folders of the torch the
// package was built with (".../torch/include...", ".../torch/lib") are
// taken from `torch_dir` (the runner's LibTorch) instead; other folders that
// do not exist here are left out. `compiler` is the program to run.
std::vector<std::string> sources_only_command(const nlohmann::json& flags, const std::vector<std::string>& sources,
                                              const std::string& output, const std::filesystem::path& torch_dir,
                                              const std::string& compiler);

struct SourcesOnlyBuild {
  std::filesystem::path library;  // in the cache
  bool cache_hit = false;
  double seconds = 0;
  std::string compiler;  // as run ("/usr/bin/g++")
};

// Builds the library (cached under `cache_dir`/sources-only/<key>/, the key
// the sources', flags' and objects' bytes with torch_dir and the compiler)
// and copies it to `src.library`. `progress` hears one line before a build.
// Throws Error(cannot_test) naming the compiler's first error (or why it
// could not run) and what to do.
SourcesOnlyBuild build_sources_only(const SourcesOnly& src, const std::filesystem::path& torch_dir,
                                    const std::filesystem::path& cache_dir, double timeout_s,
                                    const std::function<void(const std::string&)>& progress = {});

}  // namespace aoti_bisect
