// The self-check before a culprit is isolated: whether the probes saw every call site, and whether the
// evidence run shows the culprit as the first site that faults or where the outputs' NaN/Inf come from.

#include "evidence/self_check.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/text.hpp"

namespace aoti_bisect {

std::optional<std::string> probes_miss_sites(const WrapperInfo& wrapper, int launched) {
  bool printed = wrapper.instrumented || wrapper.printer_level > 0;
  int always =
      static_cast<int>(std::count_if(wrapper.call_sites.begin(), wrapper.call_sites.end(),
                                     [&](const CallSite& c) { return c.branch.empty() && (!printed || c.probed); }));
  if (launched >= always) {
    return std::nullopt;
  }
  return fmt::format(
      "the instrumented run showed {} call sites, but the wrapper runs at least {} (outside torch.cond "
      "branches): the probes do not see them all",
      launched, always);
}

// Before claiming isolation: in the evidence run, which probed every site up
// to the culprit, the culprit must still be the first bad site. Says what
// was checked in bisection.self_check; returns why not, if it failed.
std::optional<std::string> self_check(Bisection& bis, const SelfCheckInput& in) {
  const int k = in.k;
  const RunTrace& ev = *in.evidence;
  const Reach* reach = in.reach;
  if (in.predicate == Predicate::mismatch) {
    bis.self_check = "not done: the wrong-values search compares each site with eager in its own steps";
    return std::nullopt;
  }
  if (reach != nullptr && reach->followed) {
    return reach_check(bis, k, *reach, in.launched);
  }
  std::optional<int> first;
  if (in.predicate == Predicate::nonfinite) {
    first = first_introducer(ev, 1, k, *in.returned_by, in.constant_sources, *in.inf_by_design);
  } else if (ev.sync_error) {
    first = ev.sync_error;
  } else if (ev.unfinished) {
    first = ev.unfinished;
  }
  std::vector<std::string> unprobed;
  for (int i = 1; i <= k; ++i) {
    if (ev.site(i) == nullptr) {
      unprobed.push_back(std::to_string(i));
    }
  }
  std::string what = in.predicate == Predicate::nonfinite ? "introduced NaN/Inf" : "faulted";
  std::string untraced = reach != nullptr && !reach->why_not.empty()
                             ? fmt::format(" (where the outputs' NaN/Inf come from was not traced: {})", reach->why_not)
                             : "";
  if (first && *first == k) {
    bis.self_check = unprobed.empty()
                         ? fmt::format("passed: one run probed call sites 1-{}; the first that {} was {}", k, what, k)
                         : fmt::format("passed, with call sites {} not seen by the probes", join(unprobed, ", "));
    bis.self_check += untraced;
    return std::nullopt;
  }
  bis.status = "self_check_failed";
  bis.self_check = first
                       ? fmt::format("failed: with every site up to {} probed, call site {} {} first", k, *first, what)
                       : fmt::format("failed: with every site up to {} probed, no site {}", k, what);
  bis.self_check += untraced;
  bis.message = bis.self_check;
  std::string seen = first ? fmt::format("saw call site {} {} first", *first, what) : "did not reproduce it";
  seen += untraced;
  if (in.predicate == Predicate::fault && in.cpu) {
    // A crash that moves with the probes' allocations (to an earlier site,
    // or past the last one): the heap, not a kernel, showed it.
    seen += first ? fmt::format(" (a CPU crash that moves between runs: {})",
                                k_memory_corruption_hint.substr(k_memory_corruption_hint.find("likely")))
                  : fmt::format(" inside a call site ({})", k_memory_corruption_hint);
  }
  return fmt::format(
      "not isolated: the search named call site {}, but the self-check run, probing every call site up "
      "to it, {}",
      k, seen);
}

}  // namespace aoti_bisect
