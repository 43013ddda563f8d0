// Built where the CUDA toolkit exists. Uses the CUDA runtime only (no torch
// CUDA headers), so it compiles against a CPU LibTorch too; at run time it
// does nothing unless a device is present.
#include <cuda_runtime_api.h>

#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {

std::optional<std::string> cuda_synchronize_error() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return std::nullopt;
  }
  cudaError_t err = cudaDeviceSynchronize();
  if (err == cudaSuccess) {
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) {
    return std::nullopt;
  }
  return std::string("CUDA error: ") + cudaGetErrorString(err);
}

void cuda_fill_versions(Versions& v) {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess && runtime > 0) {
    v.cuda = std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10);
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return;
  }
  v.cuda_available = true;
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    v.driver = "CUDA driver API " + std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10);
  }
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
    v.device_name = prop.name;
  }
}

}  // namespace aoti_bisect::torchside
