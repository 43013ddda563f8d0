#pragma once
// What a CUDA wrapper's `call_triton_<kernel>` definitions say about each
// Triton launch (torch 2.13, torch/_inductor/codegen/cpp_wrapper_gpu.py,
// DeferredTritonCallWrapper.generate): the function takes the call site's
// arguments as parameters (RAII handles for tensors, `int64_t` for sizes,
// then device_idx_, stream_, kernels_, cubin_dir_), loads the kernel with
// `loadKernel("<path>.cubin", "<function>", shared, cubin_dir_, ...)`, turns
// each tensor parameter into `CUdeviceptr var_N =
// reinterpret_cast<CUdeviceptr>(X.data_ptr());`, and passes
// `void* kernel_args_[] = {&var_0, ..., &global_scratch_K}` to
// launchKernel, which calls cuLaunchKernel through the PLT. So
// kernelParams[i] points to the CUdeviceptr of call argument
// `tensor_of[i]` (or to a scalar / scratch pointer: -1).
//
// Checked on real torch 2.11.0+cu130 codegen (tests/data/cuda211_*, Triton
// 3.6): the same shape, except that call_triton_<kernel> is `static inline`
// there (in those libraries -O1 inlined every one into run_impl, no symbol
// left; launchKernel's cuLaunchKernel stays one PLT call) and loadKernel
// takes no loaded-modules pointer. A constexpr numel (xnumel = 1 of a
// persistent reduction) has no kernel_args_ entry. Real torch 2.15.0+cu132
// codegen (tests/data/cuda215_*, Triton 3.9) has the shape above, with
// call_triton_<kernel> `static __attribute__((noinline))` and a launchPdl
// flag last in launchKernel's call (`..., kernel_args_, stream_, false)`).

#include <map>
#include <string>
#include <vector>

namespace aoti_bisect {

struct TritonLaunch {
  std::string kernel;               // "triton_poi_fused_add_0" (call_<kernel> is the wrapper function)
  std::string function;             // the cubin's entry point loadKernel asks for ("" when not found)
  std::vector<std::string> params;  // the wrapper function's parameter names, in order
  // One entry per kernel_args_ element (kernelParams index): the parameter
  // (= call-site argument position) whose device pointer it holds, or -1.
  std::vector<int> tensor_of;
  // The positions in `params` that are tensors (have a CUdeviceptr), in order.
  std::vector<int> tensor_params() const;
};

// Every `call_triton_<kernel>` definition in a CUDA wrapper source, by kernel
// name. A definition whose launch cannot be read (no kernel_args_ list) is
// left out.
std::map<std::string, TritonLaunch> triton_launches(const std::string& wrapper_source);

}  // namespace aoti_bisect
