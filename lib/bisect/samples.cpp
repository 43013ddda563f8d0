// Shrinking a failing batch to its smallest failing set of samples: halves first, then delta debugging
// (ddmin), each set run at most once and within the budget.

#include "bisect/samples.hpp"

#include <algorithm>
#include <map>

namespace aoti_bisect {

namespace {

class Tried {
 public:
  Tried(const SampleOracle& fails, int budget) : m_fails(fails), m_budget(budget) {}

  // The oracle's answer, run once per set; nullopt once stopped.
  std::optional<bool> operator()(const std::vector<int64_t>& set) {
    if (auto it = m_seen.find(set); it != m_seen.end()) {
      return it->second;
    }
    if (m_stopped || m_runs >= m_budget) {
      m_stopped = true;
      return std::nullopt;
    }
    ++m_runs;
    std::optional<bool> r = m_fails(set);
    if (!r) {
      m_stopped = true;
      return std::nullopt;
    }
    m_seen[set] = *r;
    return r;
  }
  // What a set showed, if it was run.
  std::optional<bool> seen(const std::vector<int64_t>& set) const {
    auto it = m_seen.find(set);
    return it == m_seen.end() ? std::nullopt : std::optional<bool>(it->second);
  }
  int runs() const { return m_runs; }
  bool stopped() const { return m_stopped; }

 private:
  const SampleOracle& m_fails;
  int m_budget;
  int m_runs = 0;
  bool m_stopped = false;
  std::map<std::vector<int64_t>, bool> m_seen;
};

std::vector<std::vector<int64_t>> split(const std::vector<int64_t>& set, size_t n) {
  std::vector<std::vector<int64_t>> out;
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t end = start + (set.size() - start) / (n - i);
    out.emplace_back(set.begin() + static_cast<std::ptrdiff_t>(start), set.begin() + static_cast<std::ptrdiff_t>(end));
    start = end;
  }
  return out;
}

std::vector<int64_t> without(const std::vector<int64_t>& set, const std::vector<int64_t>& part) {
  std::vector<int64_t> out;
  std::set_difference(set.begin(), set.end(), part.begin(), part.end(), std::back_inserter(out));
  return out;
}

}  // namespace

SampleShrink shrink_samples(int64_t batch, const SampleOracle& fails, int budget) {
  SampleShrink out;
  std::vector<int64_t> all;
  for (int64_t i = 0; i < batch; ++i) {
    all.push_back(i);
  }
  Tried run(fails, budget);
  // Halves.
  std::vector<int64_t> best = all;  // the smallest set known to fail
  std::vector<int64_t> left = all;
  bool verified = true;
  while (left.size() > 1) {
    std::vector<int64_t> first(left.begin(), left.begin() + static_cast<std::ptrdiff_t>(left.size() / 2));
    std::optional<bool> r = run(first);
    if (!r) {
      break;
    }
    if (*r) {
      left = first;
      best = first;
      verified = true;
    } else {
      left.erase(left.begin(), left.begin() + static_cast<std::ptrdiff_t>(left.size() / 2));
      verified = false;
    }
  }
  if (left.size() == 1 && !verified) {
    if (std::optional<bool> r = run(left); r && *r) {
      best = left;
      verified = true;
    }
  }
  if (left.size() == 1 && verified && !run.stopped()) {
    out.samples = left;
    out.by_halves = true;
    out.minimal = true;
    out.runs = run.runs();
    return out;
  }
  // Delta debugging from the smallest failing set found.
  size_t n = 2;
  while (best.size() >= 2 && !run.stopped()) {
    n = std::min(n, best.size());
    auto parts = split(best, n);
    bool reduced = false;
    for (const auto& part : parts) {
      if (std::optional<bool> r = run(part); r && *r) {
        best = part;
        n = 2;
        reduced = true;
        break;
      }
    }
    if (!reduced && n > 2) {
      for (const auto& part : parts) {
        std::vector<int64_t> rest = without(best, part);
        if (std::optional<bool> r = run(rest); r && *r) {
          best = rest;
          n = std::max<size_t>(n - 1, 2);
          reduced = true;
          break;
        }
      }
    }
    if (run.stopped()) {
      break;
    }
    if (!reduced) {
      if (n >= best.size()) {
        out.minimal = true;
        break;
      }
      n = std::min(best.size(), n * 2);
    }
  }
  out.minimal = out.minimal || best.size() == 1;
  out.samples = best;
  out.runs = run.runs();
  out.stopped = run.stopped() && !out.minimal;
  if (best.size() > 1) {
    out.none_alone = std::all_of(best.begin(), best.end(), [&](int64_t s) {
      std::optional<bool> r = run.seen({s});
      return r && !*r;
    });
  }
  return out;
}

}  // namespace aoti_bisect
