#pragma once
// Rebuilding a model library from its own sources (design "Sources", B): a
// wrapper text (the package's, with probe calls inserted) compiled with the
// command the package recorded, its kernel.cpp compiled as recorded, its
// weights cut out of its library and relinked as the same blob. Each object
// is cached by content on its own, so rebuilds that change only the wrapper
// (guide mode's ranges, the exported program's blind spots) compile only the
// wrapper. Used by the rewrite source, by the exported program's build where
// its printer left call sites unprobed, and by guide mode.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace aoti_bisect {

struct LibrarySources {
  std::string wrapper;            // the text to compile (rewritten)
  std::string recorded_wrapper;   // the package's own wrapper: its `// Compile cmd` and `// Link cmd`
  std::string kernel;             // the package's kernel.cpp; "" when it has none (no kernel object)
  std::filesystem::path library;  // the package's library (its weights blob is relinked)
  // The wrapper is glue (calls, allocations, sizes): compiled at -O0 it
  // takes about half the time of the recorded -O1 on large models. The
  // kernels keep their recorded flags. The fidelity guard decides whether
  // such a rebuild is trusted; the rewrite source then retries as recorded.
  bool wrapper_at_O0 = false;
};

struct RebuiltLibrary {
  std::filesystem::path library;  // in the cache
  bool cache_hit = false;         // the whole library
  int compiled = 0;               // objects compiled this time (0 to 3)
  double seconds = 0;
};

// Throws Error(cannot_test) naming what failed (no recorded commands, no
// weights blob, an object the link command names that cannot be made here,
// such as the cubins of aot_inductor.embed_kernel_binary, a compile or link
// error). A CUDA package's cubins stay in the package, loaded at run time:
// only its wrapper (and its kernel.cpp, where it has one) is compiled.
RebuiltLibrary rebuild_library(const LibrarySources& src, const std::filesystem::path& cache_dir, double timeout_s);

// What a rebuild needs that does not change with the wrapper text: the
// recorded commands, checked, and the weights blob, located and keyed (the
// library hashed once). Made once per package where many wrappers are
// rebuilt (guide mode), and as the check whether the library can be rebuilt
// at all: throws Error(cannot_test) as above, before anything is compiled.
struct RebuildPlan {
  LibrarySources src;  // its `wrapper` is not used
  std::vector<std::string> wrapper_cmd, link_cmd, kernel_cmd;
  uint64_t blob_start = 0, blob_end = 0;  // file offsets of the weights blob in src.library
  bool writable = false;
  std::string kernel_key, weights_key;
};
RebuildPlan plan_rebuild(const LibrarySources& src);
RebuiltLibrary rebuild_library(const RebuildPlan& plan, const std::string& wrapper,
                               const std::filesystem::path& cache_dir, double timeout_s);

// A copy of the extracted package `root` (hard links) at `dest` whose model
// `model_name` has `library` as its library and `wrapper_text` as its
// wrapper source. Returns `dest`; throws Error(internal) when it cannot.
std::filesystem::path copy_package_with(const std::filesystem::path& root, const std::string& model_name,
                                        const std::filesystem::path& library, const std::string& wrapper_file,
                                        const std::string& wrapper_text, const std::filesystem::path& dest);

}  // namespace aoti_bisect
