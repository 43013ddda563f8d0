// The search for the first bad call site over an oracle: the strategies' table, halving, one site at a time,
// one run probing all, and the check that a site reproduces alone while its neighbour before it does not.

#include "bisect/bisect.hpp"

#include <fmt/format.h>

#include "common/by_name.hpp"

namespace aoti_bisect {
namespace {

using Status = SearchResult::Status;

struct StrategyInfo {
  Strategy strategy;
  std::string_view name;
  std::string_view help;
};

// One source for names, validation and help text.
const std::vector<StrategyInfo>& strategy_table() {
  static const std::vector<StrategyInfo> table = {
      {Strategy::automatic, "auto",
       "probe every call site in the trace run and let the evidence run confirm the site it names: two runs; "
       "bisect where the failure is flaky or a device fault (default)"},
      {Strategy::bisect, "bisect", "halve the range of call sites, about log2(N) steps"},
      {Strategy::linear, "linear", "test call sites one by one from the first"},
      {Strategy::all, "all", "one run with every probe on; falls back to bisect"},
  };
  return table;
}

int ceil_log2(int n) {
  int bits = 0;
  while ((1LL << bits) < n) {
    ++bits;
  }
  return bits;
}

// A verdict the search can act on: the range holds the first bad site or not.
struct Answer {
  bool reproduces = false;
  std::optional<int> exact;
};

// Why an answer cannot be trusted, if it cannot: an exact site outside the
// tested range, or one named for a range the oracle calls clean.
std::optional<std::string> broken_exact(const Probe& p, int lo, int hi) {
  if (!p.exact || (p.verdict != StepVerdict::reproduces && p.verdict != StepVerdict::clean)) {
    return std::nullopt;
  }
  if (*p.exact < lo || *p.exact > hi) {
    return fmt::format("the oracle named site {} as the first bad one, outside the tested range [{}, {}]", *p.exact, lo,
                       hi);
  }
  if (p.verdict == StepVerdict::clean) {
    return fmt::format("the oracle named site {} as the first bad one but called the range [{}, {}] clean", *p.exact,
                       lo, hi);
  }
  return std::nullopt;
}

// One search: records every oracle call; each phase returns as soon as a
// step settles the result or cannot be acted on.
class Search {
 public:
  explicit Search(const Oracle& oracle) : m_oracle(oracle) {}

  // Tests [lo, hi] as `purpose`. An inconclusive or error answer (or an
  // untrustworthy exact site) stops the search with that status: nullopt.
  std::optional<Answer> ask(int lo, int hi, std::string_view purpose) {
    Probe p = m_oracle(lo, hi);
    if (auto broken = broken_exact(p, lo, hi)) {
      p.verdict = StepVerdict::error;
      p.note = *broken;
    }
    m_result.steps.push_back(SearchStep{lo, hi, std::string(purpose), p});
    switch (p.verdict) {
      case StepVerdict::reproduces: m_names_exact = p.exact.has_value(); return Answer{true, p.exact};
      case StepVerdict::clean: return Answer{false, std::nullopt};
      case StepVerdict::inconclusive:
        stop(Status::inconclusive, !p.note.empty() ? p.note
                                                   : fmt::format("the runs on [{}, {}] disagreed: {} of {} agreed", lo,
                                                                 hi, p.agreeing, p.runs));
        return std::nullopt;
      case StepVerdict::error: break;
    }
    stop(Status::error, !p.note.empty() ? p.note : fmt::format("the range [{}, {}] could not be tested", lo, hi));
    return std::nullopt;
  }

  // Halves [lo, hi], which holds the first bad site, down to one site.
  std::optional<int> halve(int lo, int hi) {
    while (lo < hi) {
      int mid = lo + (hi - lo) / 2;
      std::optional<Answer> a = ask(lo, mid, "bisect");
      if (!a) {
        return std::nullopt;
      }
      if (a->reproduces && a->exact) {
        return *a->exact;
      }
      if (a->reproduces) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }

  // Site k alone must reproduce, and its neighbour before it must not.
  // Where the oracle names the exact site (its last reproducing answer
  // did), one run probing both answers both: [k-1, k] reproducing at k (at
  // k-1 the neighbour reproduces too).
  void confirm(int k) {
    if (k > 1 && m_names_exact) {
      std::optional<Answer> pair = ask(k - 1, k, "confirm");
      if (!pair) {
        return;
      }
      if (!pair->reproduces) {
        stop(Status::inconclusive, fmt::format("site {} did not reproduce alone", k));
        return;
      }
      if (pair->exact == k) {
        found(k);
        return;
      }
      if (pair->exact == k - 1) {
        stop(Status::inconclusive,
             fmt::format("site {} also reproduces alone, so site {} is not the first bad site", k - 1, k));
        return;
      }
      // No exact site: each alone, as below.
    }
    std::optional<Answer> alone = ask(k, k, "confirm");
    if (!alone) {
      return;
    }
    if (!alone->reproduces) {
      stop(Status::inconclusive, fmt::format("site {} did not reproduce alone", k));
      return;
    }
    if (k > 1) {
      std::optional<Answer> before = ask(k - 1, k - 1, "neighbour");
      if (!before) {
        return;
      }
      if (before->reproduces) {
        stop(Status::inconclusive,
             fmt::format("site {} also reproduces alone, so site {} is not the first bad site", k - 1, k));
        return;
      }
    }
    found(k);
  }

  void bisect(int lo, int hi) {
    if (std::optional<int> k = halve(lo, hi)) {
      confirm(*k);
    }
  }

  // Each site alone; a clean site before the found one is its neighbour check.
  void linear(int n) {
    for (int k = 1; k <= n; ++k) {
      std::optional<Answer> a = ask(k, k, "linear");
      if (!a) {
        return;
      }
      if (a->reproduces) {
        found(k);
        return;
      }
    }
    stop(Status::not_found, fmt::format("none of the {} call sites reproduced alone", n));
  }

  // `caller_confirms`: an exact site is returned unconfirmed (automatic).
  void all(int n, bool caller_confirms = false) {
    std::optional<Answer> a = ask(1, n, "all");
    if (!a) {
      return;
    }
    if (!a->reproduces) {
      stop(Status::not_found, "the failure did not reproduce with probes on every site");
    } else if (n == 1) {
      found(1);  // a one-site range names its site; confirming would repeat the call
    } else if (a->exact && caller_confirms) {
      found(*a->exact);
      m_result.confirmed = false;
    } else if (a->exact) {
      confirm(*a->exact);
    } else {
      bisect(1, n);
    }
  }

  SearchResult finish() {
    for (const SearchStep& s : m_result.steps) {
      m_result.runs += s.probe.runs;
    }
    return std::move(m_result);
  }

  void stop(Status status, std::string message) {
    m_result.status = status;
    m_result.message = std::move(message);
  }

 private:
  void found(int k) {
    m_result.status = Status::found;
    m_result.first = k;
  }

  const Oracle& m_oracle;
  SearchResult m_result;
  bool m_names_exact = false;  // the last reproducing answer named its exact site
};

}  // namespace

std::string_view step_verdict_name(StepVerdict v) {
  switch (v) {
    case StepVerdict::reproduces: return "reproduces";
    case StepVerdict::clean: return "clean";
    case StepVerdict::inconclusive: return "inconclusive";
    case StepVerdict::error: return "error";
  }
  return "error";
}

std::string_view strategy_name(Strategy s) {
  for (const StrategyInfo& info : strategy_table()) {
    if (info.strategy == s) {
      return info.name;
    }
  }
  return "bisect";
}

std::string_view strategy_help(Strategy s) {
  for (const StrategyInfo& info : strategy_table()) {
    if (info.strategy == s) {
      return info.help;
    }
  }
  return "";
}

std::optional<Strategy> strategy_from_name(std::string_view name) {
  return find_by_name(strategy_table(), name, [](const StrategyInfo& info) { return info.strategy; });
}

const std::vector<Strategy>& all_strategies() {
  static const std::vector<Strategy> strategies = [] {
    std::vector<Strategy> out;
    for (const StrategyInfo& info : strategy_table()) {
      out.push_back(info.strategy);
    }
    return out;
  }();
  return strategies;
}

std::string_view search_status_name(SearchResult::Status s) {
  switch (s) {
    case Status::found: return "found";
    case Status::not_found: return "not_found";
    case Status::inconclusive: return "inconclusive";
    case Status::error: return "error";
  }
  return "error";
}

SearchResult find_first_bad(int n, Strategy strategy, const Oracle& oracle) {
  Search search(oracle);
  if (n < 1) {
    search.stop(Status::error, fmt::format("there are no call sites to search (n = {})", n));
  } else if (strategy == Strategy::linear) {
    search.linear(n);
  } else if (strategy == Strategy::all || strategy == Strategy::automatic) {
    search.all(n, strategy == Strategy::automatic);
  } else if (n == 1) {
    search.confirm(1);
  } else {
    search.bisect(1, n);
  }
  return search.finish();
}

int planned_oracle_calls(int n, Strategy strategy) {
  if (n < 1) {
    return 0;
  }
  if (n == 1) {
    return 1;
  }
  switch (strategy) {
    case Strategy::linear: return n;
    case Strategy::all:
    case Strategy::automatic: return 1 + ceil_log2(n) + 2;
    case Strategy::bisect: break;
  }
  return ceil_log2(n) + 2;
}

}  // namespace aoti_bisect
