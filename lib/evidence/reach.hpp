#pragma once
// Which call site's NaN/Inf reach the model's outputs. Models make
// non-finite values on purpose and handle them (masks filled with -inf, log
// of zero probabilities, nan_to_num, where(isnan(x), ...), clamps), so "the
// first site that introduced NaN/Inf" can be one whose values are healed
// before the outputs. From one run that probed every call site, each
// non-finite value written is labelled with the sites it comes from:
//   - NaN written by a site whose inputs held NaN carries their origins; NaN
//     made from inputs without NaN comes from the Inf those inputs held, or,
//     where there was none (or only Inf by design), from the site itself;
//   - Inf written by a site whose inputs held Inf carries their origins;
//     otherwise it comes from the site, "by design" when the kernel writes
//     an infinity literal of its own code (an attention mask's -inf) and made
//     no NaN;
//   - NaN/Inf read from a constant enter at the site that reads it; read
//     from a graph input, they come from that input.
// The culprit is the earliest origin, in run order, of any non-finite
// output (several outputs may have independent origins: the others are
// named beside it): the backward walk from the outputs over the wrapper's
// data flow, done forward.
// The values are matched to the writes that made them by tensor name (moves
// and reuses followed, views by their buffer, a named view of a live buffer
// and that buffer as the same bytes, extern calls' returned buffers at their
// call) and by checksum.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bisect/bisect.hpp"
#include "evidence/evidence.hpp"
#include "wrapper/wrapper.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

struct ReachInput {
  const RunTrace* trace = nullptr;       // a run that probed every call site
  std::vector<TensorStats> outputs;      // that run's outputs, in order
  const WrapperInfo* wrapper = nullptr;  // moves, output names, graph inputs
  ReturnedBy returned_by;                // buffers extern calls create
  std::set<std::string> inf_by_design;   // kernels whose own code writes an infinity literal
  std::vector<TensorStats> inputs;       // the graph inputs' statistics, in input order
};

struct OutputOrigin {
  int output = 0;                   // 0-based output index
  std::set<int> sites;              // call sites its NaN/Inf come from
  std::vector<std::string> inputs;  // graph inputs they come from
};

struct Reach {
  bool followed = false;              // every non-finite output traced to where it came from
  std::string why_not;                // when not
  std::optional<int> culprit;         // the earliest site the first non-finite output's values come from
  std::string culprit_constant;       // the constant it read them from, where they entered there; "" when made
  std::optional<int> output;          // that output
  std::vector<OutputOrigin> origins;  // every non-finite output's origins, in output order
  // Sites other than the culprit whose NaN/Inf reach an output on their
  // own (independent origins), in run order, with the outputs they reach.
  struct Other {
    int site = 0;
    std::string kernel;
    std::vector<int> outputs;
    std::string source;  // its Python source lines, where the package carries them
  };
  std::vector<Other> other_origins;
  std::vector<HealedSite> healed;  // sites that made NaN/Inf that reach no output
  std::string others;              // whether the other non-finite outputs share the culprit
  std::string summary;             // "the NaN in output 0 come from call site 6 cpp_fused_sqrt_2; ..."
};

Reach trace_to_outputs(const ReachInput& in);

// Fills bisection.reach and bisection.healed from `r`.
void record_reach(Bisection& bis, const Reach& r);

// The self-check of call site `k` as the culprit of NaN/Inf, from a run that
// probed every one of the `launched` sites and was traced (`r.followed`):
// passes (nullopt) when the first non-finite output's values come from `k`;
// otherwise sets bisection.status and self_check and returns why `k` is not
// isolated (the values come from a graph input, or from another site).
std::optional<std::string> reach_check(Bisection& bis, int k, const Reach& r, int launched);

// A NaN/Inf search in which no step saw a site make them (it ends not
// found, or inconclusive when its last site does not confirm alone) while
// the inputs hold NaN/Inf: they come from the data. Sets bisection.status
// and reach, and returns the not-isolated reason; nullopt otherwise.
std::optional<std::string> nonfinite_from_inputs(Bisection& bis, const SearchResult& sr,
                                                 const std::vector<TensorStats>& input_stats);

}  // namespace aoti_bisect
