#pragma once
// What the wrapper's layout says about a run (wrapper_layout.cpp): which
// torch.cond branch ran, and where an instrumented wrapper runs code without
// probes.

#include <string>
#include <string_view>
#include <vector>

#include "evidence/evidence.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// Which wrapper call site each site of a run was (SiteTrace::wrapper_site),
// settled with what the whole run shows: a kernel that appears once in the
// wrapper names the torch.cond branch that ran, so its sibling did not, and
// a kernel that appears in both (an extern call, `aoti_torch_cpu_addmm_out`)
// is matched, in order, among the sites outside the branches that did not
// run. The runner matches each call as it comes, by kernel (and, for probe
// calls, tensor names), and cannot know that yet. Unchanged when no branch
// is known to have run.
void settle_branches(RunTrace& trace, const WrapperInfo& wrapper);

// Where `build` (an instrumented or rebuilt build of the same model) does not
// launch the package's kernels in the package's order: one line ("call site 3
// is X in the package but Y in the {build_name}", or the two counts); "" where
// they are the same. The one check of it.
std::string call_sites_differ(const WrapperInfo& package, const WrapperInfo& build, std::string_view build_name);

// Code an instrumented wrapper runs without probes: call sites the printer
// skips (inside torch.cond branches and other control flow), grouped by the
// probed site they follow. Run-time site numbers count probed sites only, so
// what such code does shows up first at a later probed site.
struct BlindSpot {
  int after = 0;                      // the probed call site it follows (0: before the first)
  std::vector<std::string> kernels;   // the unprobed call sites, in source order
  bool outside_control_flow = false;  // one of them lies outside every torch.cond branch
};
std::vector<BlindSpot> blind_spots(const WrapperInfo& instrumented);
// "call sites 3 and 4 (aoti_torch_cpu_addmm_out, cpp_fused_log_2)"
std::string describe(const BlindSpot& spot);

}  // namespace aoti_bisect
