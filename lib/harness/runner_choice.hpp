#pragma once
// Which runner runs a package. A package runs with the LibTorch it was
// built with (AOTInductor's runtime is compiled into its library), and the
// driver is torch-free: only the runner sees LibTorch. So one installed
// aoti-bisect serves packages of several torch releases by picking, per
// package, a runner built against the package's torch: the one beside the
// driver when its torch is that one, else one built once from the tool's own
// sources against that torch and cached (runner_build.hpp).
//
// The torch wanted, in this order (docs/supported.md, "the torch
// wanted"; the console's "runner:" line says which one was taken and why):
//   1. a runner named outright (--runner, AOTI_BISECT_RUNNER), used as it is;
//   2. --python (AOTI_BISECT_PYTHON)'s torch;
//   3. the torch of the Python whose pip install ran the tool (the console
//      script sets AOTI_BISECT_ENTRY_PYTHON), when it has one: a venv's;
//   4. the package's own, when the folder its recorded compile command names
//      still holds a torch to build against;
//   5. python3's on PATH, where the package's torch folder is gone, or where
//      no runner was built beside the driver (a pip install);
//   6. the runner beside the driver (a build from the source tree).
// None of them: Error(cannot_test), exit 4, naming --python.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "package/package_torch.hpp"

namespace aoti_bisect {

// One installed torch.
struct TorchInstall {
  std::filesystem::path torch_dir;  // the torch package folder: lib/, include/, share/cmake/Torch
  std::string version;              // "2.14.1+cu130"
  std::string python;               // a Python whose torch it is; "" when none is known
  bool operator==(const TorchInstall&) const = default;
};

// The torch `python` imports: runs it once (a few seconds: torch's import).
// A string says why not ("python 'X' does not exist", "... has no torch").
std::variant<TorchInstall, std::string> python_torch(const std::string& python, double timeout_s = 120);

// The torch in `torch_dir` when a runner can be built against it (its
// version known, its CMake package and libraries present); nullopt otherwise.
// `python`: the Python of the environment that holds it, when there is one
// (a venv's or prefix's bin/python3 beside lib/pythonX.Y/site-packages/torch).
std::optional<TorchInstall> buildable_torch(const std::filesystem::path& torch_dir);

// The torch the runner beside this executable was built against (recorded
// at build time); nullopt for a build without LibTorch, or when that torch
// is gone.
std::optional<TorchInstall> default_runner_torch();

struct RunnerPick {
  enum class Kind {
    named,      // --runner / AOTI_BISECT_RUNNER: as given
    beside,     // the runner beside the driver: its torch is the one wanted (or none is known)
    per_torch,  // a runner for `torch`, from the cache or built now
    none        // no torch found and no runner beside: `why` says what was tried
  };
  Kind kind = Kind::beside;
  TorchInstall torch;  // the torch wanted (per_torch; beside when known)
  std::string why;     // "the package's own torch", "--python", "python3's torch (the package's is gone)"
  bool package_torch_absent = false;  // the package names a torch folder that no longer holds one
};

// The decision alone (no process, no file but the ones given): unit-tested.
// `named_python`: --python / AOTI_BISECT_PYTHON's torch, if given.
// `python3`: python3's torch, asked for only when needed (a callable, since
// asking costs torch's import).
struct PickInputs {
  bool runner_named = false;
  std::optional<TorchInstall> named_python;
  std::optional<TorchInstall> entry_python;  // AOTI_BISECT_ENTRY_PYTHON's torch
  std::string entry_python_path;             // that Python, with or without torch
  PackageTorch package;
  std::optional<TorchInstall> package_install;  // buildable_torch(package.torch_dir)
  std::optional<TorchInstall> beside;           // default_runner_torch()
  bool beside_exists = true;                    // a runner was built beside the driver
};
RunnerPick pick_runner(const PickInputs& in, const std::function<std::optional<TorchInstall>()>& python3);

// The pick's inputs for a package's model (its wrapper source and sources-
// only compile flags): a runner named outright (AOTI_BISECT_RUNNER or
// `runner_named`), the Python given (`python`, else AOTI_BISECT_PYTHON;
// Error(usage) naming `option` when it has no torch), the package's torch,
// the runner beside.
PickInputs pick_inputs(const std::string& wrapper_source, const std::string& compile_flags_json,
                       const std::string& python, const std::string& option, bool runner_named);

// python3's torch, when it has one.
std::optional<TorchInstall> python3_torch();

// Whether the runner beside the driver serves `wanted` (the same folder, or
// the same version string, "2.14.1+cu130" == "2.14.1+cu130").
bool same_torch(const TorchInstall& a, const TorchInstall& b);

}  // namespace aoti_bisect
