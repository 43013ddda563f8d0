#pragma once
// The search for the first bad call site. It knows only index ranges and an
// oracle that answers, for a range, whether the first bad call site lies in
// it. What "bad" means (a fault, a NaN introduced, a divergence) and how a
// range is tested (which probes, which child runs) is the oracle's business.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

enum class StepVerdict {
  reproduces,    // the first bad site is in the tested range
  clean,         // it is not
  inconclusive,  // the runs disagreed (flaky)
  error,         // the tool could not test (a broken run, not a clean one)
};
std::string_view step_verdict_name(StepVerdict v);

// One test of a range [lo, hi] (1-based, inclusive), as the oracle answers it.
struct Probe {
  StepVerdict verdict = StepVerdict::error;
  std::optional<int> exact;  // when the runs also tell which site in range is the first bad one;
                             // only with `reproduces` and within [lo, hi], else the step is an error
  int runs = 0;              // child runs this answer took
  int agreeing = 0;          // how many of them agreed with `verdict`
  std::string note;          // e.g. the error line of an `error`
};

// Tests whether the first bad site lies in [lo, hi]. Precondition: the
// search has established that it lies in [lo, N].
using Oracle = std::function<Probe(int lo, int hi)>;

enum class Strategy { automatic, bisect, linear, all };
std::string_view strategy_name(Strategy s);
std::optional<Strategy> strategy_from_name(std::string_view name);
std::string_view strategy_help(Strategy s);  // one line for --help
const std::vector<Strategy>& all_strategies();

struct SearchStep {
  int lo = 0;
  int hi = 0;
  std::string purpose;  // "bisect", "linear", "all", "confirm", "neighbour"
  Probe probe;
};

struct SearchResult {
  enum class Status { found, not_found, inconclusive, error };
  Status status = Status::not_found;
  std::optional<int> first;       // the first bad site (found)
  bool confirmed = true;          // false: `first` is found but unconfirmed (automatic): the caller's next run must
                                  // show it again before it is trusted
  std::vector<SearchStep> steps;  // every oracle call, in order
  int runs = 0;                   // sum of probe.runs
  std::string message;            // why, for inconclusive / error / not_found
};
std::string_view search_status_name(SearchResult::Status s);

// Finds the first bad site among 1..n (n >= 1), given that one exists.
//  - bisect: halves [lo, hi] until one site is left (an exact answer from
//    the oracle ends the halving early); about ceil(log2 n) oracle calls.
//  - linear: [1,1], [2,2], ... until one reproduces.
//  - all: one call on [1, n]; needs an exact answer, else it falls back to
//    bisect.
//  - automatic: as all, but an exact answer on [1, n] is returned found and
//    unconfirmed (`confirmed` false): the caller confirms it with the run it
//    makes next anyway (the evidence run), and may answer [1, n] from a run
//    it made already (the trace). Without an exact answer, as all.
// Then confirms: the site alone must reproduce ("confirm"), and its
// neighbour before it, if any, must be clean ("neighbour"). A failed
// confirmation is `inconclusive`. An inconclusive or error step stops the
// search with that status.
SearchResult find_first_bad(int n, Strategy strategy, const Oracle& oracle);

// Upper bound of oracle calls for the plan printed before a search starts.
int planned_oracle_calls(int n, Strategy strategy);

}  // namespace aoti_bisect
