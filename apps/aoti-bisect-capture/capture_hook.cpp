// libaoti-bisect-capture.so: preloaded by `aoti-bisect capture` into the
// user's program (LD_PRELOAD), it sees every call of every AOTI package the
// program loads, from Python (torch._inductor.aoti_load_package) or a C++
// host (AOTIModelPackageLoader): LibTorch finds a model's entry points with
// dlsym, and this library's dlsym hands back a wrapper of
// AOTInductorModelContainerRun (and its single-threaded twin) that counts
// the call, writes its inputs to disk before the call runs (so a death
// inside it leaves them behind) and reads its outputs after.
//
// Nothing here includes LibTorch: tensors are read through AOTInductor's C
// shim (aoti_torch_get_sizes, ...), found in the process with dlsym, so the
// library works with whatever torch the program runs. It writes, under
// $AOTI_BISECT_CAPTURE_DIR/<pid>/:
//   events.jsonl   one line per package opened, call begun and call ended
//   call-N.bin     call N's input tensors' bytes (each tensor's span, as laid out)
//   call-N.json    their dtypes, sizes, strides and offsets in call-N.bin
//                  (written after the .bin: a .json means both are whole)
// Settings (environment): AOTI_BISECT_CAPTURE_KEEP (calls kept before the
// first bad one), _MAX_BYTES (bytes of kept inputs), _CALL (keep only that
// call), _EVERY (keep every call), _PACKAGE (calls of that package only),
// _RESERVE (bytes left free on the disk: a call whose inputs would take the
// disk below it is not kept, so that capture.json and the inputs files still
// fit once the program ends).

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensors.hpp"

namespace {

using namespace aoti_capture;
using RunFn = int32_t (*)(void*, AtenTensorHandle*, size_t, AtenTensorHandle*, size_t, void*, void*);

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string ints(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? "," : "") + std::to_string(v[i]);
  }
  return out + "]";
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

struct Settings {
  std::string root;  // $AOTI_BISECT_CAPTURE_DIR
  long keep = 8;
  long long max_bytes = 1LL << 30;
  long only_call = 0;
  long long reserve = 16LL << 20;
  bool every = false;
  std::string package;
  bool active = false;
};

const Settings& settings() {
  static Settings s = [] {
    Settings r;
    const char* dir = std::getenv("AOTI_BISECT_CAPTURE_DIR");
    if (dir == nullptr || *dir == '\0') {
      return r;
    }
    r.root = dir;
    ::mkdir(dir, 0755);
    auto num = [](const char* name, long long fallback) {
      const char* v = std::getenv(name);
      return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
    };
    r.keep = static_cast<long>(num("AOTI_BISECT_CAPTURE_KEEP", 8));
    r.max_bytes = num("AOTI_BISECT_CAPTURE_MAX_BYTES", 1LL << 30);
    r.only_call = static_cast<long>(num("AOTI_BISECT_CAPTURE_CALL", 0));
    r.every = num("AOTI_BISECT_CAPTURE_EVERY", 0) != 0;
    r.reserve = num("AOTI_BISECT_CAPTURE_RESERVE", 16LL << 20);
    if (const char* p = std::getenv("AOTI_BISECT_CAPTURE_PACKAGE")) {
      r.package = p;
    }
    r.active = true;
    return r;
  }();
  return s;
}

// This process's folder: a forked child writes its own (pthread_atfork below).
std::string pid_dir() {
  static pid_t made_for = 0;
  static std::string dir;
  pid_t pid = ::getpid();
  if (pid != made_for) {
    dir = settings().root + "/" + std::to_string(pid);
    ::mkdir(dir.c_str(), 0755);
    made_for = pid;
  }
  return dir;
}

std::mutex g_mu;  // one call recorded at a time (the model's own run may run calls concurrently)
long g_calls = 0;
bool g_bad_seen = false;
long long g_kept_bytes = 0;
std::deque<std::pair<long, long long>> g_kept;  // (call, bytes), oldest first
std::set<std::string> g_opened;

void event(const std::string& line) {
  int fd = ::open((pid_dir() + "/events.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return;
  }
  std::string l = line + "\n";
  write_all(fd, l.data(), l.size());
  ::close(fd);
}

void forget(long call) {
  for (const char* ext : {".json", ".bin"}) {
    std::string p = pid_dir() + "/call-" + std::to_string(call) + ext;
    ::unlink(p.c_str());
  }
}

// Writes call N's inputs; "" when kept, else why not.
std::string keep_inputs(long call, const std::vector<Tensor>& inputs) {
  const Settings& s = settings();
  long long bytes = 0;
  for (const auto& t : inputs) {
    if (!readable(t) && t.last >= t.first) {
      return "an input on device type " + std::to_string(t.device) + " could not be read: " + t.copy_error;
    }
    if (t.dtype == nullptr) {
      return "an input's dtype (code " + std::to_string(t.dtype_code) + ") is not one capture keeps";
    }
    bytes += (t.last - t.first + 1) * t.dtype->size;
  }
  if (bytes > s.max_bytes) {
    return "its inputs hold " + std::to_string(bytes) + " bytes, over --max-bytes " + std::to_string(s.max_bytes);
  }
  // Room within the bounds: the oldest kept calls go first (never the first bad one's history: no call is
  // kept after it).
  while (!g_kept.empty() && (g_kept_bytes + bytes > s.max_bytes ||
                             (!s.every && s.only_call == 0 && static_cast<long>(g_kept.size()) > s.keep))) {
    forget(g_kept.front().first);
    g_kept_bytes -= g_kept.front().second;
    g_kept.pop_front();
  }
  struct statvfs disk {};
  if (::statvfs(s.root.c_str(), &disk) == 0) {
    const long long free_bytes = static_cast<long long>(disk.f_bavail) * static_cast<long long>(disk.f_frsize);
    if (free_bytes < bytes + s.reserve) {
      return "the disk holding the capture folder has " + std::to_string(free_bytes) + " bytes free, under its " +
             std::to_string(bytes) + " bytes + the " + std::to_string(s.reserve) +
             " bytes capture leaves free for its report";
    }
  }
  std::string base = pid_dir() + "/call-" + std::to_string(call);
  int fd = ::open((base + ".bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return "cannot write " + base + ".bin: " + std::strerror(errno);
  }
  std::string meta = "{\"call\":" + std::to_string(call) + ",\"inputs\":[";
  long long offset = 0;
  bool ok = true;
  for (size_t i = 0; i < inputs.size() && ok; ++i) {
    const Tensor& t = inputs[i];
    long long n = (t.last - t.first + 1) * t.dtype->size;
    ok = n <= 0 || write_all(fd, t.data + t.first * t.dtype->size, static_cast<size_t>(n));
    meta += std::string(i ? "," : "") + "{\"dtype\":" + json_str(t.dtype->name) + ",\"sizes\":" + ints(t.sizes) +
            ",\"strides\":" + ints(t.strides) + ",\"offset\":" + std::to_string(offset) +
            ",\"first\":" + std::to_string(-t.first) + ",\"bytes\":" + std::to_string(n) + "}";
    offset += n;
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    forget(call);
    return "writing its inputs failed: " + std::string(std::strerror(errno));
  }
  meta += "]}";
  std::string tmp = base + ".json.tmp";
  fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || !write_all(fd, meta.data(), meta.size()) || ::close(fd) != 0 ||
      ::rename(tmp.c_str(), (base + ".json").c_str()) != 0) {
    forget(call);
    return "writing its inputs failed: " + std::string(std::strerror(errno));
  }
  g_kept.emplace_back(call, bytes);
  g_kept_bytes += bytes;
  return "";
}

struct Slot {
  void* handle = nullptr;
  RunFn run = nullptr;
  RunFn run_single = nullptr;
};
constexpr int k_slots = 64;
std::array<Slot, k_slots> g_slots;

int32_t run_call(RunFn real, void* container, AtenTensorHandle* in, size_t n_in, AtenTensorHandle* out,
                 size_t n_out, void* stream, void* proxy) {
  const Settings& s = settings();
  if (!s.active || real == nullptr) {
    return real(container, in, n_in, out, n_out, stream, proxy);
  }
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(real), &info);
  std::string so = info.dli_fname != nullptr ? info.dli_fname : "";
  if (!s.package.empty() && so.find("/" + s.package + "/") == std::string::npos) {
    {
      std::lock_guard<std::mutex> other(g_mu);
      event("{\"event\":\"other\",\"so\":" + json_str(so) + "}");  // counted, not recorded
    }
    return real(container, in, n_in, out, n_out, stream, proxy);
  }
  std::unique_lock<std::mutex> lock(g_mu);
  long call = ++g_calls;
  std::vector<Tensor> inputs(n_in);
  std::string shapes = "[";
  int64_t in_nan = 0, in_inf = 0;
  for (size_t i = 0; i < n_in; ++i) {
    read_tensor(in[i], inputs[i]);
    count_nonfinite(inputs[i]);
    in_nan += inputs[i].nan;
    in_inf += inputs[i].inf;
    shapes += std::string(i ? "," : "") + "{\"dtype\":" +
              json_str(inputs[i].dtype ? inputs[i].dtype->name : std::to_string(inputs[i].dtype_code)) +
              ",\"shape\":" + ints(inputs[i].sizes) + ",\"device\":" + std::to_string(inputs[i].device) + "}";
  }
  shapes += "]";
  std::string not_kept;
  bool wanted = s.only_call != 0 ? call == s.only_call : !g_bad_seen;
  if (wanted) {
    not_kept = keep_inputs(call, inputs);
  } else {
    not_kept = s.only_call != 0 ? "not call " + std::to_string(s.only_call) + " (--call)"
                                : "after the first bad call nothing is kept";
  }
  event("{\"event\":\"begin\",\"call\":" + std::to_string(call) + ",\"so\":" + json_str(so) +
        ",\"inputs\":" + shapes + ",\"inputs_nan\":" + std::to_string(in_nan) + ",\"inputs_inf\":" +
        std::to_string(in_inf) + ",\"kept\":" + (wanted && not_kept.empty() ? "true" : "false") +
        (not_kept.empty() ? "" : ",\"not_kept\":" + json_str(not_kept)) + "}");
  lock.unlock();
  int32_t rc = real(container, in, n_in, out, n_out, stream, proxy);
  lock.lock();
  int64_t out_nan = 0, out_inf = 0;
  std::string out_shapes = "[";
  bool device_error = false;  // an output on a device could not be copied: the call's error shows there
  if (rc == 0) {
    for (size_t i = 0; i < n_out; ++i) {
      Tensor t;
      if (read_tensor(out[i], t)) {
        count_nonfinite(t);
        out_nan += t.nan;
        out_inf += t.inf;
      }
      device_error = device_error || !t.copy_error.empty();
      out_shapes += std::string(i ? "," : "") + ints(t.sizes);
    }
  }
  out_shapes += "]";
  const bool bad = rc != 0 || device_error || ((out_nan > 0 || out_inf > 0) && in_nan == 0 && in_inf == 0);
  event("{\"event\":\"end\",\"call\":" + std::to_string(call) + ",\"code\":" + std::to_string(rc) +
        ",\"outputs\":" + out_shapes + ",\"outputs_nan\":" + std::to_string(out_nan) +
        ",\"outputs_inf\":" + std::to_string(out_inf) + (device_error ? ",\"device_error\":true" : "") + "}");
  if (bad) {
    g_bad_seen = true;  // its history stays as it is: nothing later is kept
  }
  return rc;
}

template <int I, bool Single>
int32_t tramp(void* c, AtenTensorHandle* in, size_t n_in, AtenTensorHandle* out, size_t n_out, void* s, void* p) {
  return run_call(Single ? g_slots[I].run_single : g_slots[I].run, c, in, n_in, out, n_out, s, p);
}

template <bool Single, int... I>
constexpr std::array<RunFn, sizeof...(I)> table(std::integer_sequence<int, I...>) {
  return {&tramp<I, Single>...};
}
const auto g_run_table = table<false>(std::make_integer_sequence<int, k_slots>{});
const auto g_single_table = table<true>(std::make_integer_sequence<int, k_slots>{});

void note_open(const char* path) {
  if (path == nullptr || !settings().active) {
    return;
  }
  size_t n = std::strlen(path);
  if (n < 4 || std::strcmp(path + n - 4, ".pt2") != 0) {
    return;
  }
  char resolved[4096];
  std::string p = ::realpath(path, resolved) != nullptr ? resolved : path;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_opened.insert(p).second) {
    event("{\"event\":\"open\",\"path\":" + json_str(p) + "}");
  }
}

// A forked child counts its own calls from 1, in its own folder.
void after_fork_in_child() {
  new (&g_mu) std::mutex();
  g_calls = 0;
  g_bad_seen = false;
  g_kept_bytes = 0;
  g_kept.clear();
  g_opened.clear();
}

__attribute__((constructor)) void install_fork_handler() { pthread_atfork(nullptr, nullptr, &after_fork_in_child); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  void* p = real_dlsym()(handle, name);
  if (p == nullptr || !settings().active) {
    return p;
  }
  const bool run = std::strcmp(name, "AOTInductorModelContainerRun") == 0;
  const bool single = std::strcmp(name, "AOTInductorModelContainerRunSingleThreaded") == 0;
  if (!run && !single) {
    return p;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  for (int i = 0; i < k_slots; ++i) {
    if (g_slots[i].handle == handle || g_slots[i].handle == nullptr) {
      g_slots[i].handle = handle;
      (single ? g_slots[i].run_single : g_slots[i].run) = reinterpret_cast<RunFn>(p);
      return reinterpret_cast<void*>(single ? g_single_table[i] : g_run_table[i]);
    }
  }
  event("{\"event\":\"unseen\",\"why\":\"more than 64 models loaded: later ones are not seen\"}");
  return p;
}

// The packages the program opens (.pt2), to name them in capture.json.
using OpenFn = int (*)(const char*, int, ...);
using FopenFn = FILE* (*)(const char*, const char*);

#define AOTI_CAPTURE_OPEN(NAME)                                                      \
  __attribute__((visibility("default"))) int NAME(const char* path, int flags, ...) { \
    static auto real = reinterpret_cast<OpenFn>(real_dlsym()(RTLD_NEXT, #NAME));      \
    mode_t mode = 0;                                                                 \
    if (flags & (O_CREAT | O_TMPFILE)) {                                             \
      va_list ap;                                                                    \
      va_start(ap, flags);                                                           \
      mode = va_arg(ap, mode_t);                                                     \
      va_end(ap);                                                                    \
    }                                                                                \
    note_open(path);                                                                 \
    return real(path, flags, mode);                                                  \
  }
AOTI_CAPTURE_OPEN(open)
AOTI_CAPTURE_OPEN(open64)

#define AOTI_CAPTURE_FOPEN(NAME)                                                              \
  __attribute__((visibility("default"))) FILE* NAME(const char* path, const char* mode) {    \
    static auto real = reinterpret_cast<FopenFn>(real_dlsym()(RTLD_NEXT, #NAME));              \
    note_open(path);                                                                          \
    return real(path, mode);                                                                  \
  }
AOTI_CAPTURE_FOPEN(fopen)
AOTI_CAPTURE_FOPEN(fopen64)

}  // extern "C"
