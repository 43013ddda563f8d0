#pragma once
// Shared by the torchside sources only (it includes LibTorch).

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "archive/elf.hpp"
#include "archive/zip.hpp"
#include "protocol/values.hpp"

namespace aoti_bisect::torchside {

// Statistics of `t` on its own device in its own dtype (tensor_stats.cpp):
// host tensors in one parallel pass over 1 MiB blocks, device tensors by
// ATen's reductions there, only the scalars copied back. `device_ops` takes
// the device path for a host tensor too, `narrow_lanes` the host path's
// 128-bit float32 loop where the CPU has AVX2 (tests compare them).
enum class StatsPath { automatic, device_ops, narrow_lanes };
TensorStats tensor_stats(const std::string& name, const at::Tensor& t, StatsPath path = StatsPath::automatic);
// TensorStats::checksum alone: one pass over the bytes (tensor_stats.cpp
// documents the hash).
std::string tensor_checksum(const at::Tensor& t);

// Statistics already measured in one run, by what names the bytes: data
// pointer, version counter, dtype, sizes, strides. Kernels write through raw
// pointers without bumping the version counter, so a strided tensor's entry
// counts only while its checksum (one fast pass) is still the one measured.
// A tensor without storage (a packed oneDNN weight, which only oneDNN's
// calls read) is measured once: its dense copy is the cost.
class StatsCache {
 public:
  TensorStats get(const std::string& name, const at::Tensor& t);
  int measured() const { return m_measured; }  // full measurements made (not reused)

 private:
  using Key = std::tuple<uintptr_t, int64_t, int, std::vector<int64_t>, std::vector<int64_t>>;
  std::map<Key, TensorStats> m_entries;
  int m_measured = 0;
};
// `t` itself when its bytes can be read as a strided tensor; else (a oneDNN
// tensor, a sparse one) a dense copy, with `layout` naming its layout
// ("mkldnn"); nullopt when no dense copy can be made (then only its name,
// dtype and shape are known: an opaque tensor).
std::optional<at::Tensor> readable_copy(const at::Tensor& t, std::string& layout);
std::string dtype_name(c10::ScalarType t);
std::vector<int64_t> to_vec(c10::IntArrayRef r);
std::string tensor_sha256(const at::Tensor& t);  // of its contiguous bytes

// A ZipOpener by LibTorch's own zip reader (zip_torch.cpp): the runner
// links no zip library.
std::unique_ptr<ZipEntries> open_zip_torch(const std::filesystem::path& path, const std::string& what,
                                           const std::string& remedy);
std::string tensor_device_str(const at::Tensor& t);

// The model library as loaded in the runner (hook_binding.cpp): its path,
// load address and ELF facts (GOT slots, defined symbols).
struct ModelObject {
  std::string path;
  uintptr_t base = 0;
  ElfFacts elf;
};
// Throws Error(internal) when no loaded object has that file name.
ModelObject find_model_object(const std::string& model_library);
// One function to put into the model's GOT: `hook` in every slot for
// `symbol`; `*real` (when still null) the function the slot stood for.
struct GotEntry {
  std::string symbol;
  void* hook;
  void** real;
};
// Points each slot of the model's GOT whose symbol has an entry at its
// hook (only the model's own calls change); returns the slots rebound and
// appends the symbols without a slot to `unbound`. Throws Error(internal)
// when a slot's function cannot be found or the GOT cannot be written.
int bind_got(const ModelObject& model, const std::vector<GotEntry>& entries, std::vector<std::string>& unbound);

// How many elements of `t` still hold the poison of its dtype (poison.cpp;
// -1: its dtype has none).
int64_t poison_count(const at::Tensor& t);

// Every tensor of a torch.save file in file order (inputs.cpp). Throws
// Error(cannot_test) naming `what` when the file is not torch.save's format
// or holds anything but tensors (None included).
std::vector<at::Tensor> load_tensors(const std::filesystem::path& path, const std::string& what);
// `v` in torch.save's zip format without the type tags torch.load(weights_only=True) refuses.
std::string save_plain(const c10::IValue& v);

// The difference of two tensors with the same number of elements, compared
// in row-major order (a view of the same values compares equal).
struct ValueDiff {
  double max_abs = 0;       // over elements finite on both sides
  double scale = 0;         // max finite |expected|
  int64_t nonfinite = 0;    // elements where NaN/Inf differ
  int64_t worst_flat = -1;  // the worst element (a NaN/Inf mismatch first), row-major
  double actual = 0;
  double expected = 0;
  int64_t outside = 0;  // with a tolerance: elements outside it (NaN/Inf mismatches included)
  int64_t differ = 0;   // elements not equal (NaN/Inf mismatches included)
};
ValueDiff diff_values(const at::Tensor& actual, const at::Tensor& expected, const Tolerance* tol = nullptr);

// Which rows of a run's batch are one sample (job/batch_dependence.hpp).
struct SampleRows {
  int64_t batch = 0;   // samples in this run
  int64_t alone = 0;   // samples in the run alone (the sample repeated)
  int64_t sample = 0;  // 0-based, in this run
};
// A tensor of this run (the batch) against the same tensor in the run of the
// sample alone: the sample's rows of the one dimension whose size scales
// with the batch (`batch` here, `alone` there: its chunk for the sample, the
// batch outermost), or the whole tensor where no dimension changed (a value
// over the whole batch, such as a reduction over it). The probe's `compare`
// object: diff figures, "elements" and "rows" ({"whole": true} or {"dim",
// "from", "count"}); {"unmatched": why} where no one dimension scales.
nlohmann::json compare_rows(const at::Tensor& t, const at::Tensor& alone, const SampleRows& rows);

// One sample's saved values alone, by (call site, tensor): files read only
// when their site is probed (sample_rows.cpp).
struct SampleReference {
  SampleRows rows;
  std::map<std::pair<int, std::string>, std::string> files;
};
// From the driver's reference {"rows": {"batch", "alone"}, "samples": [{"sample",
// "alone", "sites": {"3": {"buf1": FILE}}}]}; Error(cannot_test) when malformed.
std::vector<SampleReference> read_sample_references(const nlohmann::json& j, const std::string& path);
// Tensor `name` at call site `site` against each sample's saved value there:
// compare_rows' objects with "sample", one per sample that saved it.
nlohmann::json compare_samples(const at::Tensor& t, int site, const std::string& name,
                               const std::vector<SampleReference>& refs);
// A tensor saved by pickle_save (a probe's save); std::runtime_error when unreadable.
at::Tensor load_saved_tensor(const std::string& file);
// A flat row-major index as one per dimension.
std::vector<int64_t> unravel_index(int64_t flat, c10::IntArrayRef sizes);

// One model of an extracted package directory, loaded (loader.cpp) with
// LibTorch's AOTIModelPackageLoader where it reads directories (2.13 and
// later), else with the container runner the loader would build, from the
// same files. Either way nothing is extracted or written: no temporary
// folder exists to leak. Throws what LibTorch throws (or std::runtime_error
// with the loader's message) when the model cannot be loaded.
class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  virtual std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) = 0;
  // The model's constants by original name, sharing their storage (the
  // container's extract_constants_map: folded ones left out).
  virtual std::unordered_map<std::string, at::Tensor> constants() = 0;
};
std::unique_ptr<LoadedModel> load_extracted_model(const std::filesystem::path& dir, const std::string& model);
// AOTI_BISECT_RUNNER_LOADER=container takes the fallback where the loader
// reads directories too (for tests).

}  // namespace aoti_bisect::torchside

#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {

// What a Session holds (session.cpp, inputs.cpp).
struct Session::Impl {
  std::vector<at::Tensor> inputs;
  std::vector<std::string> names;         // where the call spec bound each input from ("" when positional)
  std::vector<std::string> output_names;  // from the out_spec, where it names them
  std::vector<at::Tensor> outputs;
  std::unique_ptr<LoadedModel> model;
  std::string device_key;
  // keep_buffers: each buffer (sharing the model's storage) and its copy as loaded.
  std::vector<std::pair<at::Tensor, at::Tensor>> kept_buffers;
};

}  // namespace aoti_bisect::torchside
