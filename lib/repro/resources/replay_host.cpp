// The one-kernel replay's host (aoti-bisect): the definitions behind
// replay_host.h, compiled once per torch and compiler and linked with each
// generated driver.cpp. Loads the saved tensors, judges the symptom after
// the call, and prints what a kernel built with its intermediates probed saw.
#include "replay_host.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cpu/Utils.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/csrc/jit/serialization/pickle.h>

using namespace torch::aot_inductor;

// Defined by a kernel built with its intermediates probed (the probe
// header, intermediate_probes.h); absent from a plain build. `resolve`
// names the argument an element address falls in.
extern "C" void aoti_trace_report(int (*resolve)(const void* address, int element_size, char* out, int capacity))
    __attribute__((weak));

namespace replay {

struct Arg {
  std::string name;
  at::Tensor t;
  int role = in;
  bool initialized = true;
  int64_t bad_before = 0;
  int64_t nan_before = 0;
  int64_t inf_before = 0;
};

std::string g_kernel;
std::string g_predicate;
std::vector<Arg> g_args;

[[noreturn]] void cannot(const std::string& why) {
  std::cout << g_kernel << ": cannot run: " << why << std::endl;
  std::_Exit(2);
}

at::Tensor load_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && bytes.empty()) {
    cannot("cannot read " + file);
  }
  try {
    c10::IValue v = torch::jit::pickle_load(bytes);
    if (!v.isTensor()) {
      cannot(file + " does not hold a tensor");
    }
    return v.toTensor();
  } catch (const std::exception& e) {
    std::string m = e.what();
    cannot(file + " cannot be loaded: " + m.substr(0, m.find('\n')));
  }
}

Arg& find(const std::string& name) {
  for (auto& a : g_args) {
    if (a.name == name) {
      return a;
    }
  }
  cannot("no tensor " + name);
}

RAIIAtenTensorHandle add(const std::string& name, at::Tensor t, int role, bool initialized) {
  g_args.push_back({name, t, role, initialized, 0});
  return RAIIAtenTensorHandle(new_tensor_handle(at::Tensor(t)));
}

RAIIAtenTensorHandle load(const std::string& name, const std::string& file, int role, bool initialized) {
  return add(name, load_file(file), role, initialized);
}

c10::ScalarType dtype_of(const std::string& name) {
  static const std::pair<const char*, c10::ScalarType> table[] = {
      {"float32", at::kFloat}, {"float64", at::kDouble}, {"float16", at::kHalf}, {"bfloat16", at::kBFloat16},
      {"int64", at::kLong},    {"int32", at::kInt},      {"int16", at::kShort},  {"int8", at::kChar},
      {"uint8", at::kByte},    {"bool", at::kBool}};
  for (const auto& [n, t] : table) {
    if (name == n) {
      return t;
    }
  }
  cannot("unknown dtype " + name);
}

RAIIAtenTensorHandle alloc(const std::string& name, std::vector<int64_t> shape, const std::string& dtype, int role) {
  return add(name, at::zeros(shape, at::TensorOptions().dtype(dtype_of(dtype))), role, false);
}

RAIIAtenTensorHandle view(const std::string& name, const std::string& file, int64_t ndim, const int64_t* sizes,
                          const int64_t* strides) {
  at::Tensor t = load_file(file);
  std::vector<int64_t> sz(sizes, sizes + ndim), st(strides, strides + ndim);
  if (t.sizes().vec() != sz) {
    cannot(file + ": the saved view's sizes are not the wrapper's");
  }
  if (t.strides().vec() != st) {
    bool expanded = false;
    at::Tensor compact = t;
    for (int64_t d = 0; d < ndim; ++d) {
      if (st[d] == 0 && sz[d] > 1) {
        compact = compact.narrow(d, 0, 1);  // an expanded view: its values repeat along d
        expanded = true;
      }
    }
    if (expanded) {
      t = compact.contiguous().expand(sz);
    } else {
      at::Tensor laid = at::empty_strided(sz, st, t.options());
      laid.copy_(t);
      t = laid;
    }
  }
  return add(name, t, in, true);
}

int64_t count_nan(const at::Tensor& t) {
  return t.is_floating_point() ? at::isnan(t).sum().item<int64_t>() : 0;
}
int64_t count_inf(const at::Tensor& t) {
  return t.is_floating_point() ? at::isinf(t).sum().item<int64_t>() : 0;
}

// Outputs nobody wrote yet are zeroed, so that any NaN/Inf in them
// afterwards comes from the call.
void before() {
  // Zeroed first, then counted: a view written by the call shares its
  // buffer's memory, and what it held before is no input.
  for (auto& a : g_args) {
    if (a.role == out || !a.initialized) {
      a.t.zero_();
    }
  }
  for (auto& a : g_args) {
    if (a.role != out && a.initialized) {
      a.nan_before = count_nan(a.t);
      a.inf_before = count_inf(a.t);
      a.bad_before = a.nan_before + a.inf_before;
    }
  }
}

char g_signal_text[8][160];
int g_fault_exit = 2;

void on_signal(int sig) {
  int slot = sig == SIGSEGV ? 0 : sig == SIGBUS ? 1 : sig == SIGILL ? 2 : sig == SIGFPE ? 3 : 4;
  ssize_t ignored = write(STDOUT_FILENO, g_signal_text[slot], strlen(g_signal_text[slot]));
  (void)ignored;
  _exit(g_fault_exit);
}

void arm() {
  const char* names[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"};
  bool fault = g_predicate == "fault";
  g_fault_exit = fault ? 1 : 2;
  for (int i = 0; i < 5; ++i) {
    snprintf(g_signal_text[i], sizeof g_signal_text[i], "%s: died by %s inside the call: %s\n", g_kernel.c_str(),
             names[i], fault ? "reproduces" : "a fault, not the recorded symptom: cannot tell");
  }
  static std::vector<char> stack(1 << 16);
  stack_t ss{};
  ss.ss_sp = stack.data();
  ss.ss_size = stack.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    sigaction(sig, &sa, nullptr);
  }
}

void disarm() {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    signal(sig, SIG_DFL);
  }
}

void adopt(const std::string& name, AtenTensorHandle h, int role) {
  g_args.push_back({name, *tensor_handle_to_tensor_pointer(h), role, role != out, 0});
}

void created(const std::string& name, AtenTensorHandle h) {
  if (h == nullptr) {
    cannot("the call created no tensor for " + name);
  }
  g_args.push_back({name, *tensor_handle_to_tensor_pointer(h), out, false, 0});
}

std::string counts(int64_t nan, int64_t inf) {
  std::ostringstream s;
  if (nan > 0) {
    s << nan << " NaN";
  }
  if (inf > 0) {
    s << (nan > 0 ? " and " : "") << inf << " Inf";
  }
  return s.str();
}

int judge_fault() {
  std::cout << g_kernel << ": returned normally, no fault: does not reproduce" << std::endl;
  return 0;
}

// Made here, as the search counts it: NaN from inputs that hold no NaN
// (Inf among them, as a softmax of a fully masked row), or Inf from inputs
// that hold neither.
int judge_nonfinite() {
  std::string nan_input, inf_input;
  for (const auto& a : g_args) {
    if ((a.role & in) && a.initialized && a.nan_before > 0 && nan_input.empty()) {
      nan_input = a.name + " already holds " + std::to_string(a.nan_before) + " NaN";
    }
    if ((a.role & in) && a.initialized && a.inf_before > 0 && inf_input.empty()) {
      inf_input = a.name + " holds " + std::to_string(a.inf_before) + " Inf";
    }
  }
  std::string inherited;  // the first output whose new NaN/Inf its inputs already held
  for (const auto& a : g_args) {
    if (!(a.role & out)) {
      continue;
    }
    int64_t nan = count_nan(a.t), inf = count_inf(a.t);
    bool new_nan = nan > a.nan_before, new_inf = inf > a.inf_before;
    if (!new_nan && !new_inf) {
      continue;
    }
    if (new_nan && nan_input.empty()) {
      std::cout << g_kernel << ": " << a.name << " has " << counts(nan, inf) << " after the call, "
                << (inf_input.empty() ? "inputs finite" : "inputs hold no NaN (" + inf_input + ")") << ": reproduces"
                << std::endl;
      return 1;
    }
    if (new_inf && nan_input.empty() && inf_input.empty()) {
      std::cout << g_kernel << ": " << a.name << " has " << counts(nan, inf)
                << " after the call, inputs finite: reproduces" << std::endl;
      return 1;
    }
    if (inherited.empty()) {
      inherited = a.name + " has " + counts(nan, inf) + " after the call";
    }
  }
  if (!inherited.empty()) {
    std::cout << g_kernel << ": " << inherited << ", but input " << (nan_input.empty() ? inf_input : nan_input)
              << ": not introduced here, does not reproduce" << std::endl;
    return 0;
  }
  std::string bad_input = nan_input.empty() ? inf_input : nan_input;
  std::cout << g_kernel << ": no new NaN/Inf after the call"
            << (bad_input.empty() ? ", inputs finite" : " (" + bad_input + ")") << ": does not reproduce" << std::endl;
  return 0;
}

// Within tolerance: NaN/Inf where eager has them, and every other element
// within atol + rtol * scale (scale: the largest finite |eager value|).
int judge_mismatch(const std::string& name, const std::string& expected_file, double atol, double rtol) {
  at::Tensor a = find(name).t.detach().reshape(-1).to(at::kDouble);
  at::Tensor e = load_file(expected_file).detach().reshape(-1).to(at::kDouble);
  if (a.numel() != e.numel()) {
    cannot(name + " has " + std::to_string(a.numel()) + " elements, its eager value " + std::to_string(e.numel()));
  }
  at::Tensor both = at::isfinite(a) & at::isfinite(e);
  at::Tensor nonfinite_diff = (~both) & ~((at::isnan(a) & at::isnan(e)) | (at::isinf(a) & (a == e)));
  int64_t nonfinite = nonfinite_diff.sum().item<int64_t>();
  at::Tensor ef = at::where(at::isfinite(e), e.abs(), at::zeros_like(e));
  double scale = e.numel() ? ef.max().item<double>() : 0.0;
  at::Tensor err = at::where(both, (a - e).abs(), at::zeros_like(a));
  double max_abs = a.numel() ? err.max().item<double>() : 0.0;
  double allowed = atol + rtol * scale;
  std::ostringstream s;
  s << g_kernel << ": " << name << " against the saved eager value: max abs error " << max_abs;
  if (nonfinite > 0) {
    s << ", " << nonfinite << " NaN/Inf not where eager has them";
  }
  s << " (allowed " << allowed << " = atol " << atol << " + rtol " << rtol << " x scale " << scale << ")";
  bool diverges = nonfinite > 0 || max_abs > allowed;
  std::cout << s.str() << (diverges ? ": beyond tolerance, reproduces" : ": within tolerance, does not reproduce")
            << std::endl;
  return diverges ? 1 : 0;
}

// The argument whose memory holds `address`, and the element's index in it:
// {"tensor": "buf7", "index": [3, 12]} into `out`; 0 when none holds it.
int resolve_address(const void* address, int element_size, char* out, int capacity) {
  auto at = reinterpret_cast<uintptr_t>(address);
  for (const auto& a : g_args) {
    const at::Tensor& t = a.t;
    if (!t.defined() || t.numel() == 0 || static_cast<int>(t.element_size()) != element_size) {
      continue;
    }
    auto base = reinterpret_cast<uintptr_t>(t.data_ptr());
    int64_t span = 1;
    for (int64_t d = 0; d < t.dim(); ++d) {
      span += (t.size(d) - 1) * t.stride(d);
    }
    if (at < base || at >= base + static_cast<uintptr_t>(span) * element_size || (at - base) % element_size != 0) {
      continue;
    }
    // The index whose offset is this one, dimensions taken by falling stride
    // (any dense layout: contiguous, channels_last, a transpose).
    int64_t offset = static_cast<int64_t>((at - base) / element_size), left = offset;
    std::vector<int64_t> dims(t.dim()), index(t.dim(), 0);
    for (int64_t d = 0; d < t.dim(); ++d) {
      dims[d] = d;
    }
    std::stable_sort(dims.begin(), dims.end(), [&](int64_t x, int64_t y) { return t.stride(x) > t.stride(y); });
    for (int64_t d : dims) {
      if (t.stride(d) > 0 && t.size(d) > 1) {
        index[d] = std::min(left / t.stride(d), t.size(d) - 1);
        left -= index[d] * t.stride(d);
      }
    }
    std::ostringstream s;
    s << "{\"tensor\": \"" << a.name << "\", \"index\": [";
    for (size_t d = 0; d < index.size(); ++d) {
      s << (d ? ", " : "") << index[d];
    }
    s << "]" << (left != 0 ? ", \"offset\": " + std::to_string(offset) : std::string()) << "}";
    std::string text = s.str();
    if (static_cast<int>(text.size()) >= capacity) {
      return 0;
    }
    memcpy(out, text.c_str(), text.size() + 1);
    return static_cast<int>(text.size());
  }
  return 0;
}

void report_intermediates() {
  if (aoti_trace_report != nullptr) {
    std::cout << std::flush;
    aoti_trace_report(resolve_address);
  }
}

// Anything the driver raises outside the call: it cannot run.
int guarded(int (*body)()) {
  at::cpu::init_amx();  // as torch's import does: an AMX micro-kernel needs the permission
  try {
    return body();
  } catch (const std::exception& e) {
    std::string m = e.what();
    cannot(m.substr(0, m.find('\n')));
  }
}

}  // namespace replay
