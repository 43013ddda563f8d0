// The runner's probes per the probe plan: site events, statistics, eager comparison, saves (printer or hooks).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "process/process.hpp"
#include "protocol/values.hpp"
#include "torchside/internal.hpp"
#include "torchside/torchside.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect::torchside {

namespace {

struct ProbeState {
  ProbePlan plan;
  EmitFn emit;
  EmitTextFn emit_text;  // the per-site events: site_begin, probe, site_end
  JsonFields fields;     // reused for each of them
  std::string stats_text;
  std::string device_key;
  bool installed = false;
  long calls = 0;
  int site = 0;
  std::string kernel;
  bool launched = false;  // after_launch seen for the current site
  ProbeMode mode = ProbeMode::off;
  std::vector<std::string> tensors;  // names seen before launch at the current site
  std::set<std::string> touched;     // names any earlier site touched
  std::set<std::string> returned;    // buffers extern calls create (written before any site reads them)
  std::map<std::string, std::vector<at::Tensor>> node_ref;  // buffer -> eager values of its candidate nodes
  // Interposition: names by call site, and where raw pointers come from.
  std::vector<ModelFacts::Site> hook_sites;
  std::set<std::string> constants;
  std::multimap<std::string, std::string> moved_from;   // bufA -> bufB: moves that carry a value on
  std::multimap<std::string, std::string> reused_from;  // bufA -> bufB: every `auto bufA = std::move(bufB);`
  std::multimap<std::string, std::string> aliased;      // a view <-> its live base, both ways (ModelFacts::aliases)
  size_t cursor = 0;                                    // next static site to match
  const ModelFacts::Site* static_site = nullptr;        // the current site's facts
  std::vector<std::pair<void*, void*>> pending;         // (handle, pointer) since the last site began
  std::vector<std::pair<void*, void*>> current;         // ... taken for the current site's arguments
  std::map<uintptr_t, void*> by_pointer;                // every live handle seen, by data pointer
  std::map<void*, uintptr_t> pointer_of;                // ... and back
  // Statistics measured in this run: a constant is measured once per run,
  // and a tensor a launch only read is not measured again after it.
  StatsCache measured;
  std::set<std::string> saved;  // file names this run saved (a tensor once)
  // Where a sample depends on its batch (job/batch_dependence.hpp): what
  // each call site wrote in a run of the sample alone, by (site, tensor),
  // and which rows of this run's batch are that sample.
  // Each sample's saved files by (site, tensor), read when the site is
  // probed (never all at once: they hold the whole batch's values).
  std::vector<SampleReference> sample_refs;
};

ProbeState& state() {
  static ProbeState s;
  return s;
}

std::optional<ProbeState>& kept_state() {
  static std::optional<ProbeState> kept;
  return kept;
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
    s.touched.insert(base_tensor_name(t));
  }
  ++s.site;
  s.kernel = kernel;
  s.launched = false;
  s.tensors.clear();
  s.mode = s.plan.mode_for(s.site);
  if (s.mode >= ProbeMode::trace) {
    // "clock": when it began on the driver's clock (steady = CLOCK_MONOTONIC;
    // "t" counts from the runner's start), so a run stopped at the time limit
    // shows how long the launch had run.
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    JsonFields& f = s.fields;
    f.clear();
    f.num("site", int64_t{s.site}).str("kernel", kernel).num("clock", t);
    if (s.static_site != nullptr) {
      // Interposition knows which call site of the wrapper this is (sites in
      // branches that did not run are skipped).
      f.num("static", static_cast<int64_t>(s.static_site - s.hook_sites.data()) + 1);
    }
    s.emit_text(EventKind::site_begin, f);
  }
}

// `failed`: the call returned an error code (a C-shim call whose ATen code
// raised: the model throws at this site).
void finish_launch(ProbeState& s, bool failed = false) {
  s.launched = true;
  if (s.mode >= ProbeMode::sync) {
    if (s.device_key == "cuda") {
      if (auto err = cuda_synchronize_error()) {
        s.emit(EventKind::sync_error, {{"site", s.site}, {"kernel", s.kernel}, {"message", *err}});
        persistent_run_ends(10);  // a persistent run's stand-in exits with it
        std::_Exit(10);           // RunnerExit::model_error; the device context is unusable now
      }
    }
  }
  if (s.mode >= ProbeMode::trace) {
    JsonFields& f = s.fields;
    f.clear();
    f.num("site", int64_t{s.site}).str("kernel", s.kernel).strs("tensors", s.tensors);
    if (failed) {
      f.flag("failed", true);
    }
    s.emit_text(EventKind::site_end, f);
  }
}

// The probe's value against the eager values the buffer may hold: the closest
// candidate (fewest NaN/Inf mismatches, then smallest error for its scale).
nlohmann::json compare_with_reference(const at::Tensor& t, const std::vector<at::Tensor>& candidates) {
  std::optional<std::pair<size_t, ValueDiff>> best;
  std::string unmatched;
  std::vector<std::pair<size_t, ValueDiff>> all;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].numel() != t.numel()) {
      unmatched = fmt::format("{} elements, the graph node {}", t.numel(), candidates[i].numel());
      continue;
    }
    ValueDiff d = diff_values(t, candidates[i]);
    all.emplace_back(i, d);
    auto score = [](const ValueDiff& v) { return std::make_pair(v.nonfinite, v.max_abs / std::max(v.scale, 1e-30)); };
    if (!best || score(d) < score(best->second)) {
      best = {i, d};
    }
  }
  if (!best) {
    return {{"unmatched", unmatched}};
  }
  auto figures = [&](size_t i, const ValueDiff& d) {
    return nlohmann::json{{"candidate", i},
                          {"expected_dtype", dtype_name(candidates[i].scalar_type())},
                          {"max_abs", d.nonfinite > 0 ? nlohmann::json(nullptr) : nlohmann::json(d.max_abs)},
                          {"scale", d.scale},
                          {"nonfinite", d.nonfinite},
                          {"differ", d.differ},
                          {"worst", unravel_index(d.worst_flat, t.sizes())},
                          {"actual", json_number(d.actual)},
                          {"expected", json_number(d.expected)}};
  };
  nlohmann::json out = figures(best->first, best->second);
  // A buffer that holds several graph nodes in turn (written in place): the
  // figures against each, for the driver to take the one it holds here.
  if (all.size() > 1) {
    nlohmann::json each = nlohmann::json::array();
    for (const auto& [i, d] : all) {
      each.push_back(figures(i, d));
    }
    out["candidates"] = std::move(each);
  }
  return out;
}

// Written before: a graph input, a constant, a buffer an extern call
// created or an earlier site touched, under this name or one it was moved from.
bool written_earlier(const ProbeState& s, const std::string& name, bool in_place = false) {
  std::vector<std::string> todo = {name};
  std::set<std::string> seen;
  while (!todo.empty() && seen.size() < 256) {
    std::string n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) {
      continue;
    }
    if (is_graph_input_name(n) || s.touched.count(n) > 0 || s.returned.count(n) > 0 || s.constants.count(n) > 0) {
      return true;
    }
    for (const auto* moves : {&s.moved_from, &s.aliased, in_place ? &s.reused_from : nullptr}) {
      if (moves == nullptr) {
        continue;
      }
      auto [first, last] = moves->equal_range(n);
      for (auto it = first; it != last; ++it) {
        todo.push_back(it->second);
      }
    }
  }
  return false;
}

// A CPU copy with the tensor's own strides (a view's layout survives; a
// plain clone would make a non-dense view contiguous).
at::Tensor saved_copy(const at::Tensor& t) {
  at::Tensor src = t.detach();
  if (!src.is_non_overlapping_and_dense()) {
    try {
      at::Tensor laid = at::empty_strided(src.sizes(), src.strides(), src.options().device(at::kCPU));
      laid.copy_(src);
      return laid;
    } catch (const std::exception&) {
      // overlapping strides (an expanded tensor): a plain copy below
    }
  }
  return src.to(at::kCPU).clone();
}

void save_tensor(ProbeState& s, const at::Tensor& t, const std::string& name, const std::filesystem::path& path) {
  std::vector<char> bytes = torch::jit::pickle_save(saved_copy(t));
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
  s.emit(EventKind::saved, {{"site", s.site}, {"kernel", s.kernel}, {"tensor", name}, {"path", path.string()}});
}

// `in_place`: the argument is a cpp kernel's in_out_ptr, so what a reused
// buffer held under its earlier name is what the kernel reads. Its value
// belongs to another graph node than the name's: not compared before launch.
void probe_tensor(ProbeState& s, const at::Tensor& probed, const std::string& name, bool before,
                  bool in_place = false) {
  std::string base = base_tensor_name(name);
  bool by_name = !before || written_earlier(s, base);
  bool initialized = by_name || (in_place && written_earlier(s, base, true));
  // A oneDNN-layout constant is read through a dense copy (its stats name the
  // layout); one without is said by name, dtype and shape alone ("opaque"),
  // never compared or saved.
  TensorStats stats = s.measured.get(name, probed);
  JsonFields& f = s.fields;
  f.clear();
  f.num("site", int64_t{s.site})
      .str("kernel", s.kernel)
      .str("phase", before ? "before" : "after")
      .str("tensor", name)
      .flag("initialized", initialized)
      .flag("constant", s.constants.count(base) > 0);
  s.stats_text.clear();
  append_json(s.stats_text, stats);
  f.raw("stats", s.stats_text);
  if (before && probed.has_storage()) {
    // Its allocation, so that an address a sanitizer reports can be named
    // as this buffer (classify/sanitizer.hpp describe_address).
    const auto& storage = probed.storage();
    s.stats_text.clear();
    s.stats_text += "{\"address\":\"";
    s.stats_text += fmt::format("{:#x}", reinterpret_cast<uintptr_t>(storage.data()));
    s.stats_text += "\",\"bytes\":";
    s.stats_text += std::to_string(storage.nbytes());
    s.stats_text += '}';
    f.raw("storage", s.stats_text);
  }
  std::string layout;
  std::optional<at::Tensor> readable = stats.opaque ? std::nullopt : readable_copy(probed.detach(), layout);
  const at::Tensor* expected = nullptr;  // the eager value it was compared with
  if (readable && by_name && readable->numel() > 0) {
    if (auto it = s.node_ref.find(name); it != s.node_ref.end()) {
      nlohmann::json compare = compare_with_reference(*readable, it->second);
      size_t candidate = compare.value("candidate", it->second.size());
      expected = candidate < it->second.size() ? &it->second[candidate] : nullptr;
      f.raw("compare", compare.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  if (readable && !before && !s.sample_refs.empty() && readable->numel() > 0) {
    nlohmann::json each = compare_samples(*readable, s.site, name, s.sample_refs);
    if (!each.empty()) {
      f.raw("compare_samples", each.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  s.emit_text(EventKind::probe, f);
  if (readable && s.mode == ProbeMode::save && !s.plan.save_dir.empty() && s.plan.save_after) {
    // The first of two runs whose outputs differ: what the launch wrote
    // (never a constant: the same in every run).
    std::string file = "site" + std::to_string(s.site) + "_" + safe_file_part(name) + ".after.pt";
    if (!before && s.constants.count(base) == 0 && s.saved.insert(file).second) {
      save_tensor(s, *readable, name, s.plan.save_dir / file);
    }
  } else if (readable && s.mode == ProbeMode::save && !s.plan.save_dir.empty() && (before || expected != nullptr)) {
    // The replay (lib/repro) loads the inputs before launch and, for wrong
    // values, the eager value of each output after it.
    std::string file = "site" + std::to_string(s.site) + "_" + safe_file_part(name) + (before ? ".pt" : ".expected.pt");
    if (s.saved.insert(file).second) {  // a tensor passed twice is saved once
      save_tensor(s, before ? *readable : *expected, name, s.plan.save_dir / file);
    }
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

// The name of argument `arg` at the current hooked site (of its tensor at
// `element` for a list argument).
std::string hook_arg_name(const ProbeState& s, int arg, int element = -1) {
  const size_t a = static_cast<size_t>(arg);
  if (element >= 0) {
    const size_t e = static_cast<size_t>(element);
    if (s.static_site && arg >= 0 && a < s.static_site->elements.size() && e < s.static_site->elements[a].size() &&
        !s.static_site->elements[a][e].empty()) {
      return s.static_site->elements[a][e];
    }
    return fmt::format("{}.arg{}[{}]", s.kernel, arg, element);
  }
  if (s.static_site && arg >= 0 && a < s.static_site->args.size() && !s.static_site->args[a].empty()) {
    return s.static_site->args[a];
  }
  return fmt::format("{}.arg{}", s.kernel, arg);
}

// The handle a kernel's raw pointer argument came from: one the wrapper took
// it from for this call (data_ptr() right before the call), else any live
// handle with that data pointer, else the live handle whose storage holds it.
void* handle_of(const ProbeState& s, const void* pointer) {
  for (auto it = s.current.rbegin(); it != s.current.rend(); ++it) {
    if (it->second == pointer) {
      return it->first;
    }
  }
  auto p = reinterpret_cast<uintptr_t>(pointer);
  auto it = s.by_pointer.upper_bound(p);
  if (it == s.by_pointer.begin()) {
    return nullptr;
  }
  --it;
  const at::Tensor* t = torch::aot_inductor::tensor_handle_to_tensor_pointer(static_cast<AtenTensorHandle>(it->second));
  if (t == nullptr || !t->defined()) {
    return nullptr;
  }
  if (it->first == p) {
    return it->second;
  }
  auto end = it->first + static_cast<uintptr_t>(t->numel()) * t->element_size();
  return p < end ? it->second : nullptr;
}

// The wrapper's call site this call is: the next one from the cursor with
// this kernel and, when a probe names one, this tensor among its arguments
// (a torch.cond branch's tensors carry its subgraph's prefix, so a kernel
// that appears in both branches is told apart). Sites inside branches that
// did not run are skipped.
void match_static(ProbeState& s, const std::string& kernel, const std::string& tensor) {
  s.static_site = nullptr;
  auto fits = [&](const ModelFacts::Site& site, bool by_tensor) {
    return site.kernel == kernel &&
           (!by_tensor || std::find(site.args.begin(), site.args.end(), tensor) != site.args.end());
  };
  for (int by_tensor = tensor.empty() ? 0 : 1; by_tensor >= 0 && !s.static_site; --by_tensor) {
    for (size_t pass = 0; pass < 2 && !s.static_site; ++pass) {
      for (size_t i = pass == 0 ? s.cursor : 0; i < s.hook_sites.size(); ++i) {
        if (fits(s.hook_sites[i], by_tensor == 1)) {
          s.static_site = &s.hook_sites[i];
          s.cursor = i + 1;
          break;
        }
      }
    }
  }
}

}  // namespace

void set_hook_names(std::vector<ModelFacts::Site> sites, std::vector<std::string> constants) {
  ProbeState& s = state();
  s.hook_sites = std::move(sites);
  s.constants = std::set<std::string>(constants.begin(), constants.end());
}

void set_buffer_moves(const std::vector<std::pair<std::string, std::string>>& moves,
                      const std::vector<std::string>& constants,
                      const std::vector<std::pair<std::string, std::string>>& reuse,
                      const std::vector<std::pair<std::string, std::string>>& aliases) {
  ProbeState& s = state();
  s.moved_from.clear();
  for (const auto& [to, from] : moves) {
    if (to != from) {
      s.moved_from.emplace(to, from);
    }
  }
  s.constants.insert(constants.begin(), constants.end());
  s.reused_from.clear();
  for (const auto& [to, from] : reuse) {
    if (to != from) {
      s.reused_from.emplace(to, from);
    }
  }
  s.aliased.clear();
  for (const auto& [view, base] : aliases) {
    if (view != base) {
      s.aliased.emplace(view, base);
      s.aliased.emplace(base, view);
    }
  }
}

int hook_enter(const char* kernel) {
  ProbeState& s = state();
  s.current = std::move(s.pending);
  s.pending.clear();
  ++s.calls;
  if (!s.installed || kernel == nullptr) {
    return 0;
  }
  std::string k(kernel);
  match_static(s, k, "");
  begin_site(s, k);
  return static_cast<int>(s.mode);
}

void hook_tensor(void* handle, int arg, bool after, int element) {
  ProbeState& s = state();
  if (!s.installed || s.site == 0) {
    return;
  }
  std::string name = hook_arg_name(s, arg, element);
  if (!after) {
    s.tensors.push_back(name);
  }
  if (s.mode < ProbeMode::stats || handle == nullptr) {
    return;
  }
  const at::Tensor* t = torch::aot_inductor::tensor_handle_to_tensor_pointer(static_cast<AtenTensorHandle>(handle));
  if (t != nullptr && t->defined()) {
    bool in_place = s.static_site != nullptr && std::find(s.static_site->in_out.begin(), s.static_site->in_out.end(),
                                                          arg) != s.static_site->in_out.end();
    probe_tensor(s, *t, name, !after, in_place);
  }
}

void hook_pointer(const void* pointer, int arg, bool after) {
  ProbeState& s = state();
  if (!s.installed || s.site == 0) {
    return;
  }
  void* handle = handle_of(s, pointer);
  if (handle != nullptr) {
    hook_tensor(handle, arg, after);
  } else if (!after) {
    s.tensors.push_back(hook_arg_name(s, arg));
  }
}

void hook_launched(bool failed) {
  // The shim's error code reaches the model, which raises: the site says so.
  ProbeState& s = state();
  if (s.installed && s.site > 0 && !s.launched) {
    finish_launch(s, failed);
  }
}

void hook_data_ptr(void* handle, void* pointer) {
  ProbeState& s = state();
  s.pending.emplace_back(handle, pointer);
  s.by_pointer[reinterpret_cast<uintptr_t>(pointer)] = handle;
  s.pointer_of[handle] = reinterpret_cast<uintptr_t>(pointer);
}

void hook_forget(void* handle) {
  ProbeState& s = state();
  auto drop = [handle](std::vector<std::pair<void*, void*>>& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [handle](const auto& p) { return p.first == handle; }), v.end());
  };
  drop(s.pending);
  drop(s.current);
  if (auto it = s.pointer_of.find(handle); it != s.pointer_of.end()) {
    if (auto b = s.by_pointer.find(it->second); b != s.by_pointer.end() && b->second == handle) {
      s.by_pointer.erase(b);
    }
    s.pointer_of.erase(it);
  }
}

void install_probes(const ProbePlan& plan, EmitFn emit, EmitTextFn emit_text, const std::string& device_key,
                    std::set<std::string> returned) {
  ProbeState& s = state();
  s.returned = std::move(returned);
  s.plan = plan;
  s.emit = std::move(emit);
  s.emit_text = std::move(emit_text);
  s.device_key = device_key;
  s.installed = true;
}

void load_node_reference(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && bytes.empty()) {
    throw Error(ErrorKind::cannot_test, "cannot read the per-node reference '" + path.string() + "'");
  }
  auto& ref = state().node_ref;
  if (bytes.find_first_not_of(" \t\r\n") != std::string::npos && bytes[bytes.find_first_not_of(" \t\r\n")] == '{') {
    // {"buf6": "site2_buf6.after.pt", ...}: one tensor per file, saved by an
    // earlier run (save_after), for outputs that differ between runs.
    nlohmann::json files = nlohmann::json::parse(bytes, nullptr, false);
    if (!files.is_object()) {
      throw Error(ErrorKind::cannot_test, "the per-node reference '" + path.string() + "' is not a JSON object");
    }
    if (files.contains("samples") && files.contains("rows")) {
      state().sample_refs = read_sample_references(files, path.string());
      return;
    }
    for (const auto& [name, file] : files.items()) {
      try {
        ref[name] = {load_saved_tensor(file.is_string() ? file.get<std::string>() : std::string())};
      } catch (const std::exception&) {
        throw Error(ErrorKind::cannot_test,
                    "cannot read the saved value of " + name + " named by '" + path.string() + "'");
      }
    }
    return;
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

ProbeCounts probe_counts() {
  return {state().calls, state().site};
}

void keep_probe_state() {
  kept_state() = state();
}

void restore_probe_state() {
  if (kept_state()) {
    state() = *kept_state();
  }
}

void on_probe_call(void* handle, const char* tensor_name, const char* phase, const char* kernel) {
  ProbeState& s = state();
  ++s.calls;
  if (!s.installed || handle == nullptr || phase == nullptr || kernel == nullptr) {
    return;
  }
  std::string k(kernel);
  std::string name = plain_name(tensor_name ? tensor_name : "");
  bool before = std::string_view(phase).find("before") != std::string_view::npos;
  if ((before && (s.site == 0 || s.launched || k != s.kernel)) || (!before && s.site == 0)) {
    match_static(s, k, name);
    begin_site(s, k);  // (after launch only: a site probed only after its launch)
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
