#pragma once
// How libaoti-bisect-capture.so reads a tensor it is handed: through
// AOTInductor's C shim, found in the process once LibTorch is loaded (no
// LibTorch of its own). A tensor on another device is copied to the CPU
// (the span of storage it covers) before it is read.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace aoti_capture {

using AtenTensorHandle = void*;
using DlsymFn = void* (*)(void*, const char*);

// dlsym as the C library has it (the library's own dlsym wraps it).
DlsymFn real_dlsym();

// The C shim, found in the process once LibTorch is loaded.
struct Shim {
  int32_t (*get_dtype)(AtenTensorHandle, int32_t*) = nullptr;
  int32_t (*get_dim)(AtenTensorHandle, int64_t*) = nullptr;
  int32_t (*get_sizes)(AtenTensorHandle, int64_t**) = nullptr;
  int32_t (*get_strides)(AtenTensorHandle, int64_t**) = nullptr;
  int32_t (*get_data_ptr)(AtenTensorHandle, void**) = nullptr;
  int32_t (*get_device_type)(AtenTensorHandle, int32_t*) = nullptr;
  // For a tensor on another device: a CPU copy of its span.
  int32_t (*get_storage_offset)(AtenTensorHandle, int64_t*) = nullptr;
  int32_t (*get_device_index)(AtenTensorHandle, int32_t*) = nullptr;
  int32_t (*reinterpret)(AtenTensorHandle, int64_t, const int64_t*, const int64_t*, int64_t,
                         AtenTensorHandle*) = nullptr;
  int32_t (*empty_strided)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t,
                           AtenTensorHandle*) = nullptr;
  int32_t (*copy)(AtenTensorHandle, AtenTensorHandle, int32_t) = nullptr;
  int32_t (*del)(AtenTensorHandle) = nullptr;
  bool ok = false;
  bool can_copy = false;
};
const Shim& shim();

// c10::ScalarType codes and sizes.
struct DtypeInfo {
  int32_t code;
  const char* name;
  int size;
};

struct Tensor {
  const DtypeInfo* dtype = nullptr;
  int32_t dtype_code = -1;
  int32_t device = -1;  // 0 cpu, 1 cuda
  std::vector<int64_t> sizes, strides;
  const char* data = nullptr;
  int64_t first = 0;  // the span, in elements from data: [first, last]
  int64_t last = -1;
  int64_t nan = 0, inf = 0;
  std::vector<char> host;  // a tensor on another device: its span copied to the CPU (data points into it)
  std::string copy_error;  // why that copy failed
};

// The tensor's dtype, sizes, strides and bytes (copied from a device); false where the shim cannot say.
bool read_tensor(AtenTensorHandle h, Tensor& t);

// Whether the tensor's bytes can be read here (on the CPU, or copied to it).
bool readable(const Tensor& t);

// NaN and Inf of a floating tensor, element by element through its strides (t.nan, t.inf).
void count_nonfinite(Tensor& t);

}  // namespace aoti_capture
