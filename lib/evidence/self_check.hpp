#pragma once
// The self-check before a culprit is isolated: the evidence run, which
// probed every site up to the culprit (every site, for NaN/Inf), must show it
// as the first site that faults, or as where the outputs' NaN/Inf come from
// (evidence/reach.hpp; the first site that made them when that could not be
// traced).

#include <optional>
#include <set>
#include <string>

#include "evidence/evidence.hpp"
#include "evidence/reach.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

struct SelfCheckInput {
  Predicate predicate = Predicate::fault;
  int k = 0;                           // the culprit the search named
  const RunTrace* evidence = nullptr;  // its evidence run
  const Reach* reach = nullptr;        // that run traced to the outputs (NaN/Inf), if it was
  int launched = 0;                    // call sites in the run
  const ReturnedBy* returned_by = nullptr;
  bool constant_sources = false;
  const std::set<std::string>* inf_by_design = nullptr;
  bool cpu = false;  // a CPU crash seen only after the sites returned: the heap
};

// Why a trace run that showed `launched` call sites does not see them all:
// fewer than the wrapper runs outside torch.cond branches (in a
// printer-instrumented build, fewer than it probes there: run-time numbers
// count probed sites). What an unseen site makes would be blamed on the next
// one seen. nullopt when it sees them.
std::optional<std::string> probes_miss_sites(const WrapperInfo& wrapper, int launched);

// Says what was checked in bisection.self_check (and sets its status when it
// failed); returns why `k` is not isolated, if it failed.
std::optional<std::string> self_check(Bisection& bis, const SelfCheckInput& in);

}  // namespace aoti_bisect
