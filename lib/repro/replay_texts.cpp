// The fixed parts of the replay folder: the driver's helpers (C++ compiled
// by the replay script against the LibTorch it finds) and the script itself.
// Placeholders @NAME@ are filled in by replay.cpp.
#include "repro/replay_texts.hpp"

namespace aoti_bisect {

std::string_view replay_driver_prelude() {
  static constexpr std::string_view text = R"aoti_cpp(
#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_include/cpu.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

using namespace torch::aot_inductor;

namespace replay {

enum Role { in = 1, out = 2, in_out = 3 };

struct Arg {
  std::string name;
  at::Tensor t;
  int role = in;
  bool initialized = true;
  int64_t bad_before = 0;
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
      {"int64", at::kLong},    {"int32", at::kInt},      {"int16", at::kShort}, {"int8", at::kChar},
      {"uint8", at::kByte},    {"bool", at::kBool}};
  for (const auto& [n, t] : table) {
    if (name == n) {
      return t;
    }
  }
  cannot("unknown dtype " + name);
}

// A buffer the call writes that was not saved: allocated, zeroed.
RAIIAtenTensorHandle alloc(const std::string& name, std::vector<int64_t> shape, const std::string& dtype, int role) {
  return add(name, at::zeros(shape, at::TensorOptions().dtype(dtype_of(dtype))), role, false);
}

// A saved view, laid out as the wrapper's view (sizes and strides).
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

// Before the call: what the inputs hold; outputs nobody wrote yet zeroed,
// so that any NaN/Inf in them afterwards comes from the call.
void before() {
  for (auto& a : g_args) {
    if (a.role == out || !a.initialized) {
      a.t.zero_();
    } else {
      a.bad_before = count_nan(a.t) + count_inf(a.t);
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

// Faults inside the call are the symptom of a fault culprit (exit 1), and
// a different failure for any other (exit 2).
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

int judge_nonfinite() {
  std::string bad_input;
  for (const auto& a : g_args) {
    if ((a.role & in) && a.initialized && a.bad_before > 0 && bad_input.empty()) {
      bad_input = a.name + " already holds " + std::to_string(a.bad_before) + " NaN/Inf";
    }
  }
  for (const auto& a : g_args) {
    if (!(a.role & out)) {
      continue;
    }
    int64_t nan = count_nan(a.t), inf = count_inf(a.t);
    if (nan + inf > a.bad_before) {
      if (!bad_input.empty()) {
        std::cout << g_kernel << ": " << a.name << " has " << counts(nan, inf) << " after the call, but input "
                  << bad_input << ": not introduced here, does not reproduce" << std::endl;
        return 0;
      }
      std::cout << g_kernel << ": " << a.name << " has " << counts(nan, inf)
                << " after the call, inputs finite: reproduces" << std::endl;
      return 1;
    }
  }
  std::cout << g_kernel << ": no new NaN/Inf after the call"
            << (bad_input.empty() ? ", inputs finite" : " (" + bad_input + ")") << ": does not reproduce"
            << std::endl;
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

// Anything the driver raises outside the call: it cannot run.
int guarded(int (*body)()) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::string m = e.what();
    cannot(m.substr(0, m.find('\n')));
  }
}

}  // namespace replay
)aoti_cpp";
  return text;
}

std::string_view replay_script_template() {
  static constexpr std::string_view text = R"aoti_sh(#!/usr/bin/env bash
# One-kernel replay of @WHAT@, generated by aoti-bisect.
# Rebuilds only that call on this machine and runs it on the tensors saved beside this script.
# Exit 1: the symptom reproduces; 0: it does not; 2: the replay cannot run. CXX, PYTHON, TORCH_DIR (with TORCH_CXX11_ABI) override.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here" || exit 2
fail() { echo "replay: cannot run: $*"; exit 2; }
problem=@PROBLEM@
[ -z "$problem" ] || fail "$problem"
CXX="${CXX:-c++}"
command -v "$CXX" >/dev/null 2>&1 || fail "no C++ compiler ('$CXX') on PATH; set CXX"
PYTHON="${PYTHON:-python3}"
torch_dir="${TORCH_DIR:-}"
abi=""
if [ -z "$torch_dir" ]; then
  command -v "$PYTHON" >/dev/null 2>&1 || fail "no $PYTHON on PATH to find torch; set PYTHON or TORCH_DIR"
  found="$("$PYTHON" -c 'import torch, os; print(int(torch._C._GLIBCXX_USE_CXX11_ABI), os.path.dirname(torch.__file__))' 2>/dev/null)"
  abi="${found%% *}"
  torch_dir="${found#* }"
fi
[ -n "$torch_dir" ] && [ -d "$torch_dir/include" ] && [ -d "$torch_dir/lib" ] ||
  fail "torch (its C++ headers and libraries) not found; install torch for $PYTHON or set TORCH_DIR"
abi="${abi:-${TORCH_CXX11_ABI:-1}}"
for f in @FILES@; do
  [ -f "$f" ] || fail "missing $f (this folder must hold every file the replay names)"
done
kernel_flags=(@KERNEL_FLAGS@)
inc=(-I"$torch_dir/include" -I"$torch_dir/include/torch/csrc/api/include" -D_GLIBCXX_USE_CXX11_ABI="$abi")
key="$(cat @SOURCES@ | cksum | cut -d' ' -f1)-$(echo "$torch_dir $CXX ${kernel_flags[*]}" | cksum | cut -d' ' -f1)"
build="${TMPDIR:-/tmp}/aoti-bisect-replay-$(id -u)-$key"
if [ ! -x "$build/replay-driver" ]; then
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/aoti-bisect-replay.XXXXXX")" || fail "cannot make a build folder"
  trap 'rm -rf "$tmp"' EXIT
  echo "replay: building @WHAT_SHORT@ (once; cached by content)" >&2
  compile() {  # source, output, flags...
    local src="$1" obj="$2"; shift 2
    if ! "$CXX" "$@" "${inc[@]}" -w -c "$src" -o "$tmp/$obj" >"$tmp/$obj.log" 2>&1; then
      fail "$src does not compile with $CXX: $(grep -m1 -E 'error|Error' "$tmp/$obj.log" | cut -c1-300)"
    fi
  }
  objs=()
@COMPILE_KERNEL@
  compile driver.cpp driver.o @DRIVER_STD@ -O1
  objs+=("$tmp/driver.o")
  "$CXX" "${objs[@]}" -o "$tmp/replay-driver" @LINK_OPENMP@ -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" \
    -ltorch -ltorch_cpu -lc10 >"$tmp/link.log" 2>&1 ||
    fail "the driver does not link: $(grep -m1 -E 'error|undefined' "$tmp/link.log" | cut -c1-300)"
  mkdir -p "$build.new.$$" && mv "$tmp/replay-driver" "$build.new.$$/" && { mv -T "$build.new.$$" "$build" 2>/dev/null || rm -rf "$build.new.$$"; }
fi
# A custom operator's library built as a Python extension module needs
# Python's own library loaded first (the driver loads it where named).
if [ -z "${AOTI_BISECT_LIBPYTHON:-}" ] && command -v "$PYTHON" >/dev/null 2>&1; then
  AOTI_BISECT_LIBPYTHON="$("$PYTHON" -c 'import os, sysconfig; d, n = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY") or ""; print(os.path.join(d, n) if d and ".so" in n else "")' 2>/dev/null)"
  export AOTI_BISECT_LIBPYTHON
fi
"$build/replay-driver"
rc=$?
case "$rc" in
  0|1|2) exit "$rc" ;;
esac
if [ "$rc" -gt 128 ]; then
  echo "replay: cannot tell: the driver died by signal $((rc - 128)) outside the call"
else
  echo "replay: cannot tell: the driver exited $rc"
fi
exit 2
)aoti_sh";
  return text;
}

}  // namespace aoti_bisect
