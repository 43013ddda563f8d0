#pragma once
// The torch side of the runner, behind a torch-free header: tensor loading,
// checking, statistics, comparison, model loading and running. Only files in
// lib/torchside/ include LibTorch headers.

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inputs/call_spec.hpp"
#include "package/facts.hpp"
#include "protocol/events.hpp"
#include "protocol/input_cut.hpp"
#include "protocol/probe_plan.hpp"
#include "protocol/runner.hpp"
#include "protocol/values.hpp"

namespace aoti_bisect::torchside {

struct Versions {
  std::string torch;        // "2.13.0"
  std::string cuda;         // CUDA runtime version, "" without the CUDA path or device
  std::string hip;          // HIP runtime version where LibTorch is a ROCm build, else ""
  std::string device_name;  // of the device the model runs on
  std::string driver;
  bool cuda_available = false;
  // The folder LibTorch was loaded from (the torch package or a LibTorch
  // distribution: its lib/ and include/), "" when it cannot be told.
  std::string torch_dir;
};
Versions versions(const std::string& device_key);

// AOTI_BISECT_GUARD_PAGES=1 (the CPU profile's `guard_pages` variant): every
// CPU tensor ends against an inaccessible page, so a write past a buffer's
// end faults inside the kernel that makes it. Call before any tensor exists.
void install_guard_page_allocator();

// A model failure raised from inside the model's run: the exception's text.
struct ModelError {
  std::string message;
};

struct LoadedInputs {
  std::vector<TensorInfo> infos;  // the bound inputs, in the model's flat order
  InputBinding binding;
  std::vector<std::string> notes;  // values read as something else (a BatchEncoding as its dict)
};

// Inputs cut before the run (protocol/input_cut.hpp): some samples of a
// batch (the runner's --samples, the driver's shrinking of the trigger),
// rows of any dimension across the inputs that share it, integer inputs
// filled with one value (verify's neighbours); the other inputs are left
// whole. `save`: the inputs so cut, written in the file's own form (a
// tuple, a dict of keyword arguments) by torch's pickle_save.
struct SampleTake {
  InputCut cut;
  std::filesystem::path save;
};

class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Loads a torch.save file and binds what it holds to the model's flat
  // inputs by the model's call spec (inputs/call_spec.hpp bind_inputs:
  // keys by argument name, nesting by position; every tensor in file order
  // where the package has no call spec). The bound inputs are what later
  // calls use. A file that does not fit the spec returns its one-line reason
  // in binding.error (and no infos). Throws Error(cannot_test) when the file
  // is not torch.save's format or holds values other than tensors where the
  // model takes tensors.
  // With `take`, its cut is made first (a row outside its dimension, an
  // input without that dimension or a fill of a non-integer input is
  // binding.error).
  LoadedInputs load_inputs(const std::filesystem::path& path, const ModelFacts& model,
                           const SampleTake* take = nullptr);

  // Checks the loaded inputs against what the model takes; returns one line
  // per problem ("input 1 (arg5_1): dtype int32, the model takes int64";
  // strides other than the package was compiled for, in a dimension longer
  // than 1). Inputs on another device than `device_key` are moved there, and
  // with `contiguous_inputs` inputs of another layout are copied into the
  // package's (each noted in `moved`). A dynamic dimension outside the
  // range the package was compiled for is no problem: the package runs it
  // with its own input checks off (its default), so it is run as the user
  // runs it and noted in `outside` ("input 0 (arg4_1): dimension 0 is 1,
  // outside [2, 64] ...").
  std::vector<std::string> check_inputs(const ModelFacts& model, const std::string& device_key, bool contiguous_inputs,
                                        std::vector<std::string>& moved, std::vector<std::string>& outside);

  // Loads the model from an extracted package directory (no temporary folder).
  void load_model(const std::filesystem::path& package_dir, const std::string& model, const std::string& device_key);

  // Output names from the call spec's out_spec (inputs/call_spec.hpp
  // output_names): statistics call output i "output0 (logits)".
  void set_output_names(std::vector<std::string> names);

  // Runs once; returns a ModelError instead of throwing when the model raises.
  std::optional<ModelError> run();

  // After run(): a device error that surfaced only at synchronisation (CUDA).
  std::optional<ModelError> synchronize();

  std::vector<TensorStats> output_stats() const;
  std::vector<TensorStats> input_stats() const;
  void save_outputs(const std::filesystem::path& path) const;

  // Compares outputs with a torch.save'd reference. Throws Error(cannot_test)
  // when the reference cannot be read or its structure (count, shapes)
  // differs from the outputs.
  // Each output is judged with its dtype's tolerance (config.hpp Tolerance).
  // `rows`: the run took these rows of the batch (--samples); the
  // reference's tensors are cut along dimension 0 with them (the driver
  // shrinks a mismatch only where every output has the batch there).
  Comparison compare(const std::filesystem::path& reference, const ToleranceTable& tolerances,
                     const std::vector<int64_t>& rows = {}) const;

  // The persistent runner (docs/runner.md): the model's buffers (constants
  // of kind buffer, by original name: ModelFacts::buffers) copied as
  // loaded, so that restore_buffers() puts them back before another run in
  // this process (a forward that updates a buffer in place, a KV cache, sees
  // it as loaded every run, as a fresh process would). keep_buffers returns
  // the bytes kept; restore_buffers how many it put back.
  size_t keep_buffers(const std::vector<std::string>& names);
  int restore_buffers();

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Probes. The runner exports aoti_torch_save_tensor_handle (the symbol an
// instrumented model calls around every kernel) and forwards each call to
// on_probe_call, which numbers call sites by occurrence (a new site starts at
// the first before_launch after an after_launch, or at a new kernel name) and
// acts per the plan, reporting events through `emit`:
//   site_begin {site, kernel}            first before_launch of a site (trace and up)
//   site_end {site, kernel, tensors}     first after_launch: the launch returned
//   probe {site, kernel, phase, tensor, initialized, stats}   stats and save
//   saved {site, kernel, tensor, path}   save
//   sync_error {site, kernel, message}   sync found a device error; the runner then exits 10
// "initialized" is true for graph inputs (arg*), tensors an earlier site
// touched, and `returned` buffers (an extern call created them, out of the
// printer's sight); an output buffer nothing wrote yet holds garbage before
// launch.
using EmitFn = std::function<void(EventKind kind, nlohmann::json fields)>;
// The per-site events (site_begin, probe, site_end) as text: no json object
// is built on that path (protocol/events.hpp JsonFields).
using EmitTextFn = std::function<void(EventKind kind, const JsonFields& fields)>;
void install_probes(const ProbePlan& plan, EmitFn emit, EmitTextFn emit_text, const std::string& device_key,
                    std::set<std::string> returned = {});
void on_probe_call(void* tensor_handle, const char* tensor_name, const char* phase, const char* kernel);
struct ProbeCounts {
  long calls = 0;
  int sites = 0;
};
ProbeCounts probe_counts();
// The persistent runner: the probes' state as the model's load left it,
// kept once and put back before each later run (counts, sites, the
// handles seen, what was measured), so that each run starts as the first.
void keep_probe_state();
void restore_probe_state();

// Interposition (codegen/hooks.hpp): the generated hooks report each call
// site through these. hook_enter begins a site and returns its probe mode
// (0 off); hook_tensor / hook_pointer show one argument (by position; its
// name comes from the call site's facts) before or after the launch;
// hook_launched ends the launch. hook_data_ptr / hook_forget keep the map
// from raw pointers to the tensor handles the wrapper took them from.
void set_hook_names(std::vector<ModelFacts::Site> sites, std::vector<std::string> constants);
// Moves that carry a value on (a torch.cond branch's result, a subgraph's
// inputs; wrapper/wrapper.hpp value_moves, as (bufA, bufB)): a tensor probed
// under the new name is initialized when its earlier name was. Reuse of a
// dead buffer's memory is not followed: what it holds is stale.
// Constants (by the wrapper's names) are initialized, and probes say so.
// An in-place argument (a cpp kernel's `in_out_ptrN`) also counts as written
// when a name it reuses (`reuse`: every `auto bufA = std::move(bufB);`) was.
// A view of a live buffer and its base (`aliases`, as (view, base)) share
// their bytes: either is initialized once the other was written.
void set_buffer_moves(const std::vector<std::pair<std::string, std::string>>& moves,
                      const std::vector<std::string>& constants,
                      const std::vector<std::pair<std::string, std::string>>& reuse = {},
                      const std::vector<std::pair<std::string, std::string>>& aliases = {});
int hook_enter(const char* kernel);
// `element`: the tensor's position in a list argument (-1 for one tensor).
void hook_tensor(void* handle, int arg, bool after, int element = -1);
void hook_pointer(const void* pointer, int arg, bool after);
void hook_launched(bool failed);
void hook_data_ptr(void* handle, void* pointer);
void hook_forget(void* handle);

// Loads the hook library and binds its hooks into the GOT slots of the
// loaded model library named `model_library` (its file name): only the
// model's own calls reach the hooks. Returns what it bound; throws
// Error(internal) when the library cannot be used.
struct HookBinding {
  int hooks = 0;                     // hooks in the library
  int slots = 0;                     // GOT slots rebound
  std::vector<std::string> unbound;  // hooks the model has no slot for
};
HookBinding bind_hooks(const std::filesystem::path& hook_library, const std::string& model_library);

// AOTI_BISECT_POISON=1 (the profiles' `poison` variant): the model's
// allocations through the C shim (aoti_torch_empty_strided and its
// siblings) are filled with a poison of their dtype at allocation
// (poison.cpp says which), through the model library's GOT. Call after the
// model is loaded. Returns the slots it rebound (0: the model allocates no
// buffer through the shim, or binds its own symbols); throws Error(internal)
// where the GOT cannot be written.
bool poison_active();  // this run poisons (AOTI_BISECT_POISON=1)
struct PoisonBinding {
  int slots = 0;
  std::vector<std::string> unbound;
};
PoisonBinding bind_poison(const std::string& model_library);

// Loads the per-node reference (torch.save of {buffer name: [tensor, ...]},
// written by the build helper's node-values mode) for the probes: with it, a
// `stats` probe of a named buffer also reports a "compare" object against
// the closest candidate:
//   {candidate, max_abs, scale, worst: [index...], actual, expected, nonfinite}
// (max_abs is null when NaN/Inf positions differ; nonfinite counts them).
// Throws Error(cannot_test) when the file cannot be read.
void load_node_reference(const std::filesystem::path& path);

// The user's operator libraries (--load-library), each dlopen'ed
// RTLD_GLOBAL before the model loads; throws Error(cannot_test) naming the
// one that cannot be loaded.
void load_libraries(const std::vector<std::string>& paths);
// Of the proxy executor's operators ("myops::scaled_log"), those no loaded
// library registers.
std::vector<std::string> unregistered_operators(const std::vector<std::string>& ops);
// Throws Error(cannot_test), one line naming each unregistered operator and
// what to do (--load-library), when any of `ops` is not registered.
// `python_ops`: those the package marks as Python custom operators.
void require_operators(const std::vector<std::string>& ops, const std::vector<std::string>& python_ops,
                       const std::vector<std::string>& libraries, const std::string& model);

// CUDA helpers (cuda_device.cpp where the toolkit exists, cuda_none.cpp
// otherwise): synchronise and return the pending error text, if any.
std::optional<std::string> cuda_synchronize_error();
void cuda_fill_versions(Versions& v);

}  // namespace aoti_bisect::torchside
