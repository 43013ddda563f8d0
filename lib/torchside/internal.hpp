#pragma once
// Shared by the torchside sources only (it includes LibTorch).

#include <ATen/ATen.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "protocol/values.hpp"

namespace aoti_bisect::torchside {

TensorStats tensor_stats(const std::string& name, const at::Tensor& t);
std::string dtype_name(c10::ScalarType t);

// The difference of two tensors with the same number of elements, compared
// in row-major order (a view of the same values compares equal).
struct ValueDiff {
  double max_abs = 0;       // over elements finite on both sides
  double scale = 0;         // max finite |expected|
  int64_t nonfinite = 0;    // elements where NaN/Inf differ
  int64_t worst_flat = -1;  // the worst element (a NaN/Inf mismatch first), row-major
  double actual = 0;
  double expected = 0;
  int64_t outside = 0;      // with a tolerance: elements outside it (NaN/Inf mismatches included)
};
ValueDiff diff_values(const at::Tensor& actual, const at::Tensor& expected, const Tolerance* tol = nullptr);

// One model of an extracted package directory, loaded (loader.cpp) with
// LibTorch's AOTIModelPackageLoader where it reads directories (2.13 and
// later), else with the container runner the loader would build, from the
// same files. Either way nothing is extracted or written: no temporary
// folder exists to leak. Throws what LibTorch throws (or std::runtime_error
// with the loader's message) when the model cannot be loaded.
class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  virtual std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) = 0;
};
std::unique_ptr<LoadedModel> load_extracted_model(const std::filesystem::path& dir, const std::string& model);
// AOTI_BISECT_RUNNER_LOADER=container takes the fallback where the loader
// reads directories too (for tests).


}  // namespace aoti_bisect::torchside
