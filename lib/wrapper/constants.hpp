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
  std::string name;  // "bn_running_var": the wrapper's variable
  std::string fqn;   // "bn.running_var": the module path; "" when not recorded
  std::string kind;  // "parameter", "buffer", "tensor constant", "folded constant", "" when unknown
  std::vector<int64_t> shape;
  bool opaque = false;       // oneDNN (mkldnn) layout: a frozen, packed weight without storage of its own
  uint64_t data_size = 0;    // bytes it takes in the weights
  bool from_folded = false;  // made by constant folding at load time (not in the weights)
  // A constant freezing made (`_frozen_param4`, its original name lost)
  bool frozen() const { return name.rfind("_frozen_param", 0) == 0 && (fqn.empty() || fqn == name); }
};

std::vector<ConstantInfo> parse_constants(std::string_view wrapper_source);

// One line when a model declares weights its package does not hold: its
// constants take `declared` bytes (data_size, folded ones left out), the
// library embeds `embedded` bytes (_binary_constants_bin_start to _end, nullopt
// when it has no such symbols: then nothing is said; a
// build with aot_inductor.package_constants_in_so=False embeds none), and no
// weights file is packaged beside it. "" when the weights are there. Every
// run would read uninitialized memory as weights (a crash or garbage that
// passes for the model's own failure).
std::string missing_weights(const std::vector<ConstantInfo>& constants, std::optional<uint64_t> embedded,
                            bool weights_file);

// The constant a tensor name refers to ("bn_running_var", "view of head_weight"), if any.
const ConstantInfo* find_constant(const std::vector<ConstantInfo>& constants, const std::string& tensor);

// "parameter bn.running_var", "buffer bn.running_mean", "constant c0" (no fqn): how a report names it.
std::string describe_constant(const ConstantInfo& c);

}  // namespace aoti_bisect
