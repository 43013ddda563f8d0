// The runner's Session with LibTorch: the model loaded and run, its buffers kept and restored, outputs'
// and inputs' statistics, outputs saved and compared with a reference; torch's, CUDA's and HIP's versions.

#include <algorithm>
#include <link.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <streambuf>
#include <string_view>

#include <ATen/cpu/Utils.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "torchside/internal.hpp"
#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {
namespace fs = std::filesystem;

std::string dtype_name(at::ScalarType t) {
  std::string s = c10::toString(t);  // "Float", "Long", "BFloat16"
  static const std::map<std::string, std::string> names = {{"Float", "float32"},
                                                           {"Double", "float64"},
                                                           {"Half", "float16"},
                                                           {"BFloat16", "bfloat16"},
                                                           {"Long", "int64"},
                                                           {"Int", "int32"},
                                                           {"Short", "int16"},
                                                           {"Char", "int8"},
                                                           {"Byte", "uint8"},
                                                           {"Bool", "bool"},
                                                           {"ComplexFloat", "complex64"},
                                                           {"ComplexDouble", "complex128"}};
  auto it = names.find(s);
  return it == names.end() ? s : it->second;
}

std::vector<int64_t> to_vec(c10::IntArrayRef r) {
  return std::vector<int64_t>(r.begin(), r.end());
}

std::string tensor_device_str(const at::Tensor& t) {
  return t.device().str();
}

namespace {

// The parent of the folder libtorch_cpu.so was loaded from.
std::string torch_dir() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (name.ends_with("/libtorch_cpu.so")) {
          *static_cast<std::string*>(data) = name;
          return 1;
        }
        return 0;
      },
      &found);
  if (found.empty()) {
    return "";
  }
  std::error_code ec;
  fs::path lib = fs::weakly_canonical(fs::path(found), ec).parent_path();
  return lib.parent_path().string();
}

// "6.2.41133" where LibTorch is a ROCm build (its CUDA hooks are HIP's), read
// from the hooks' build summary ("  - HIP Runtime 6.2.41133"); "" for a CPU or
// CUDA build. Needs no device.
std::string hip_version() {
  try {
    const auto& hooks = at::detail::getCUDAHooks();
    if (!hooks.hasROCM()) {
      return "";
    }
    const std::string config = hooks.showConfig();
    const std::string key = "HIP Runtime ";
    size_t pos = config.find(key);
    if (pos == std::string::npos) {
      return "unknown";
    }
    pos += key.size();
    return config.substr(pos, config.find_first_of(" \r\n", pos) - pos);
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

Versions versions(const std::string& device_key) {
  Versions v;
  v.torch = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
            std::to_string(TORCH_VERSION_PATCH);
  v.hip = hip_version();
  v.torch_dir = torch_dir();
  if (device_key == "cuda") {
    cuda_fill_versions(v);
  }
  return v;
}

Session::Session() : m_impl(std::make_unique<Impl>()) {}
Session::~Session() = default;

void Session::set_output_names(std::vector<std::string> names) {
  m_impl->output_names = std::move(names);
}

void Session::load_model(const fs::path& package_dir, const std::string& model, const std::string& device_key) {
  m_impl->device_key = device_key;
  // A CPP GEMM template's AMX micro-kernel (a bfloat16 package built with
  // max_autotune) needs the process's permission for AMX tile data, which
  // torch's Python import asks for and a C++ program must ask for itself:
  // without it the kernel dies of SIGILL where the user's process runs.
  at::cpu::init_amx();
  try {
    m_impl->model = load_extracted_model(package_dir, model);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    throw Error(ErrorKind::cannot_test, "model '" + model + "' cannot be loaded: " + msg.substr(0, msg.find('\n')));
  }
}

size_t Session::keep_buffers(const std::vector<std::string>& names) {
  m_impl->kept_buffers.clear();
  if (!m_impl->model || names.empty()) {
    return 0;
  }
  auto constants = m_impl->model->constants();
  size_t bytes = 0;
  for (const auto& name : names) {
    auto it = constants.find(name);
    if (it == constants.end() || !it->second.defined() || !it->second.has_storage()) {
      continue;
    }
    at::Tensor copy = it->second.clone(at::MemoryFormat::Preserve);
    bytes += copy.nbytes();
    m_impl->kept_buffers.emplace_back(it->second, std::move(copy));
  }
  return bytes;
}

int Session::restore_buffers() {
  int n = 0;
  for (auto& [live, kept] : m_impl->kept_buffers) {
    live.copy_(kept);
    ++n;
  }
  return n;
}

namespace {

// What a model writes to std::cerr while it runs, passed through unchanged
// (each write goes to the real stream at once, so a crash loses nothing) and
// kept, with the start of its last "Error: " and "Unknown exception occurred."
// writes, so that the model's own error text can be told apart.
class CerrTee : public std::streambuf {
 public:
  CerrTee() : m_target(std::cerr.rdbuf(this)) {}
  ~CerrTee() override { std::cerr.rdbuf(m_target); }
  CerrTee(const CerrTee&) = delete;
  CerrTee& operator=(const CerrTee&) = delete;

  // The message the model's runtime (CONVERT_EXCEPTION_TO_ERROR_CODE in
  // torch/_inductor/codegen/aoti_runtime/interface.cpp) records for
  // AOTInductorGetLastError from 2.13 on: e.what() of the exception it caught,
  // or "Unknown exception". Before 2.13 it only printed them, as
  // "Error: <what>\n" or "Unknown exception occurred.\n"; "" when neither
  // was printed.
  std::string last_model_error() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_unknown_at != std::string::npos && (m_error_at == std::string::npos || m_unknown_at > m_error_at)) {
      return "Unknown exception";
    }
    if (m_error_at == std::string::npos) {
      return "";
    }
    std::string what = m_text.substr(m_error_at + k_error.size());
    if (!what.empty() && what.back() == '\n') {
      what.pop_back();
    }
    return what;
  }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize written = m_target->sputn(s, n);
    record(std::string(s, static_cast<size_t>(n)));
    return written;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) {
      return traits_type::not_eof(c);
    }
    int_type r = m_target->sputc(traits_type::to_char_type(c));
    record(std::string(1, traits_type::to_char_type(c)));
    return r;
  }
  int sync() override { return m_target->pubsync(); }

 private:
  static constexpr std::string_view k_error = "Error: ";
  static constexpr std::string_view k_unknown = "Unknown exception occurred.\n";
  static constexpr size_t k_limit = 1 << 20;

  void record(const std::string& piece) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_text.size() + piece.size() > k_limit) {
      return;  // a model that prints this much is not reporting one error
    }
    if (piece == k_error) {
      m_error_at = m_text.size();
    } else if (piece == k_unknown) {
      m_unknown_at = m_text.size();
    }
    m_text += piece;
  }

  std::streambuf* m_target;
  mutable std::mutex m_mutex;
  std::string m_text;
  size_t m_error_at = std::string::npos;
  size_t m_unknown_at = std::string::npos;
};

// Before 2.13 a failing model makes the container runner throw only
// "run_func_(...) API call failed at .../model_container_runner.cpp, line N";
// the model's own message went to stderr. The runner reports the model's
// message instead, as LibTorch 2.13 and later do.
std::string model_error_text(const std::string& runner_message, const CerrTee& tee) {
  if (runner_message.find(" API call failed at ") == std::string::npos) {
    return runner_message;
  }
  std::string own = tee.last_model_error();
  return own.empty() ? runner_message : own;
}

}  // namespace

std::optional<ModelError> Session::run() {
  CerrTee tee;
  try {
    m_impl->outputs = m_impl->model->run(m_impl->inputs);
  } catch (const c10::Error& e) {
    return ModelError{model_error_text(e.what_without_backtrace(), tee)};
  } catch (const std::exception& e) {
    return ModelError{model_error_text(e.what(), tee)};
  }
  return std::nullopt;
}

std::optional<ModelError> Session::synchronize() {
  if (m_impl->device_key != "cuda") {
    return std::nullopt;
  }
  if (auto err = cuda_synchronize_error()) {
    return ModelError{*err};
  }
  return std::nullopt;
}

std::vector<TensorStats> Session::output_stats() const {
  std::vector<TensorStats> out;
  for (size_t i = 0; i < m_impl->outputs.size(); ++i) {
    std::string name = "output" + std::to_string(i);
    if (i < m_impl->output_names.size() && !m_impl->output_names[i].empty()) {
      name += " (" + m_impl->output_names[i] + ")";  // as the call spec names it
    }
    out.push_back(tensor_stats(name, m_impl->outputs[i]));
  }
  return out;
}

std::vector<TensorStats> Session::input_stats() const {
  std::vector<TensorStats> out;
  for (size_t i = 0; i < m_impl->inputs.size(); ++i) {
    const at::Tensor& t = m_impl->inputs[i];
    TensorStats s = tensor_stats("input" + std::to_string(i), t);
    if (s.nonfinite() > 0) {
      // Where the first bad value sits (an index, never a value).
      at::Tensor flat = t.detach().to(at::kCPU).contiguous().reshape({-1});
      int64_t at = at::logical_not(at::isfinite(flat)).to(at::kByte).argmax().item<int64_t>();
      for (int64_t d = t.dim() - 1; d >= 0; --d) {
        s.first_nonfinite.insert(s.first_nonfinite.begin(), at % t.size(d));
        at /= t.size(d);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

void Session::save_outputs(const fs::path& path) const {
  std::vector<c10::IValue> items;
  for (const auto& t : m_impl->outputs) {
    items.emplace_back(t.detach().to(at::kCPU));
  }
  std::vector<char> bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(std::move(items)));
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

Comparison Session::compare(const fs::path& reference, const ToleranceTable& tolerances,
                            const std::vector<int64_t>& rows) const {
  std::vector<at::Tensor> ref = load_tensors(reference, "reference file");
  if (!rows.empty()) {
    const at::Tensor index = at::tensor(rows, at::kLong);
    for (auto& t : ref) {
      if (t.dim() >= 1 && t.size(0) > *std::max_element(rows.begin(), rows.end())) {
        t = t.index_select(0, index.to(t.device()));
      }
    }
  }
  const auto& out = m_impl->outputs;
  if (ref.size() != out.size()) {
    throw Error(ErrorKind::cannot_test, "reference file '" + reference.string() + "' holds " +
                                            std::to_string(ref.size()) + " tensors, the model returns " +
                                            std::to_string(out.size()));
  }
  Comparison c;
  double worst_ratio = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (ref[i].sizes() != out[i].sizes()) {
      std::ostringstream ss;
      ss << "reference file '" << reference.string() << "': output " << i << " has shape " << out[i].sizes()
         << ", the reference " << ref[i].sizes();
      throw Error(ErrorKind::cannot_test, ss.str());
    }
    Tolerance tol = tolerances.for_dtype(dtype_name(out[i].scalar_type()));
    ValueDiff d = diff_values(out[i], ref[i], &tol);
    c.total += out[i].numel();
    c.mismatched += d.outside;
    c.nonfinite_mismatched += d.nonfinite;
    double max_abs = d.nonfinite > 0 ? std::numeric_limits<double>::infinity() : d.max_abs;
    double bound = tol.atol + tol.rtol * d.scale;
    double ratio = bound > 0 ? max_abs / bound : (max_abs > 0 ? std::numeric_limits<double>::infinity() : 0);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      c.worst_output = "output" + std::to_string(i);
      c.atol = tol.atol;
      c.rtol = tol.rtol;
    }
    // Over the elements finite on both sides, whatever the others hold.
    c.max_abs_error = std::max(c.max_abs_error, d.max_abs);
    c.max_rel_error = std::max(c.max_rel_error, d.scale > 0 ? d.max_abs / d.scale : 0.0);
    if (d.nonfinite > 0 && c.note.empty()) {
      c.note =
          "NaN/Inf positions differ in output " + std::to_string(i) + " (" + std::to_string(d.nonfinite) + " elements)";
    }
  }
  c.within_tolerance = c.mismatched == 0;
  return c;
}

ValueDiff diff_values(const at::Tensor& actual, const at::Tensor& expected, const Tolerance* tol) {
  ValueDiff d;
  at::Tensor a = actual.detach().to(at::kCPU).to(at::kDouble).reshape({-1});
  at::Tensor e = expected.detach().to(at::kCPU).to(at::kDouble).reshape({-1});
  if (a.numel() == 0) {
    return d;
  }
  at::Tensor a_fin = a.isfinite();
  at::Tensor e_fin = e.isfinite();
  at::Tensor both_finite = a_fin.logical_and(e_fin);
  // Non-finite on either side: equal only when both are NaN or the same Inf.
  at::Tensor same_nonfinite = a.isnan().logical_and(e.isnan()).logical_or(a.isinf().logical_and(a.eq(e)));
  at::Tensor nonfinite_bad = both_finite.logical_not().logical_and(same_nonfinite.logical_not());
  d.nonfinite = nonfinite_bad.sum().item<int64_t>();
  at::Tensor e_abs = e.abs().masked_fill(e_fin.logical_not(), 0.0);
  d.scale = e_abs.max().item<double>();
  at::Tensor diff = (a - e).abs().masked_fill(both_finite.logical_not(), 0.0);
  int64_t worst =
      d.nonfinite > 0 ? nonfinite_bad.to(at::kByte).argmax().item<int64_t>() : diff.argmax().item<int64_t>();
  d.max_abs = diff.max().item<double>();
  d.differ = diff.gt(0.0).sum().item<int64_t>() + d.nonfinite;
  d.worst_flat = worst;
  d.actual = a[worst].item<double>();
  d.expected = e[worst].item<double>();
  if (tol != nullptr) {
    d.outside = diff.gt(tol->atol + tol->rtol * d.scale).sum().item<int64_t>() + d.nonfinite;
  }
  return d;
}

}  // namespace aoti_bisect::torchside
