#pragma once
// The smallest set of a batch's samples that still fails, given an oracle
// that runs a set of samples and says whether it failed the same way
// (job/shrink.hpp runs them). Halves first: each step runs the first half
// of what is left and keeps it when it fails, else takes the second half
// without running it; the one sample reached is run to confirm, so one
// failing sample in a batch of B costs at most ceil(log2 B) + 1 runs. Where
// no single sample fails (the failure needs company), delta debugging
// (Zeller's ddmin: subsets, then complements, at finer and finer grain)
// from the smallest failing set found, within the budget. No set is run
// twice.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace aoti_bisect {

// Runs the samples (0-based rows, ascending); true: it failed the same way,
// false: it did not, nullopt: the run could not say (interrupted, could not
// test): the shrinking stops there.
using SampleOracle = std::function<std::optional<bool>(const std::vector<int64_t>& samples)>;

struct SampleShrink {
  std::vector<int64_t> samples;  // the smallest failing set found (the whole batch when none smaller failed)
  int runs = 0;                  // oracle calls
  bool minimal = false;          // no subset tried fails: one sample, or a set whose every one-smaller subset passed
  bool by_halves = false;        // found by halves alone (one sample that fails alone)
  bool stopped = false;          // the oracle stopped it, or the budget ran out, before a minimal set
  // Each sample of `samples` was run alone and passed (known only where it
  // was run): "neither alone".
  bool none_alone = false;
};

SampleShrink shrink_samples(int64_t batch, const SampleOracle& fails, int budget);

}  // namespace aoti_bisect
