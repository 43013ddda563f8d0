// Poison for memory no kernel wrote (AOTI_BISECT_POISON=1, the profiles'
// `poison` variant): every buffer the package allocates through the C shim
// (aoti_torch_empty_strided, its pinned sibling, and views of a memory
// planning pool from aoti_torch__alloc_from_pool) is filled at allocation
// with a poison of its dtype, through the model's own GOT (hook_binding.cpp),
// so that only the model's allocations change, on the CPU and on a device
// alike (ATen's caching allocator and glibc's MALLOC_PERTURB_ do not reach
// them there).
//
// The poison of a floating dtype is a signaling NaN with a payload of its
// own (float32 0x7fa00dea, float64 0x7ff4000000000dea, float16 0x7d00,
// bfloat16 0x7fa0): a kernel that reads it computes a NaN, and arithmetic
// gives a quiet NaN (the CPU sets the quiet bit, a GPU gives its canonical
// NaN), so an element that still holds the exact pattern was never written
// by any kernel (or only copied). The probes count those elements
// (TensorStats::unwritten), which tells a buffer left partly unwritten from
// one whose NaN a kernel computed. Integers get their dtype's maximum (an
// index read from unwritten memory is out of range), bool true.

#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

#include "torchside/internal.hpp"
#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {

namespace {

struct Pattern {
  at::ScalarType as;  // the integer dtype of the same width the bits are written in
  int64_t bits;
};

std::optional<Pattern> pattern_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return Pattern{at::kInt, 0x7fa00dea};
    case at::kDouble: return Pattern{at::kLong, 0x7ff4000000000deaLL};
    case at::kHalf: return Pattern{at::kShort, 0x7d00};
    case at::kBFloat16: return Pattern{at::kShort, 0x7fa0};
    case at::kLong: return Pattern{at::kLong, std::numeric_limits<int64_t>::max()};
    case at::kInt: return Pattern{at::kInt, std::numeric_limits<int32_t>::max()};
    case at::kShort: return Pattern{at::kShort, std::numeric_limits<int16_t>::max()};
    case at::kChar: return Pattern{at::kChar, std::numeric_limits<int8_t>::max()};
    case at::kByte: return Pattern{at::kByte, std::numeric_limits<uint8_t>::max()};
    case at::kBool: return Pattern{at::kBool, 1};
    default: return std::nullopt;  // complex, float8, quantized: left as they are
  }
}

at::Tensor as_bits(const at::Tensor& t, const Pattern& p) {
  return p.as == t.scalar_type() ? t : t.view(p.as);
}

void poison(AtenTensorHandle handle) {
  at::Tensor* t = torch::aot_inductor::tensor_handle_to_tensor_pointer(handle);
  if (t == nullptr || !t->defined() || t->numel() == 0 || !t->has_storage()) {
    return;
  }
  if (auto p = pattern_of(t->scalar_type())) {
    try {
      at::Tensor bits = as_bits(*t, *p);
      if (p->as == at::kBool) {
        bits.fill_(true);
      } else {
        bits.fill_(p->bits);
      }
    } catch (const std::exception&) {
      // a layout the fill cannot reach: left as the allocator gave it
    }
  }
}

using EmptyStrided = AOTITorchError (*)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t,
                                        AtenTensorHandle*);
using AllocFromPool = AOTITorchError (*)(AtenTensorHandle, int64_t, int32_t, int64_t, const int64_t*, const int64_t*,
                                         AtenTensorHandle*);

void* g_empty_strided = nullptr;
void* g_empty_strided_pinned = nullptr;
void* g_alloc_from_pool = nullptr;

AOTITorchError poisoned_empty_strided(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                                      int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  AOTITorchError e =
      reinterpret_cast<EmptyStrided>(g_empty_strided)(ndim, sizes, strides, dtype, device_type, device_index, ret);
  if (e == AOTI_TORCH_SUCCESS && ret != nullptr) {
    poison(*ret);
  }
  return e;
}

AOTITorchError poisoned_empty_strided_pinned(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                                             int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  AOTITorchError e = reinterpret_cast<EmptyStrided>(g_empty_strided_pinned)(ndim, sizes, strides, dtype, device_type,
                                                                            device_index, ret);
  if (e == AOTI_TORCH_SUCCESS && ret != nullptr) {
    poison(*ret);
  }
  return e;
}

AOTITorchError poisoned_alloc_from_pool(AtenTensorHandle pool, int64_t offset_bytes, int32_t dtype, int64_t ndim,
                                        const int64_t* sizes, const int64_t* strides, AtenTensorHandle* ret) {
  AOTITorchError e =
      reinterpret_cast<AllocFromPool>(g_alloc_from_pool)(pool, offset_bytes, dtype, ndim, sizes, strides, ret);
  if (e == AOTI_TORCH_SUCCESS && ret != nullptr) {
    poison(*ret);
  }
  return e;
}

}  // namespace

bool poison_active() {
  static const bool active = [] {
    const char* v = std::getenv("AOTI_BISECT_POISON");
    return v != nullptr && std::string(v) == "1";
  }();
  return active;
}

int64_t poison_count(const at::Tensor& t) {
  auto p = pattern_of(t.scalar_type());
  if (!p || t.numel() == 0 || !t.has_storage() || t.layout() != at::kStrided) {
    return -1;
  }
  try {
    at::Tensor bits = as_bits(t.detach(), *p);
    at::Tensor same = p->as == at::kBool ? bits : bits.eq(p->bits);
    return same.sum().item<int64_t>();
  } catch (const std::exception&) {
    return -1;
  }
}

PoisonBinding bind_poison(const std::string& model_library) {
  ModelObject model = find_model_object(model_library);
  PoisonBinding out;
  std::vector<GotEntry> entries = {
      {"aoti_torch_empty_strided", reinterpret_cast<void*>(&poisoned_empty_strided), &g_empty_strided},
      {"aoti_torch_empty_strided_pinned", reinterpret_cast<void*>(&poisoned_empty_strided_pinned),
       &g_empty_strided_pinned},
      {"aoti_torch__alloc_from_pool", reinterpret_cast<void*>(&poisoned_alloc_from_pool), &g_alloc_from_pool}};
  out.slots = bind_got(model, entries, out.unbound);
  return out;
}

}  // namespace aoti_bisect::torchside
