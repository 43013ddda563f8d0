#pragma once
// Interposition, the package-only source of probes (design: "Sources"): a
// small C++ file generated from the package's own text defines one hook per
// function run_impl calls at a call site (its cpp kernels, the C-shim
// extern calls, and for Triton launches the CUDA driver's), plus the two
// shim calls that tell which tensor a raw pointer belongs to. Each hook has the exact signature of the function it
// stands for, tells the runner about its arguments, and forwards to the real
// function. The runner binds the hooks into the model's own GOT slots
// (lib/torchside/hook_binding.cpp); nothing is interposed for any other object.
//
// The generated file needs no LibTorch headers: tensor handles are opaque
// pointers, kernel pointer parameters are void*, and the runner's callbacks
// (the aoti_bisect_* functions below) resolve against the runner executable.

#include <map>
#include <string>
#include <vector>

#include "wrapper/declarations.hpp"
#include "wrapper/triton_launch.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

struct HookLibrary {
  std::string source;                 // the C++ file; empty when `problems` is not
  std::vector<std::string> hooked;    // symbols with a hook, call sites' first
  int site_functions = 0;             // of those, the functions call sites call (the rest follow buffers)
  std::vector<std::string> problems;  // call-site functions that cannot be hooked, with why
};

// The hook library for a wrapper's call sites. `kernels` and `shims` are
// the declarations read by wrapper/declarations.hpp; `triton`, the wrapper's Triton launches
// (triton_launches(wrapper source)): a CUDA model's Triton call sites are
// seen through the CUDA driver's cuModuleGetFunction and cuLaunchKernel,
// which the model calls through its PLT (codegen/hooks_cuda.hpp).
HookLibrary generate_hooks(const WrapperInfo& wrapper, const std::map<std::string, std::vector<HookParam>>& kernels,
                           const std::map<std::string, std::vector<HookParam>>& shims,
                           const std::map<std::string, TritonLaunch>& triton = {});

// The callbacks' ABI version, written into the generated file and checked by
// the runner, so that a cached library from another version is never bound.
inline constexpr int k_hook_abi_version = 2;

}  // namespace aoti_bisect
