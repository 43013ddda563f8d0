// Built where the CUDA toolkit is absent: the CUDA path is left out.
#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {

std::optional<std::string> cuda_synchronize_error() {
  return std::nullopt;
}

void cuda_fill_versions(Versions&) {}

}  // namespace aoti_bisect::torchside
