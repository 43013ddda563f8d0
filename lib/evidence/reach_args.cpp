// What the wrapper says of a traced call site's arguments for the reach walk: its wrapper call site,
// the arguments it takes in place, and the graph inputs and buffers it reads without a probe.

#include "evidence/reach_args.hpp"

#include <algorithm>

namespace aoti_bisect {

// The wrapper's call site a traced site is (its settled wrapper site, else
// the same number), when the kernels agree.
const CallSite* wrapper_site_of(const SiteTrace& s, const WrapperInfo& w) {
  int at = s.wrapper_site > 0 ? s.wrapper_site : s.site;
  if (at < 1 || static_cast<size_t>(at) > w.call_sites.size() || w.call_sites[at - 1].kernel != s.kernel) {
    return nullptr;
  }
  return &w.call_sites[at - 1];
}

// The names a site's kernel takes as in_out_ptr arguments (ReachWalk::visit
// decides whether each was read: when its bytes were written before).
std::set<std::string> in_place_names(const SiteTrace& s, const WrapperInfo& w) {
  std::set<std::string> out;
  const CallSite* found = wrapper_site_of(s, w);
  if (found == nullptr) {
    return out;
  }
  const CallSite& site = *found;
  for (int i : site.in_out) {
    if (i >= 0 && static_cast<size_t>(i) < site.args.size()) {
      out.insert(site.args[i]);
    }
  }
  return out;
}

// Graph inputs holding NaN/Inf that a site reads without a probe showing
// them (a view of the input, which a level-1 build does not probe).
std::vector<std::pair<std::string, const TensorStats*>> unprobed_bad_inputs(const SiteTrace& s, const ReachInput& in) {
  std::vector<std::pair<std::string, const TensorStats*>> out;
  const WrapperInfo& w = *in.wrapper;
  const CallSite* site = wrapper_site_of(s, w);
  if (site == nullptr) {
    return out;
  }
  for (const auto& arg : site->args) {
    std::string base = base_tensor_name(arg);
    if (!is_graph_input_name(base) || s.find(arg) != nullptr || s.find(base) != nullptr) {
      continue;
    }
    for (const auto& spec : w.inputs) {
      auto i = static_cast<size_t>(spec.index);
      if (spec.name == base && i < in.inputs.size() && in.inputs[i].nonfinite() > 0) {
        out.emplace_back(base, &in.inputs[i]);
      }
    }
  }
  return out;
}

// Buffers a site reads that the probes did not show before its launch (a
// level-1 build probes an extern call whose tensor arguments are views
// only after it: `addmm_out(buf122, bias, view of buf121, weight)` shows
// buf122 alone). Graph inputs are unprobed_bad_inputs', constants enter
// where a probe shows them, and what an extern call creates it writes.
std::vector<std::string> unseen_buffers(const SiteTrace& s, const WrapperInfo& w) {
  std::vector<std::string> out;
  const CallSite* found = wrapper_site_of(s, w);
  if (found == nullptr) {
    return out;
  }
  const CallSite& site = *found;
  for (const auto& arg : site.args) {
    std::string base = base_tensor_name(arg);
    if (arg.empty() || !is_tensor_variable_name(base) || is_graph_input_name(base) ||
        std::find(w.constants.begin(), w.constants.end(), base) != w.constants.end() ||
        std::find(site.returns.begin(), site.returns.end(), base) != site.returns.end()) {
      continue;
    }
    if (s.find(arg) != nullptr || s.find(base) != nullptr) {
      continue;  // shown (before the launch, or after it only: what the call writes)
    }
    out.push_back(base);
  }
  return out;
}

}  // namespace aoti_bisect
