#pragma once
// What the wrapper says of a traced call site's arguments that its probes
// may not show (reach.cpp's walk asks): which it takes in place, which
// graph inputs and buffers it reads without a probe before its launch.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "evidence/evidence.hpp"
#include "evidence/reach.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// The wrapper's call site a traced site is (its settled wrapper site, else
// the same number), when the kernels agree; nullptr otherwise.
const CallSite* wrapper_site_of(const SiteTrace& s, const WrapperInfo& w);
// The names a site's kernel takes as in_out_ptr arguments.
std::set<std::string> in_place_names(const SiteTrace& s, const WrapperInfo& w);
// Graph inputs holding NaN/Inf that a site reads without a probe showing them.
std::vector<std::pair<std::string, const TensorStats*>> unprobed_bad_inputs(const SiteTrace& s, const ReachInput& in);
// Buffers a site reads that the probes did not show before its launch.
std::vector<std::string> unseen_buffers(const SiteTrace& s, const WrapperInfo& w);

}  // namespace aoti_bisect
