#pragma once
// Shared by the torchside sources only (it includes LibTorch).

#include <ATen/ATen.h>

#include <string>

#include "protocol/values.hpp"
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


}  // namespace aoti_bisect::torchside
