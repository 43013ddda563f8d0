#pragma once
// From a culprit's evidence to what a bug report opens with: each tensor
// named as the user knows it (a constant by its module path, a graph input
// by its position), an out-of-range index compared with the tensor it
// indexes, and one root-cause sentence where the evidence supports one
// ("reads buffer bn.running_var, min -3: square root of a negative variance").

#include <cstdint>
#include <optional>
#include <string>

#include "package/wrapper.hpp"
#include "report/report.hpp"
#include "evidence/evidence.hpp"

namespace aoti_bisect {

// Sets `fqn` and `origin` on the culprit's tensors and names constants in its producer.
void annotate_origins(Culprit& c, const WrapperInfo& wrapper);

// An integer index read by the culprit whose values exceed the rows of the
// tensor it indexes (found in the kernel's own source: which pointer is
// indexed with values loaded from which index pointer, and with what stride).
struct WildIndex {
  std::string index_tensor;    // "arg8_1"
  int64_t value = 0;           // the offending value (its max, or its min when negative)
  std::string indexed_tensor;  // "emb_weight"
  int64_t bound = 0;           // rows along the indexed dimension
};
std::optional<WildIndex> wild_index(const Culprit& c, const std::string& kernel_definition, const CallSite* site);

// The root-cause sentence, or "" when the evidence supports none.
std::string root_cause(const Culprit& c, Predicate predicate, const std::optional<WildIndex>& wild,
                       const WrapperInfo& wrapper, std::optional<int64_t> named_bound);

}  // namespace aoti_bisect
