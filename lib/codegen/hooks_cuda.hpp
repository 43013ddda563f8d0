#pragma once
// The CUDA part of the hook library (codegen/hooks.hpp), internal to
// lib/codegen: hooks for the two CUDA driver functions a CUDA model calls
// through its PLT for its Triton launches. cuModuleGetFunction names each
// CUfunction the wrapper's loadKernel gets; cuLaunchKernel, when its
// function is one of the wrapper's Triton kernels, is that kernel's call
// site: before and after the launch it shows the device pointers
// kernelParams holds (decoded from the wrapper's call_triton_<kernel>
// definition, wrapper/triton_launch.hpp), each by the call-site argument it
// came from, and tells the runner the launch happened (which synchronises
// there when the probe plan says sync or more). No cuda.h: the driver's
// types are declared opaquely (CUresult as int, handles as void*).

#include <string>
#include <vector>

#include "wrapper/triton_launch.hpp"

namespace aoti_bisect {

struct HookText {
  std::string body;                 // definitions
  std::string table;                // aoti_bisect_hooks[] entries
  int n = 0;                        // hooks so far (numbers real_<n> and aoti_bisect_hook_<n>)
  std::vector<std::string> hooked;  // symbols with a hook
};

// Appends the driver hooks for `launches` (one per Triton kernel the call
// sites launch) to `out`.
void append_cuda_launch_hooks(const std::vector<const TritonLaunch*>& launches, HookText& out);

}  // namespace aoti_bisect
