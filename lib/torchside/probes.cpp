#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"

#include "common/files.hpp"
#include "protocol/values.hpp"
#include "torchside/internal.hpp"
#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {


namespace {

struct ProbeState {
  ProbePlan plan;
  EmitFn emit;
  std::string device_key;
  bool installed = false;
  long calls = 0;
  int site = 0;
  std::string kernel;
  bool launched = false;            // after_launch seen for the current site
  ProbeMode mode = ProbeMode::off;
  std::vector<std::string> tensors; // names seen before launch at the current site
  std::set<std::string> touched;    // names any earlier site touched
  std::set<std::string> returned;   // buffers extern calls create (written before any site reads them)
  std::map<std::string, std::vector<at::Tensor>> node_ref;  // buffer -> eager values of its candidate nodes
};

ProbeState& state() {
  static ProbeState s;
  return s;
}

std::string safe_file_part(std::string s) {
  for (auto& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      c = '_';
    }
  }
  return s;
}

void begin_site(ProbeState& s, const std::string& kernel) {
  for (const auto& t : s.tensors) {
    s.touched.insert(t);
  }
  ++s.site;
  s.kernel = kernel;
  s.launched = false;
  s.tensors.clear();
  s.mode = s.plan.mode_for(s.site);
  if (s.mode >= ProbeMode::trace) {
    s.emit(EventKind::site_begin, {{"site", s.site}, {"kernel", kernel}});
  }
}

void finish_launch(ProbeState& s) {
  s.launched = true;
  if (s.mode >= ProbeMode::sync) {
    if (s.device_key == "cuda") {
      if (auto err = cuda_synchronize_error()) {
        s.emit(EventKind::sync_error, {{"site", s.site}, {"kernel", s.kernel}, {"message", *err}});
        std::_Exit(10);  // RunnerExit::model_error; the device context is unusable now
      }
    }
  }
  if (s.mode >= ProbeMode::trace) {
    s.emit(EventKind::site_end, {{"site", s.site}, {"kernel", s.kernel}, {"tensors", s.tensors}});
  }
}

std::vector<int64_t> unravel(int64_t flat, c10::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] > 0) {
      index[d] = flat % sizes[d];
      flat /= sizes[d];
    }
  }
  return index;
}

// The probe's value against the eager values the buffer may hold: the
// closest candidate (fewest NaN/Inf mismatches, then smallest error for its
// scale).
nlohmann::json compare_with_reference(const at::Tensor& t, const std::vector<at::Tensor>& candidates) {
  std::optional<std::pair<size_t, ValueDiff>> best;
  std::string unmatched;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].numel() != t.numel()) {
      unmatched = fmt::format("{} elements, the graph node {}", t.numel(), candidates[i].numel());
      continue;
    }
    ValueDiff d = diff_values(t, candidates[i]);
    auto score = [](const ValueDiff& v) { return std::make_pair(v.nonfinite, v.max_abs / std::max(v.scale, 1e-30)); };
    if (!best || score(d) < score(best->second)) {
      best = {i, d};
    }
  }
  if (!best) {
    return {{"unmatched", unmatched}};
  }
  const ValueDiff& d = best->second;
  return {{"candidate", best->first},
          {"expected_dtype", dtype_name(candidates[best->first].scalar_type())},
          {"max_abs", d.nonfinite > 0 ? nlohmann::json(nullptr) : nlohmann::json(d.max_abs)},
          {"scale", d.scale},
          {"nonfinite", d.nonfinite},
          {"worst", unravel(d.worst_flat, t.sizes())},
          {"actual", json_number(d.actual)},
          {"expected", json_number(d.expected)}};
}

void probe_tensor(ProbeState& s, const at::Tensor& t, const std::string& name, bool before) {
  bool initialized = name.rfind("arg", 0) == 0 || s.touched.count(name) > 0 || s.returned.count(name) > 0 || !before;
  nlohmann::json fields = {{"site", s.site},
                           {"kernel", s.kernel},
                           {"phase", before ? "before" : "after"},
                           {"tensor", name},
                           {"initialized", initialized},
                           {"stats", to_json(tensor_stats(name, t))}};
  if (initialized && t.numel() > 0) {
    if (auto it = s.node_ref.find(name); it != s.node_ref.end()) {
      fields["compare"] = compare_with_reference(t, it->second);
    }
  }
  s.emit(EventKind::probe, std::move(fields));
  if (before && s.mode == ProbeMode::save && !s.plan.save_dir.empty()) {
    std::filesystem::path path =
        s.plan.save_dir / ("site" + std::to_string(s.site) + "_" + safe_file_part(name) + ".pt");
    std::vector<char> bytes = torch::jit::pickle_save(t.detach().to(at::kCPU).clone());
    write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
    s.emit(EventKind::saved, {{"site", s.site}, {"kernel", s.kernel}, {"tensor", name}, {"path", path.string()}});
  }
}

// Tensor names can be expressions on some versions ("copy_arrayref_tensor_to_tensor(buf1)").
std::string plain_name(const std::string& name) {
  size_t open = name.rfind('(');
  size_t close = name.find(')', open == std::string::npos ? 0 : open);
  if (open != std::string::npos && close != std::string::npos) {
    return name.substr(open + 1, close - open - 1);
  }
  return name;
}

}  // namespace

void install_probes(const ProbePlan& plan, EmitFn emit, const std::string& device_key,
                    std::set<std::string> returned) {
  ProbeState& s = state();
  s.returned = std::move(returned);
  s.plan = plan;
  s.emit = std::move(emit);
  s.device_key = device_key;
  s.installed = true;
}

void load_node_reference(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && bytes.empty()) {
    throw Error(ErrorKind::cannot_test, "cannot read the per-node reference '" + path.string() + "'");
  }
  c10::IValue iv;
  try {
    iv = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    std::string msg = e.what();
    throw Error(ErrorKind::cannot_test,
                "the per-node reference '" + path.string() + "' cannot be loaded: " + msg.substr(0, msg.find('\n')));
  }
  if (!iv.isGenericDict()) {
    throw Error(ErrorKind::cannot_test, "the per-node reference '" + path.string() + "' is not a dict");
  }
  auto& ref = state().node_ref;
  for (const auto& kv : iv.toGenericDict()) {
    if (!kv.key().isString() || !kv.value().isList()) {
      continue;
    }
    std::vector<at::Tensor> tensors;
    for (const auto& v : kv.value().toListRef()) {
      if (v.isTensor()) {
        tensors.push_back(v.toTensor());
      }
    }
    ref[kv.key().toStringRef()] = std::move(tensors);
  }
}

ProbeCounts probe_counts() { return {state().calls, state().site}; }

void on_probe_call(void* handle, const char* tensor_name, const char* phase, const char* kernel) {
  ProbeState& s = state();
  ++s.calls;
  if (!s.installed || handle == nullptr || phase == nullptr || kernel == nullptr) {
    return;
  }
  std::string k(kernel);
  std::string name = plain_name(tensor_name ? tensor_name : "");
  bool before = std::string_view(phase).find("before") != std::string_view::npos;
  if (before && (s.site == 0 || s.launched || k != s.kernel)) {
    begin_site(s, k);
  } else if (!before && s.site == 0) {
    begin_site(s, k);  // a site probed only after launch
  }
  if (!before && !s.launched) {
    finish_launch(s);
  }
  if (before) {
    s.tensors.push_back(name);
  }
  if (s.mode < ProbeMode::stats) {
    return;
  }
  const at::Tensor* t = torch::aot_inductor::tensor_handle_to_tensor_pointer(static_cast<AtenTensorHandle>(handle));
  if (t == nullptr || !t->defined()) {
    return;
  }
  probe_tensor(s, *t, name, before);
}

}  // namespace aoti_bisect::torchside
