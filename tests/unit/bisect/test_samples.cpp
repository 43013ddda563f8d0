#include <algorithm>
#include <cmath>
#include <set>

#include <doctest/doctest.h>

#include "bisect/samples.hpp"

using namespace aoti_bisect;

namespace {

// An oracle that fails when the set holds every sample of `needed`; counts
// its calls and checks no set is run twice.
struct Needs {
  std::vector<int64_t> needed;
  std::set<std::vector<int64_t>> asked;
  int calls = 0;
  std::optional<bool> operator()(const std::vector<int64_t>& s) {
    ++calls;
    CHECK(asked.insert(s).second);
    return std::all_of(needed.begin(), needed.end(),
                       [&](int64_t k) { return std::find(s.begin(), s.end(), k) != s.end(); });
  }
};

}  // namespace

TEST_SUITE_BEGIN("bisect/samples");

TEST_CASE("shrink_samples: one failing sample in a batch of B, in at most ceil(log2 B) + 1 runs, wherever it is") {
  for (int64_t batch : {2, 3, 5, 8, 16, 17, 100}) {
    for (int64_t bad = 0; bad < batch; ++bad) {
      Needs oracle{{bad}};
      SampleShrink s = shrink_samples(batch, std::ref(oracle), 64);
      CAPTURE(batch);
      CAPTURE(bad);
      CHECK(s.samples == std::vector<int64_t>{bad});
      CHECK(s.minimal);
      CHECK(s.by_halves);
      CHECK_FALSE(s.stopped);
      CHECK(s.runs == oracle.calls);
      CHECK(s.runs <= static_cast<int>(std::ceil(std::log2(static_cast<double>(batch)))) + 1);
    }
  }
}

TEST_CASE("shrink_samples: two samples that fail only together; neither alone") {
  Needs oracle{{2, 6}};
  SampleShrink s = shrink_samples(8, std::ref(oracle), 64);
  CHECK(s.samples == std::vector<int64_t>{2, 6});
  CHECK(s.minimal);
  CHECK_FALSE(s.by_halves);
  CHECK(s.none_alone);
  CHECK(s.runs == oracle.calls);
}

TEST_CASE("shrink_samples: three needed, and a budget that runs out says it stopped") {
  Needs oracle{{1, 4, 7}};
  SampleShrink s = shrink_samples(8, std::ref(oracle), 64);
  CHECK(s.samples == std::vector<int64_t>{1, 4, 7});
  CHECK(s.minimal);
  CHECK(s.none_alone);  // ddmin ran each one alone on its way

  Needs again{{1, 4, 7}};
  s = shrink_samples(64, std::ref(again), 5);
  CHECK(s.stopped);
  CHECK_FALSE(s.minimal);
  CHECK(s.runs == 5);
  for (int64_t k : {1, 4, 7}) {
    CHECK(std::find(s.samples.begin(), s.samples.end(), k) != s.samples.end());  // still a failing set
  }
}

TEST_CASE("shrink_samples: a run that cannot say stops it with the smallest failing set known") {
  int calls = 0;
  SampleShrink s = shrink_samples(
      8,
      [&](const std::vector<int64_t>& set) -> std::optional<bool> {
        if (++calls == 2) {
          return std::nullopt;
        }
        return std::find(set.begin(), set.end(), 1) != set.end();
      },
      64);
  CHECK(s.stopped);
  CHECK(s.samples == std::vector<int64_t>{0, 1, 2, 3});  // the first half failed, then the run could not say
}

TEST_CASE("shrink_samples: a failure every set shows needs only the first sample") {
  SampleShrink s = shrink_samples(
      4, [](const std::vector<int64_t>&) -> std::optional<bool> { return true; }, 64);
  CHECK(s.samples == std::vector<int64_t>{0});
  CHECK(s.runs == 2);
}
