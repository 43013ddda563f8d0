#pragma once
// Masked NaN/Inf: after a run whose outputs are clean, one run probing every
// call site of the package's own code (the interposition hooks), traced as
// the search traces NaN/Inf to the outputs (evidence/reach.hpp): a site
// that makes NaN/Inf none of which reach an output, because a later site
// cleans them (nan_to_num, a where, a clamp) or nothing reads them, is a
// mask. verify tells a fix from a mask by it ("the outputs are clean, but
// call site 1 still makes 16 NaN that call site 3 cleans"); `run
// --check-masked` reports it beside a clean verdict. Infinity written by a
// kernel's own literal (an attention mask's -inf) is by design, not a mask.

#include <string>
#include <vector>

#include "report/report.hpp"
#include "search/instrumentation.hpp"

namespace aoti_bisect {

struct MaskScan {
  bool scanned = false;            // the probed run ran and was read
  std::vector<HealedSite> masked;  // in run order
  std::string note;                // why not scanned ("" when it was)
};

// One probed run under `setup`'s environment and inputs (group "masks").
MaskScan scan_for_masks(JobContext& job, const BisectSetup& setup);

// "call site 1 cpp_fused_div_0 makes 16 NaN in buf1, which call site 3
// cpp_fused_nan_to_num_1 cleans"
std::string mask_sentence(const HealedSite& h);

}  // namespace aoti_bisect
