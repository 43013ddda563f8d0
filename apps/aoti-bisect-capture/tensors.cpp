// Tensors read through the C shim (tensors.hpp).
#include "tensors.hpp"

#include <dlfcn.h>

#include <cmath>
#include <cstring>

namespace aoti_capture {

namespace {

// Python loads LibTorch without RTLD_GLOBAL: where the process's global
// scope lacks the shim, LibTorch's own library (already loaded) has it.
void* g_shim_scope = RTLD_DEFAULT;

template <typename F>
void find(F& f, const char* name) {
  f = reinterpret_cast<F>(real_dlsym()(g_shim_scope, name));
}

}  // namespace

DlsymFn real_dlsym() {
  static DlsymFn fn = [] {
    void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == nullptr) {
      p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    }
    return reinterpret_cast<DlsymFn>(p);
  }();
  return fn;
}


const Shim& shim() {
  static Shim s = [] {
    Shim r;
    if (real_dlsym()(RTLD_DEFAULT, "aoti_torch_get_dtype") == nullptr) {
      if (void* torch = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD)) {
        g_shim_scope = torch;
      }
    }
    find(r.get_dtype, "aoti_torch_get_dtype");
    find(r.get_dim, "aoti_torch_get_dim");
    find(r.get_sizes, "aoti_torch_get_sizes");
    find(r.get_strides, "aoti_torch_get_strides");
    find(r.get_data_ptr, "aoti_torch_get_data_ptr");
    find(r.get_device_type, "aoti_torch_get_device_type");
    r.ok = r.get_dtype && r.get_dim && r.get_sizes && r.get_strides && r.get_data_ptr && r.get_device_type;
    find(r.get_storage_offset, "aoti_torch_get_storage_offset");
    find(r.get_device_index, "aoti_torch_get_device_index");
    find(r.reinterpret, "aoti_torch__reinterpret_tensor");
    find(r.empty_strided, "aoti_torch_empty_strided");
    find(r.copy, "aoti_torch_copy_");
    find(r.del, "aoti_torch_delete_tensor_object");
    r.can_copy = r.get_storage_offset && r.get_device_index && r.reinterpret && r.empty_strided && r.copy && r.del;
    return r;
  }();
  return s;
}

constexpr std::array<DtypeInfo, 12> k_dtypes = {{{0, "uint8", 1},
                                                 {1, "int8", 1},
                                                 {2, "int16", 2},
                                                 {3, "int32", 4},
                                                 {4, "int64", 8},
                                                 {5, "float16", 2},
                                                 {6, "float32", 4},
                                                 {7, "float64", 8},
                                                 {11, "bool", 1},
                                                 {15, "bfloat16", 2},
                                                 {23, "float8_e4m3fn", 1},
                                                 {24, "float8_e5m2", 1}}};

const DtypeInfo* dtype_of(int32_t code) {
  for (const auto& d : k_dtypes) {
    if (d.code == code) {
      return &d;
    }
  }
  return nullptr;
}


// A tensor on another device (CUDA): its span [first, last] copied to the
// CPU through the shim (a 1-D view of the span, copied into a CPU tensor;
// the copy waits for the device, so an error the device holds shows here).
bool copy_to_host(AtenTensorHandle h, Tensor& t) {
  const Shim& s = shim();
  if (!s.can_copy) {
    t.copy_error = "this torch's C shim has no copy functions";
    return false;
  }
  const int64_t n = t.last - t.first + 1;
  int64_t offset = 0;
  int32_t index = 0;
  AtenTensorHandle span = nullptr, cpu = nullptr;
  const int64_t one = 1;
  void* data = nullptr;
  bool ok = s.get_storage_offset(h, &offset) == 0 && s.get_device_index(h, &index) == 0 &&
            s.reinterpret(h, 1, &n, &one, offset + t.first, &span) == 0 &&
            s.empty_strided(1, &n, &one, t.dtype_code, 0, 0, &cpu) == 0 && s.copy(cpu, span, 0) == 0 &&
            s.get_data_ptr(cpu, &data) == 0 && data != nullptr;
  if (ok) {
    t.host.assign(static_cast<const char*>(data), static_cast<const char*>(data) + n * t.dtype->size);
    t.data = t.host.data() - t.first * t.dtype->size;
  } else {
    t.copy_error = "copying it to the CPU failed (device type " + std::to_string(t.device) + ")";
  }
  if (span != nullptr) {
    s.del(span);
  }
  if (cpu != nullptr) {
    s.del(cpu);
  }
  return ok;
}

bool read_tensor(AtenTensorHandle h, Tensor& t) {
  const Shim& s = shim();
  if (!s.ok || h == nullptr) {
    return false;
  }
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  void* data = nullptr;
  if (s.get_dtype(h, &t.dtype_code) != 0 || s.get_dim(h, &dim) != 0 || s.get_sizes(h, &sizes) != 0 ||
      s.get_strides(h, &strides) != 0 || s.get_data_ptr(h, &data) != 0 || s.get_device_type(h, &t.device) != 0) {
    return false;
  }
  t.dtype = dtype_of(t.dtype_code);
  t.sizes.assign(sizes, sizes + dim);
  t.strides.assign(strides, strides + dim);
  t.data = static_cast<const char*>(data);
  for (int64_t i = 0; i < dim; ++i) {
    if (t.sizes[i] == 0) {
      t.first = 0;
      t.last = -1;  // no element: nothing to write
      return true;
    }
  }
  t.first = 0;
  t.last = 0;
  for (int64_t i = 0; i < dim; ++i) {
    int64_t reach = (t.sizes[i] - 1) * t.strides[i];
    (reach < 0 ? t.first : t.last) += reach;
  }
  if (t.device != 0 && t.dtype != nullptr) {
    return copy_to_host(h, t);
  }
  return true;
}

bool readable(const Tensor& t) { return t.device == 0 || !t.host.empty(); }

float half_to_float(uint16_t h, bool bf16) {
  uint32_t bits;
  if (bf16) {
    bits = static_cast<uint32_t>(h) << 16;
  } else {
    uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;
    if (e == 0x1f) {
      bits = ((h & 0x8000u) << 16) | 0x7f800000u | (m << 13);
    } else {
      bits = 0;  // finite: the value does not matter here
    }
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// NaN and Inf of a CPU floating tensor, element by element through its strides.
void count_nonfinite(Tensor& t) {
  t.nan = t.inf = 0;
  if (!readable(t) || t.dtype == nullptr || t.data == nullptr || t.last < t.first) {
    return;
  }
  const int code = t.dtype_code;
  if (code != 5 && code != 6 && code != 7 && code != 15) {
    return;
  }
  const size_t dim = t.sizes.size();
  std::vector<int64_t> idx(dim, 0);
  int64_t numel = 1;
  for (auto s : t.sizes) {
    numel *= s;
  }
  for (int64_t n = 0; n < numel; ++n) {
    int64_t off = 0;
    for (size_t d = 0; d < dim; ++d) {
      off += idx[d] * t.strides[d];
    }
    double v;
    const char* p = t.data + off * t.dtype->size;
    if (code == 6) {
      float f;
      std::memcpy(&f, p, 4);
      v = f;
    } else if (code == 7) {
      std::memcpy(&v, p, 8);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      v = half_to_float(h, code == 15);
    }
    t.nan += std::isnan(v) ? 1 : 0;
    t.inf += std::isinf(v) ? 1 : 0;
    for (size_t d = dim; d-- > 0;) {
      if (++idx[d] < t.sizes[d]) {
        break;
      }
      idx[d] = 0;
    }
  }
}

}  // namespace aoti_capture
