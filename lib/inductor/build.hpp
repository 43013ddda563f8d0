#pragma once
// The instrumented build: the same model compiled once more from its
// exported program, with AOTInductor's intermediate-value printer on, by a
// small Python helper (embedded in the binary) that the driver runs as a
// child with a timeout. Builds are cached by content.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace aoti_bisect {

struct BuildRequest {
  std::filesystem::path
      exported_program;              // torch.export.save file, or a package_pt2 archive holding models/<name>.json
  std::string model_name = "model";  // which exported program of an archive
  nlohmann::json inductor_configs = nlohmann::json::object();  // key -> JSON scalar
  int printer_level = 1;                                       // 1 save (probes), 2 print, 3 kernel names
  std::vector<std::string> filtered_kernels;                   // level 2 only (guide mode)
  // Compile with grad off, as CPU inference builds do: freezing takes effect
  // only then (the package shows it did by its frozen constants).
  bool no_grad = false;
  std::filesystem::path cache_dir;  // empty: default_cache_dir()
  double timeout_s = 1800;
  std::string expected_torch_version;            // the runner's LibTorch ("2.13.0"); "" = don't check
  std::string python;                            // empty: $AOTI_BISECT_PYTHON, else python3 on PATH
  std::vector<std::filesystem::path> libraries;  // custom operator libraries (torch.ops.load_library)
};

struct BuildResult {
  std::filesystem::path package;  // the instrumented .pt2 (inside the cache)
  bool cache_hit = false;
  double seconds = 0;              // wall time of this call (0-ish on a hit)
  double compile_seconds = 0;      // what the compile took when it ran (from the cache entry on a hit)
  std::string torch_version;       // of the Python torch that compiled it
  std::string key;                 // cache key (hex)
  std::filesystem::path node_map;  // level 1: which graph node each buffer holds (beside the package); empty if none
};

// An exported program the helper refused to load because loading it would
// run code (a pickled object, a symbolic shape that is not plain sympy): the
// job stops with could_not_test, whichever source or phase asked for it.
class ProgramRefused : public Error {
 public:
  explicit ProgramRefused(const std::string& message) : Error(ErrorKind::cannot_test, message) {}
};

// The exported program loaded, but running it eagerly on the inputs raised
// (an index out of range, a shape check): the inputs may be the bug. The
// job carries on without an eager reference and says so.
class EagerRunFailed : public Error {
 public:
  explicit EagerRunFailed(const std::string& message) : Error(ErrorKind::cannot_test, message) {}
};

// $XDG_CACHE_HOME/aoti-bisect/builds, else ~/.cache/aoti-bisect/builds.
std::filesystem::path default_cache_dir();

// The cache key: sha256 over the exported program's bytes, the model name,
// the configs (canonical JSON), printer level, filter, the helper script and
// the Python torch version.
std::string build_cache_key(const BuildRequest& request, const std::string& torch_version);

// Builds (or finds in the cache). Throws Error with one line naming what
// failed and what to do: no Python or no torch (cannot_test), a Python torch
// whose version differs from the runner's (cannot_test), a compile error
// (cannot_test, with the last line of the helper's error), a timeout.
BuildResult build_instrumented(const BuildRequest& request);

// Parses "key=value" (value read as a YAML scalar: true, 3, 1e-3, text) into
// configs; throws Error(usage) for a missing '='.
void add_inductor_config(nlohmann::json& configs, const std::string& key_equals_value);

// --against-eager: the exported program run eagerly (by the same Python
// helper) on the inputs; its outputs, flattened, saved to `out` with
// torch.save. Throws Error(cannot_test) with one line when Python, torch or
// the exported program fails, EagerRunFailed when the program itself raised.
//
// With node_map set (a build's node map), the same run also saves each mapped
// buffer's eager values ({buffer: [tensor per candidate node]}, torch.save)
// to node_values_out and the mapped nodes' ops and source locations (JSON)
// to node_info_out. `out` may then be empty (no outputs wanted).
struct EagerRequest {
  std::filesystem::path exported_program;
  std::string model_name = "model";
  std::filesystem::path inputs;
  std::filesystem::path out;
  std::filesystem::path node_map;
  std::filesystem::path node_values_out;
  std::filesystem::path node_info_out;
  std::filesystem::path cache_dir;  // where the helper script is kept; empty: default_cache_dir()
  double timeout_s = 600;
  std::string python;
  // "" runs eager where the program and inputs are; "cpu" moves both there
  // first (torch.export.passes.move_to_device_pass): --eager-device cpu.
  std::string device;
  std::vector<std::filesystem::path> libraries;  // custom operator libraries (torch.ops.load_library)
};
struct EagerResult {
  double seconds = 0;
  std::string torch_version;
};
EagerResult compute_eager_reference(const EagerRequest& request);

// Python's shared library (libpython3.X.so) of `python` (empty:
// AOTI_BISECT_PYTHON, else python3), for an operator library built as a
// Python extension module, which refers to Python's C API; nullopt when
// that python has none.
std::optional<std::filesystem::path> python_shared_library(const std::filesystem::path& cache_dir,
                                                          const std::string& python = "");

// The embedded helper's source (lib/inductor/aoti_bisect_build.py).
std::string_view build_helper_source();

}  // namespace aoti_bisect
