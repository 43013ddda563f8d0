#pragma once
// Infinity by design: kernels whose own code writes an infinity literal (an
// attention mask's `where(causal, 0, -inf)`). Inf they introduce, with no new
// NaN, is by intent (evidence.hpp first_introducer's `inf_by_design`).

#include <set>
#include <string>
#include <vector>

#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// Whether a cpp kernel's definition (package/kernel.cpp) computes with an
// infinity literal (`auto tmp8 = -std::numeric_limits<float>::infinity();`),
// not counting a reduction's initial value (`tmp_acc0 = -...infinity()`).
bool writes_infinity_literal(const std::string& kernel_definition);
// The same for a Triton kernel's source (`tmp3 = float("-inf")`), not
// counting a reduction block's padding (`tl.where(xmask, tmp4,
// float("-inf"))`) or an accumulator's initial value (`_tmp3 = tl.full(...)`).
bool triton_writes_infinity_literal(const std::string& triton_source);
// A Triton kernel's source as the wrapper quotes it
// (`async_compile.triton('<kernel>', '''...''')`); "" when absent.
std::string triton_kernel_source(const std::string& wrapper_source, const std::string& kernel);
// The kernels among `sites` whose own code writes an infinity literal: cpp
// kernels by their definition in `kernel_source` (the package's
// kernel.cpp), Triton kernels by their source in `wrapper_source`.
std::set<std::string> inf_by_design_kernels(const std::string& kernel_source, const std::string& wrapper_source,
                                            const std::vector<CallSite>& sites);

}  // namespace aoti_bisect
