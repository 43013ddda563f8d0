// The callbacks the generated interposition hooks call (codegen/hooks.hpp).
// Exported from the runner executable (ENABLE_EXPORTS), so the hook
// library, loaded RTLD_LOCAL, resolves them here.

#include "torchside/torchside.hpp"

namespace ts = aoti_bisect::torchside;

#define AOTI_BISECT_EXPORT extern "C" __attribute__((visibility("default"), used))

AOTI_BISECT_EXPORT int aoti_bisect_enter(const char* kernel) {
  return ts::hook_enter(kernel);
}
AOTI_BISECT_EXPORT void aoti_bisect_tensor(void* handle, int arg, int after) {
  ts::hook_tensor(handle, arg, after != 0);
}
AOTI_BISECT_EXPORT void aoti_bisect_tensor_at(void* handle, int arg, int element, int after) {
  ts::hook_tensor(handle, arg, after != 0, element);
}
AOTI_BISECT_EXPORT void aoti_bisect_pointer(const void* pointer, int arg, int after) {
  ts::hook_pointer(pointer, arg, after != 0);
}
AOTI_BISECT_EXPORT void aoti_bisect_launched(int failed) {
  ts::hook_launched(failed != 0);
}
AOTI_BISECT_EXPORT void aoti_bisect_data_ptr(void* handle, void* pointer) {
  ts::hook_data_ptr(handle, pointer);
}
AOTI_BISECT_EXPORT void aoti_bisect_forget(void* handle) {
  ts::hook_forget(handle);
}
