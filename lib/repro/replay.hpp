#pragma once
// The one-kernel replay left in OUT/repro/ after isolation: an executable
// `replay` script that rebuilds ONLY the culprit call site on this machine
// and runs it on the tensors the evidence run saved there; `replay
// --intermediates` builds a cpp kernel with every intermediate checked
// (repro/intermediates.hpp). For a cpp kernel:
// its own source cut out of the package's kernel.cpp, compiled with the
// package's recorded flags, and a driver.cpp (linked against the LibTorch
// found at replay time) that loads the saved tensors and makes the
// wrapper's own call. For an extern call: the same C-shim call from the
// driver. Triton kernels: a replay that says it cannot run here. The
// driver's helpers (replay_host.cpp, LibTorch's heavy headers) are built
// once per torch and compiler and cached, so a replay builds in seconds.
//
// Text generation only (no LibTorch headers): the driver's C++ is written
// as text and compiled by the script when someone runs it. Nothing in the
// folder names a path of this machine: torch, the compiler and the build
// folder are found when it runs.
//
// `replay` exits 1 when the symptom reproduces (NaN/Inf in an output from
// finite inputs; a fault inside the call; an output beyond tolerance of the
// saved eager value), 0 when it does not, 2 when it cannot run.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wrapper/wrapper.hpp"
#include "protocol/events.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

struct ReplaySpec {
  std::filesystem::path repro_dir;   // OUT/repro, holding the saved tensors
  std::filesystem::path model_dir;   // the model the search ran (holds data/aotinductor/)
  std::string model_name;            // its folder under data/aotinductor/ ("model")
  int site = 0;                      // run-time call site (the saved files' "site<K>_" prefix)
  int wrapper_site = 0;              // the wrapper's call site (1-based); 0: same as `site`
  std::string predicate;             // "fault", "nonfinite", "mismatch"
  const Culprit* culprit = nullptr;  // kernel, kind, argument statistics, divergence
  Events events;                     // the evidence run's "saved" events (they name the files)
  // The user's custom operator libraries (--load-library): copied beside
  // the replay, which loads them before a proxy-executor call.
  std::vector<std::filesystem::path> libraries;
  // The graph inputs' sizes and strides as the run saw them, by the
  // wrapper's names ("arg4_1"): a scalar the call takes may be read from them
  // (`int64_t s77 = arg4_1_size[0];`).
  std::map<std::string, std::vector<int64_t>> input_sizes;
  std::map<std::string, std::vector<int64_t>> input_strides;
};

struct ReplayResult {
  bool written = false;        // OUT/repro/replay exists
  bool runnable = false;       // it rebuilds and runs the call (false: it exits 2 saying why)
  std::string note;            // one line: what it checks, or why it cannot run
  bool traced = false;         // `replay --intermediates` can run (a cpp kernel)
  std::string traced_problem;  // why it cannot, when not
};

// The generated folder's texts, by file name ("replay", "driver.cpp",
// "kernel.cpp", "README"). `problem` is set when the call cannot be replayed
// (the script then prints it and exits 2). A custom operator's call (the
// proxy executor's) is replayed through LibTorch's own proxy executor,
// built from the package's extern-node JSON (`extern_json`, written beside
// it as extern_nodes.json), after the libraries are loaded.
struct ReplayFiles {
  std::vector<std::pair<std::string, std::string>> files;
  std::string problem;
  std::string note;
  bool traced = false;         // kernel.traced.cpp written: `replay --intermediates` can run
  std::string traced_problem;  // why not, when not
};

// Texts only; reads nothing but the arguments.
ReplayFiles generate_replay(const ReplaySpec& spec, const std::string& wrapper_source, const std::string& kernel_source,
                            const std::string& extern_json = "");

// Reads the model's wrapper.cpp and kernel.cpp under spec.model_dir, then
// writes the folder. Never throws: a failure is a note.
ReplayResult write_replay(const ReplaySpec& spec);

// --- pieces, exposed for tests ---

// The kernel's definition cut out of kernel.cpp with what precedes it since
// the previous definition (its #include of cpp_prefix.h); comment lines
// outside the body dropped (they name build paths). "" when not found.
std::string replay_kernel_source(const std::string& kernel_source, const std::string& kernel);

// The package's recorded compile flags for kernel.cpp made portable: the
// optimisation, -f, -m, -D and -std flags kept; sources, outputs, -I, -L,
// -l, -include and anything naming a path dropped. Empty when none recorded.
std::vector<std::string> portable_kernel_flags(const std::string& kernel_source);

// The text of the call that starts on 1-based `line` of `source` at the
// first `name(`, up to its matching ')' (across lines). "" when not there.
std::string call_text_at(const std::string& source, int line, const std::string& name);

// The top-level arguments of a call text "name(a, f(b, c), d)".
std::vector<std::string> call_arguments(const std::string& call);

// The strings the replay's texts must never contain (home directory, and
// any absolute path of this machine they could have picked up): "" if clean,
// else the first offending text.
std::string private_path_in(const std::string& text, const std::vector<std::string>& private_paths);

// Empties OUT/repro for a search's saved tensors and replay, keeping the
// trigger's smallest inputs (minimal.inputs.pt, job/shrink.hpp), which
// another phase wrote there.
void clear_repro_folder(const std::filesystem::path& dir);

}  // namespace aoti_bisect
