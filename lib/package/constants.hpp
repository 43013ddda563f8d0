#pragma once
// The model's constants as the wrapper's constructor declares them
// (`constants_info_[i].name = "bn_running_var"; ... .original_fqn =
// "bn.running_var"; .type = ...Buffer`): the name the wrapper's code uses,
// the original module path a user knows, and what kind of constant it is.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

struct ConstantInfo {
  int index = 0;
  std::string name;    // "bn_running_var": the wrapper's variable
  std::string fqn;     // "bn.running_var": the module path; "" when not recorded
  std::string kind;    // "parameter", "buffer", "tensor constant", "folded constant", "" when unknown
  std::vector<int64_t> shape;
  bool opaque = false; // oneDNN (mkldnn) layout: a frozen, packed weight without storage of its own
  // A constant freezing made (`_frozen_param4`, its original name lost)
  bool frozen() const { return name.rfind("_frozen_param", 0) == 0 && (fqn.empty() || fqn == name); }
};

std::vector<ConstantInfo> parse_constants(std::string_view wrapper_source);

// The constant a tensor name refers to ("bn_running_var", "view of head_weight"), if any.
const ConstantInfo* find_constant(const std::vector<ConstantInfo>& constants, const std::string& tensor);

// "parameter bn.running_var", "buffer bn.running_mean", "constant c0" (no fqn): how a report names it.
std::string describe_constant(const ConstantInfo& c);

}  // namespace aoti_bisect
