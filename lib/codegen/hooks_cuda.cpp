// The CUDA part of the hook library: the driver calls a CUDA model's Triton launches go through.
#include "codegen/hooks_cuda.hpp"

#include <fmt/format.h>

#include "common/text.hpp"

namespace aoti_bisect {
namespace {

const char* k_driver = R"(
// The CUDA driver, declared opaquely (no CUDA header): CUresult is an enum
// (int), the handles are pointers.
#include <cstring>
#include <mutex>
#include <vector>

typedef int CUresult;
typedef void* CUfunction;
typedef void* CUmodule;
typedef void* CUstream;

// One Triton kernel of the wrapper: the cubin entry point loadKernel asks
// cuModuleGetFunction for, the name its call sites have, and per
// kernelParams entry the call-site argument whose CUdeviceptr it points to
// (-1: a scalar or a scratch pointer).
struct aoti_bisect_triton_kernel {
  const char* function;
  const char* kernel;
  int params;
  const int* arg;
};
{kernels}
static std::mutex aoti_bisect_functions_lock;
static std::vector<std::pair<CUfunction, const aoti_bisect_triton_kernel*>> aoti_bisect_functions;

static void aoti_bisect_remember(CUfunction f, const char* name) {
  for (const auto& k : aoti_bisect_triton) {
    if (std::strcmp(k.function, name) == 0) {
      std::lock_guard<std::mutex> lock(aoti_bisect_functions_lock);
      aoti_bisect_functions.emplace_back(f, &k);
      return;
    }
  }
}

static const aoti_bisect_triton_kernel* aoti_bisect_kernel_of(CUfunction f) {
  std::lock_guard<std::mutex> lock(aoti_bisect_functions_lock);
  for (auto it = aoti_bisect_functions.rbegin(); it != aoti_bisect_functions.rend(); ++it) {
    if (it->first == f) {
      return it->second;
    }
  }
  return nullptr;
}

// kernelParams[i] points to the CUdeviceptr (64 bits) of a tensor argument.
static void aoti_bisect_launch_pointers(const aoti_bisect_triton_kernel* k, void** params, int after) {
  for (int i = 0; params != nullptr && i < k->params; ++i) {
    if (k->arg[i] >= 0 && params[i] != nullptr) {
      uint64_t device_pointer = 0;
      std::memcpy(&device_pointer, params[i], sizeof device_pointer);
      aoti_bisect_pointer(reinterpret_cast<const void*>(static_cast<uintptr_t>(device_pointer)), k->arg[i], after);
    }
  }
}

// cuModuleGetFunction
static CUresult (*real_{get})(CUfunction*, CUmodule, const char*);
extern "C" CUresult aoti_bisect_hook_{get}(CUfunction* a0, CUmodule a1, const char* a2) {
  CUresult e = real_{get}(a0, a1, a2);
  if (e == 0 && a0 != nullptr && *a0 != nullptr && a2 != nullptr) {
    aoti_bisect_remember(*a0, a2);
  }
  return e;
}

// cuLaunchKernel: a call site when its function is one of the wrapper's
// Triton kernels; any other launch is forwarded untouched.
static CUresult (*real_{launch})(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
    unsigned, CUstream, void**, void**);
extern "C" CUresult aoti_bisect_hook_{launch}(CUfunction a0, unsigned a1, unsigned a2, unsigned a3,
    unsigned a4, unsigned a5, unsigned a6, unsigned a7, CUstream a8, void** a9, void** a10) {
  const aoti_bisect_triton_kernel* k = aoti_bisect_kernel_of(a0);
  if (k == nullptr) {
    return real_{launch}(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10);
  }
  int m = aoti_bisect_enter(k->kernel);
  if (m) {
    aoti_bisect_launch_pointers(k, a9, 0);
  }
  CUresult e = real_{launch}(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10);
  aoti_bisect_launched(e != 0);
  if (m && e == 0) {
    aoti_bisect_launch_pointers(k, a9, 1);
  }
  return e;
}

)";

}  // namespace

void append_cuda_launch_hooks(const std::vector<const TritonLaunch*>& launches, HookText& out) {
  std::string kernels;
  std::vector<std::string> entries;
  for (size_t i = 0; i < launches.size(); ++i) {
    const TritonLaunch& l = *launches[i];
    std::vector<std::string> args;
    for (int a : l.tensor_of) {
      args.push_back(std::to_string(a));
    }
    if (args.empty()) {
      args.push_back("-1");  // no zero-length arrays
    }
    kernels += fmt::format("// {}: kernelParams from call_{}({})\nstatic const int aoti_bisect_args_{}[] = {{{}}};\n",
                           l.kernel, l.kernel, join(l.params, ", "), i, join(args, ", "));
    entries.push_back(fmt::format("    {{\"{}\", \"{}\", {}, aoti_bisect_args_{}}},\n",
                                  l.function.empty() ? l.kernel : l.function, l.kernel, l.tensor_of.size(), i));
  }
  kernels += "static const aoti_bisect_triton_kernel aoti_bisect_triton[] = {\n";
  for (const auto& e : entries) {
    kernels += e;
  }
  kernels += "};\n";
  const int get = out.n;
  const int launch = out.n + 1;
  std::string text = k_driver;
  text = replace_all(std::move(text), "{kernels}", kernels);
  text = replace_all(std::move(text), "{get}", std::to_string(get));
  text = replace_all(std::move(text), "{launch}", std::to_string(launch));
  out.body += text;
  for (const auto& [symbol, n] :
       {std::pair<const char*, int>{"cuModuleGetFunction", get}, {"cuLaunchKernel", launch}}) {
    out.table += fmt::format("    {{\"{}\", (void*)&aoti_bisect_hook_{}, (void**)&real_{}}},\n", symbol, n, n);
    out.hooked.push_back(symbol);
  }
  out.n += 2;
}

}  // namespace aoti_bisect
