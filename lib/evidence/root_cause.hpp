#pragma once
// From a culprit's evidence to what a bug report opens with: each tensor
// named as the user knows it (a constant by its module path, a graph input
// by its position), an out-of-range index compared with the tensor it
// indexes, and the root cause where the evidence decides one: never from a
// kernel's or a constant's name. For a cpp kernel's NaN/Inf the cause is the
// intermediate its replay found ("`tmp9 = tmp5 / tmp8` made NaN at x0=3
// (buf7[3]) from tmp5 = 0, tmp8 = 0: 0/0"); for an extern call, its op and
// what it read and wrote ("aten.addmm overflowed float32: ...").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "evidence/evidence.hpp"
#include "evidence/intermediates.hpp"
#include "report/report.hpp"
#include "wrapper/wrapper.hpp"

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

// The root cause the probes' evidence supports: memory no kernel wrote, an
// index past what it indexes, a constant holding NaN/Inf, an extern call's
// NaN/Inf from finite inputs; an empty sentence when none.
RootCause root_cause(const Culprit& c, Predicate predicate, const std::optional<WildIndex>& wild,
                     const WrapperInfo& wrapper, std::optional<int64_t> named_bound);

// The cause from the culprit's replay with its intermediates checked
// (`chain`: evidence/intermediates.hpp introduction): the intermediate that
// made NaN (or Inf) while what it read did not, its element, its operands'
// values, what they make of its operation where that is plain arithmetic
// (0/0, log of a negative value), and the graph op where the kernel's ATen
// ops name one; the NaN it then made of that Inf, after it. A constant's
// fact found before is kept in front (root_cause_intermediate.cpp).
void explain_intermediate(RootCause& cause, const std::vector<const IntermediateHit*>& chain, const Culprit& c);

// Shared by root_cause.cpp and root_cause_intermediate.cpp only.
namespace root_cause_detail {

// A kernel's listed ATen ops: "[aten.addmm]" -> {"aten.addmm"}.
std::vector<std::string> bracketed_list(std::string text);

}  // namespace root_cause_detail

}  // namespace aoti_bisect
