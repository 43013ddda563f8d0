#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>

#include <cstdlib>
#include <set>

#include "common/files.hpp"
#include "report/json.hpp"
#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {

TensorStats tensor_stats(const std::string& name, const at::Tensor& t);  // session.cpp

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
    s.emit("site_begin", {{"site", s.site}, {"kernel", kernel}});
  }
}

void finish_launch(ProbeState& s) {
  s.launched = true;
  if (s.mode >= ProbeMode::sync) {
    if (s.device_key == "cuda") {
      if (auto err = cuda_synchronize_error()) {
        s.emit("sync_error", {{"site", s.site}, {"kernel", s.kernel}, {"message", *err}});
        std::_Exit(10);  // RunnerExit::model_error; the device context is unusable now
      }
    }
  }
  if (s.mode >= ProbeMode::trace) {
    s.emit("site_end", {{"site", s.site}, {"kernel", s.kernel}, {"tensors", s.tensors}});
  }
}

void probe_tensor(ProbeState& s, const at::Tensor& t, const std::string& name, bool before) {
  bool initialized = name.rfind("arg", 0) == 0 || s.touched.count(name) > 0 || !before;
  s.emit("probe", {{"site", s.site},
                   {"kernel", s.kernel},
                   {"phase", before ? "before" : "after"},
                   {"tensor", name},
                   {"initialized", initialized},
                   {"stats", to_json(tensor_stats(name, t))}});
  if (before && s.mode == ProbeMode::save && !s.plan.save_dir.empty()) {
    std::filesystem::path path =
        s.plan.save_dir / ("site" + std::to_string(s.site) + "_" + safe_file_part(name) + ".pt");
    std::vector<char> bytes = torch::jit::pickle_save(t.detach().to(at::kCPU).clone());
    write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
    s.emit("saved", {{"site", s.site}, {"kernel", s.kernel}, {"tensor", name}, {"path", path.string()}});
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

void install_probes(const ProbePlan& plan, EmitFn emit, const std::string& device_key) {
  ProbeState& s = state();
  s.plan = plan;
  s.emit = std::move(emit);
  s.device_key = device_key;
  s.installed = true;
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
