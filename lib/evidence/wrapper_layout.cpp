// What the wrapper's layout says about a run: which torch.cond branch ran
// (settle_branches) and where the printer left call sites without probes
// (blind_spots).
#include "evidence/wrapper_layout.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"

namespace aoti_bisect {

namespace {

// "true_graph_0" <-> "false_graph_0"; "" for anything else.
std::string sibling_branch(const std::string& b) {
  for (auto [from, to] : {std::pair<std::string_view, std::string_view>{"true_graph_", "false_graph_"},
                          {"false_graph_", "true_graph_"}}) {
    if (b.rfind(from, 0) == 0) {
      return std::string(to) + b.substr(from.size());
    }
  }
  return "";
}

}  // namespace

void settle_branches(RunTrace& trace, const WrapperInfo& w) {
  const auto& sites = w.call_sites;
  std::map<std::string, int> count;
  for (const auto& s : sites) {
    ++count[s.kernel];
  }
  std::set<std::string> ran;
  for (const auto& [k, s] : trace.sites) {
    int at = s.wrapper_site;
    if (at >= 1 && static_cast<size_t>(at) <= sites.size() && sites[at - 1].kernel == s.kernel &&
        count[s.kernel] == 1 && !sites[at - 1].branch.empty()) {
      ran.insert(sites[at - 1].branch);
    }
  }
  std::set<std::string> skipped;
  for (const auto& b : ran) {
    std::string other = sibling_branch(b);
    if (!other.empty() && !ran.count(other)) {
      skipped.insert(other);
    }
  }
  if (skipped.empty()) {
    return;
  }
  size_t cursor = 0;
  for (auto& [k, s] : trace.sites) {
    if (s.kernel.empty()) {
      continue;
    }
    for (size_t pass = 0, found = 0; pass < 2 && !found; ++pass) {
      for (size_t i = pass == 0 ? cursor : 0; i < sites.size(); ++i) {
        if (sites[i].kernel == s.kernel && !skipped.count(sites[i].branch)) {
          s.wrapper_site = static_cast<int>(i) + 1;
          cursor = i + 1;
          found = 1;
          break;
        }
      }
    }
  }
}

std::vector<BlindSpot> blind_spots(const WrapperInfo& w) {
  std::vector<BlindSpot> out;
  if (w.printer_level == 0) {
    return out;
  }
  int probed = 0;
  for (const auto& site : w.call_sites) {
    if (site.probed) {
      ++probed;
      continue;
    }
    if (out.empty() || out.back().after != probed) {
      out.push_back(BlindSpot{probed, {}});
    }
    out.back().kernels.push_back(site.kernel);
    out.back().outside_control_flow = out.back().outside_control_flow || site.branch.empty();
  }
  return out;
}

std::string describe(const BlindSpot& spot) {
  std::string where =
      spot.after == 0 ? "before call site 1" : fmt::format("between call sites {} and {}", spot.after, spot.after + 1);
  return fmt::format("{} ({})", where, join(spot.kernels, ", "));
}

std::string call_sites_differ(const WrapperInfo& package, const WrapperInfo& build, std::string_view build_name) {
  const auto& a = package.call_sites;
  const auto& b = build.call_sites;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i].kernel != b[i].kernel) {
      return fmt::format("call site {} is {} in the package but {} in the {}", i + 1, a[i].kernel, b[i].kernel,
                         build_name);
    }
  }
  if (a.size() != b.size()) {
    return fmt::format("the package launches {} call sites, the {} {}", a.size(), build_name, b.size());
  }
  return "";
}

}  // namespace aoti_bisect
