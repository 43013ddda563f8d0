#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>

#include "bisect/bisect.hpp"

using namespace aoti_bisect;
using Status = SearchResult::Status;

namespace {

Probe answer(StepVerdict v, int runs = 1, int agreeing = 1, std::string note = "") {
  Probe p;
  p.verdict = v;
  p.runs = runs;
  p.agreeing = agreeing;
  p.note = std::move(note);
  return p;
}

// A deterministic failure whose first bad site is `culprit`; with `exact`,
// a reproducing answer also names it.
Oracle culprit_at(int culprit, int* calls, bool exact = false) {
  return [=](int lo, int hi) {
    ++*calls;
    bool in = lo <= culprit && culprit <= hi;
    Probe p = answer(in ? StepVerdict::reproduces : StepVerdict::clean);
    if (in && exact) {
      p.exact = culprit;
    }
    return p;
  };
}

// Answers the i-th call (0-based) with script[i] when given, else as `base`.
Oracle scripted(Oracle base, std::vector<std::optional<Probe>> script) {
  auto calls = std::make_shared<size_t>(0);
  return [=](int lo, int hi) {
    size_t i = (*calls)++;
    if (i < script.size() && script[i]) {
      return *script[i];
    }
    return base(lo, hi);
  };
}

int ceil_log2(int n) {
  int bits = 0;
  while ((1 << bits) < n) {
    ++bits;
  }
  return bits;
}

int floor_log2(int n) {
  int bits = 0;
  while ((2 << bits) <= n) {
    ++bits;
  }
  return bits;
}

using Row = std::tuple<int, int, std::string, StepVerdict>;

std::vector<Row> rows(const SearchResult& r) {
  std::vector<Row> out;
  for (const SearchStep& s : r.steps) {
    out.emplace_back(s.lo, s.hi, s.purpose, s.probe.verdict);
  }
  return out;
}

int count_purpose(const SearchResult& r, const std::string& purpose) {
  int k = 0;
  for (const SearchStep& s : r.steps) {
    k += s.purpose == purpose ? 1 : 0;
  }
  return k;
}

constexpr auto R = StepVerdict::reproduces;
constexpr auto C = StepVerdict::clean;
constexpr auto E = StepVerdict::error;
constexpr auto I = StepVerdict::inconclusive;

}  // namespace

TEST_SUITE_BEGIN("bisect");

TEST_CASE("find_first_bad at scale: up to 10,000 call sites in at most ceil(log2 n) + 3 runs (issue 40, item 4)") {
  // Where the trace of every site gives no exact answer (the bug's effect
  // is not visible at the site itself, a probe that cannot see it), the
  // search halves: the trace, ceil(log2 n) halvings, the confirmation, the
  // neighbour.
  for (int n : {100, 1000, 1024, 4097, 9999, 10000}) {
    for (int c : {1, 2, n / 3, n / 2, n - 1, n}) {
      CAPTURE(n);
      CAPTURE(c);
      int calls = 0;
      SearchResult r = find_first_bad(n, Strategy::automatic, culprit_at(c, &calls));
      CHECK(r.first == c);
      CHECK(r.confirmed);
      CHECK(calls <= ceil_log2(n) + 3);
      CHECK(r.runs == calls);
      calls = 0;
      r = find_first_bad(n, Strategy::bisect, culprit_at(c, &calls));
      CHECK(r.first == c);
      CHECK(calls <= ceil_log2(n) + 2);
      calls = 0;
      r = find_first_bad(n, Strategy::automatic, culprit_at(c, &calls, true));
      CHECK(r.first == c);
      CHECK(calls == 1);
    }
  }
}

TEST_CASE("find_first_bad, one culprit: every n in 1..64, every site, every strategy") {
  for (int n = 1; n <= 64; ++n) {
    int longest_halving = 0;
    for (int c = 1; c <= n; ++c) {
      for (Strategy s : all_strategies()) {
        CAPTURE(n);
        CAPTURE(c);
        CAPTURE(strategy_name(s));
        int calls = 0;
        SearchResult r = find_first_bad(n, s, culprit_at(c, &calls));
        REQUIRE(r.status == Status::found);
        CHECK(r.first == c);
        CHECK(static_cast<int>(r.steps.size()) == calls);
        CHECK(r.runs == calls);
        CHECK(r.message == "");
        CHECK(calls <= planned_oracle_calls(n, s));
        if (s == Strategy::linear) {
          CHECK(calls == c);
        }
        CHECK(r.confirmed);  // an oracle without exact answers: the search confirms
        if (s == Strategy::all || s == Strategy::automatic) {
          CHECK(r.steps.front().lo == 1);
          CHECK(r.steps.front().hi == n);
          CHECK(r.steps.front().purpose == "all");
        }
        if (s == Strategy::bisect) {
          int halving = count_purpose(r, "bisect");
          // mid = (lo+hi)/2 puts the extra site on the left, so a path takes
          // floor or ceil of log2 n halvings, and the longest takes ceil.
          CHECK(halving >= floor_log2(n));
          CHECK(halving <= ceil_log2(n));
          if ((n & (n - 1)) == 0) {
            CHECK(halving == ceil_log2(n));
          }
          longest_halving = std::max(longest_halving, halving);
          CHECK(calls <= ceil_log2(n) + 2);
          CHECK(count_purpose(r, "confirm") == 1);
          CHECK(count_purpose(r, "neighbour") == (c > 1 && n > 1 ? 1 : 0));
          CHECK(calls == halving + 1 + (c > 1 ? 1 : 0));
        }
      }
    }
    CAPTURE(n);
    CHECK(longest_halving == ceil_log2(n));
  }
}

TEST_CASE("find_first_bad, the steps as taken") {
  int calls = 0;
  SUBCASE("bisect, n = 8, culprit 6") {
    SearchResult r = find_first_bad(8, Strategy::bisect, culprit_at(6, &calls));
    CHECK(rows(r) == std::vector<Row>{{1, 4, "bisect", C},
                                      {5, 6, "bisect", R},
                                      {5, 5, "bisect", C},
                                      {6, 6, "confirm", R},
                                      {5, 5, "neighbour", C}});
    CHECK(r.first == 6);
  }
  SUBCASE("bisect, n = 5, culprit 1: no neighbour") {
    SearchResult r = find_first_bad(5, Strategy::bisect, culprit_at(1, &calls));
    CHECK(rows(r) ==
          std::vector<Row>{{1, 3, "bisect", R}, {1, 2, "bisect", R}, {1, 1, "bisect", R}, {1, 1, "confirm", R}});
    CHECK(r.first == 1);
  }
  SUBCASE("bisect, n = 1: confirm only") {
    SearchResult r = find_first_bad(1, Strategy::bisect, culprit_at(1, &calls));
    CHECK(rows(r) == std::vector<Row>{{1, 1, "confirm", R}});
    CHECK(r.status == Status::found);
  }
  SUBCASE("linear, n = 5, culprit 3: the clean step before stands for the neighbour") {
    SearchResult r = find_first_bad(5, Strategy::linear, culprit_at(3, &calls));
    CHECK(rows(r) == std::vector<Row>{{1, 1, "linear", C}, {2, 2, "linear", C}, {3, 3, "linear", R}});
    CHECK(r.first == 3);
  }
  SUBCASE("all without an exact answer falls back to bisect, keeping its step") {
    SearchResult r = find_first_bad(8, Strategy::all, culprit_at(6, &calls));
    CHECK(rows(r) == std::vector<Row>{{1, 8, "all", R},
                                      {1, 4, "bisect", C},
                                      {5, 6, "bisect", R},
                                      {5, 5, "bisect", C},
                                      {6, 6, "confirm", R},
                                      {5, 5, "neighbour", C}});
    CHECK(r.first == 6);
    CHECK(r.runs == 6);
  }
  SUBCASE("all, n = 1: the one-site range names its site") {
    SearchResult r = find_first_bad(1, Strategy::all, culprit_at(1, &calls));
    CHECK(rows(r) == std::vector<Row>{{1, 1, "all", R}});
    CHECK(r.first == 1);
  }
}

TEST_CASE("find_first_bad, an oracle that names the site") {
  int calls = 0;
  SUBCASE("bisect stops halving at the first reproducing step") {
    SearchResult r = find_first_bad(64, Strategy::bisect, culprit_at(37, &calls, true));
    // The site and its neighbour confirmed in one call: it names 37, not 36.
    CHECK(rows(r) == std::vector<Row>{{1, 32, "bisect", C}, {33, 48, "bisect", R}, {36, 37, "confirm", R}});
    CHECK(r.first == 37);
  }
  SUBCASE("all takes one call and one confirmation of the site with its neighbour") {
    SearchResult r = find_first_bad(64, Strategy::all, culprit_at(37, &calls, true));
    CHECK(rows(r) == std::vector<Row>{{1, 64, "all", R}, {36, 37, "confirm", R}});
    CHECK(r.first == 37);
    CHECK(calls == 2);
  }
  SUBCASE("the pair's exact site is the neighbour: not the first bad site") {
    Oracle o = scripted(culprit_at(37, &calls, true), {std::nullopt, [] {
                                                         Probe p = answer(R);
                                                         p.exact = 36;
                                                         return p;
                                                       }()});
    SearchResult r = find_first_bad(64, Strategy::all, o);
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "site 36 also reproduces alone, so site 37 is not the first bad site");
    CHECK_FALSE(r.first.has_value());
  }
  SUBCASE("the pair is clean: the site did not reproduce") {
    Oracle o = scripted(culprit_at(37, &calls, true), {std::nullopt, answer(C)});
    SearchResult r = find_first_bad(64, Strategy::all, o);
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "site 37 did not reproduce alone");
  }
  SUBCASE("the pair reproduces without naming a site: each alone after all") {
    Oracle o = scripted(culprit_at(37, &calls, true), {std::nullopt, answer(R)});
    SearchResult r = find_first_bad(64, Strategy::all, o);
    CHECK(rows(r) == std::vector<Row>{
                         {1, 64, "all", R}, {36, 37, "confirm", R}, {37, 37, "confirm", R}, {36, 36, "neighbour", C}});
    CHECK(r.first == 37);
  }
  SUBCASE("automatic: one call, the site found unconfirmed for the caller's next run to confirm") {
    SearchResult r = find_first_bad(64, Strategy::automatic, culprit_at(37, &calls, true));
    CHECK(rows(r) == std::vector<Row>{{1, 64, "all", R}});
    CHECK(r.status == Status::found);
    CHECK(r.first == 37);
    CHECK_FALSE(r.confirmed);
    CHECK(r.runs == 1);
  }
  SUBCASE("automatic, clean on [1, n]: not found, nothing to confirm") {
    Oracle o = scripted(culprit_at(37, &calls, true), {answer(C)});
    SearchResult r = find_first_bad(64, Strategy::automatic, o);
    CHECK(r.status == Status::not_found);
    CHECK_FALSE(r.first.has_value());
  }
  SUBCASE("automatic without an exact answer: bisect and confirm as all does") {
    SearchResult r = find_first_bad(8, Strategy::automatic, culprit_at(6, &calls));
    CHECK(rows(r).back() == Row{5, 5, "neighbour", C});
    CHECK(r.first == 6);
    CHECK(r.confirmed);
  }
  SUBCASE("every n and site") {
    for (int n = 1; n <= 64; ++n) {
      for (int c = 1; c <= n; ++c) {
        CAPTURE(n);
        CAPTURE(c);
        calls = 0;
        SearchResult r = find_first_bad(n, Strategy::all, culprit_at(c, &calls, true));
        CHECK(r.first == c);
        CHECK(calls == (n == 1 ? 1 : 2));
        calls = 0;
        r = find_first_bad(n, Strategy::bisect, culprit_at(c, &calls, true));
        CHECK(r.first == c);
        CHECK(count_purpose(r, "bisect") <= ceil_log2(n));
        calls = 0;
        r = find_first_bad(n, Strategy::automatic, culprit_at(c, &calls, true));
        CHECK(r.first == c);
        CHECK(calls == 1);
        CHECK(r.confirmed == (n == 1));
      }
    }
  }
}

TEST_CASE("find_first_bad, flaky and broken oracles") {
  int calls = 0;
  Oracle six = culprit_at(6, &calls);

  SUBCASE("runs that disagree stop the search, counts kept") {
    Oracle o = scripted(six, {std::nullopt, answer(I, 3, 2, "2 of 3 runs reproduced")});
    SearchResult r = find_first_bad(8, Strategy::bisect, o);
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "2 of 3 runs reproduced");
    CHECK(rows(r) == std::vector<Row>{{1, 4, "bisect", C}, {5, 6, "bisect", I}});
    CHECK(r.steps[1].probe.runs == 3);
    CHECK(r.steps[1].probe.agreeing == 2);
    CHECK(r.runs == 4);
    CHECK_FALSE(r.first.has_value());
  }
  SUBCASE("an inconclusive step without a note gets a message with its counts") {
    Oracle o = scripted(six, {answer(I, 5, 3)});
    SearchResult r = find_first_bad(8, Strategy::bisect, o);
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "the runs on [1, 4] disagreed: 3 of 5 agreed");
  }
  SUBCASE("an error on step 2 is an error, not a clean range") {
    Oracle o = scripted(six, {answer(C, 2, 2), answer(E, 1, 0, "runner exited with code 3: bad inputs")});
    SearchResult r = find_first_bad(8, Strategy::bisect, o);
    CHECK(r.status == Status::error);
    CHECK(r.message == "runner exited with code 3: bad inputs");
    CHECK(r.steps.size() == 2);
    CHECK(r.runs == 3);
  }
  SUBCASE("the culprit does not reproduce alone") {
    Oracle o = scripted(six, {std::nullopt, std::nullopt, std::nullopt, answer(C)});
    SearchResult r = find_first_bad(8, Strategy::bisect, o);
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "site 6 did not reproduce alone");
    CHECK(rows(r).back() == Row{6, 6, "confirm", C});
    CHECK(r.steps.size() == 4);
    CHECK_FALSE(r.first.has_value());
  }
  SUBCASE("the neighbour reproduces too") {
    Oracle o = scripted(six, {std::nullopt, std::nullopt, std::nullopt, std::nullopt, answer(R)});
    SearchResult r = find_first_bad(8, Strategy::bisect, o);
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "site 5 also reproduces alone, so site 6 is not the first bad site");
    CHECK(rows(r).back() == Row{5, 5, "neighbour", R});
    CHECK_FALSE(r.first.has_value());
  }
  SUBCASE("a confirmation that errors gives error") {
    Oracle o = scripted(six, {std::nullopt, std::nullopt, std::nullopt, answer(E, 1, 0, "timed out after 60 s")});
    SearchResult r = find_first_bad(8, Strategy::bisect, o);
    CHECK(r.status == Status::error);
    CHECK(r.message == "timed out after 60 s");
  }
  SUBCASE("a neighbour check that is inconclusive gives inconclusive") {
    Oracle o = scripted(six, {std::nullopt, std::nullopt, std::nullopt, std::nullopt, answer(I, 3, 2, "flaky")});
    SearchResult r = find_first_bad(8, Strategy::bisect, o);
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "flaky");
    CHECK(r.steps.size() == 5);
  }
  SUBCASE("n = 1 whose site does not reproduce") {
    SearchResult r = find_first_bad(1, Strategy::bisect, culprit_at(2, &calls));
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "site 1 did not reproduce alone");
  }
  SUBCASE("linear: no site reproduces") {
    SearchResult r = find_first_bad(5, Strategy::linear, culprit_at(9, &calls));
    CHECK(r.status == Status::not_found);
    CHECK(r.message == "none of the 5 call sites reproduced alone");
    CHECK(r.steps.size() == 5);
  }
  SUBCASE("linear: an error stops it") {
    Oracle o = scripted(six, {std::nullopt, answer(E, 1, 0, "segfault in the runner")});
    SearchResult r = find_first_bad(8, Strategy::linear, o);
    CHECK(r.status == Status::error);
    CHECK(r.message == "segfault in the runner");
    CHECK(r.steps.size() == 2);
  }
  SUBCASE("all: clean with every probe on") {
    SearchResult r = find_first_bad(8, Strategy::all, culprit_at(9, &calls));
    CHECK(r.status == Status::not_found);
    CHECK(r.message == "the failure did not reproduce with probes on every site");
    CHECK(r.steps.size() == 1);
  }
  SUBCASE("all: inconclusive stops it") {
    Oracle o = scripted(six, {answer(I, 4, 3, "3 of 4 runs reproduced")});
    SearchResult r = find_first_bad(8, Strategy::all, o);
    CHECK(r.status == Status::inconclusive);
    CHECK(r.message == "3 of 4 runs reproduced");
    CHECK(r.runs == 4);
  }
  SUBCASE("no call sites") {
    SearchResult r = find_first_bad(0, Strategy::bisect, six);
    CHECK(r.status == Status::error);
    CHECK(r.message == "there are no call sites to search (n = 0)");
    CHECK(calls == 0);
  }
}

TEST_CASE("find_first_bad, an exact site the oracle cannot mean") {
  int calls = 0;
  Oracle six = culprit_at(6, &calls);
  Probe outside = answer(R, 2, 2);
  outside.exact = 7;
  Probe clean_named = answer(C);
  clean_named.exact = 2;

  SUBCASE("outside the bisect range") {
    SearchResult r = find_first_bad(8, Strategy::bisect, scripted(six, {outside}));
    CHECK(r.status == Status::error);
    CHECK(r.message == "the oracle named site 7 as the first bad one, outside the tested range [1, 4]");
    CHECK(rows(r) == std::vector<Row>{{1, 4, "bisect", E}});
    CHECK(r.runs == 2);
    CHECK_FALSE(r.first.has_value());
  }
  SUBCASE("outside 1..n for all") {
    Probe beyond = answer(R);
    beyond.exact = 9;
    SearchResult r = find_first_bad(8, Strategy::all, scripted(six, {beyond}));
    CHECK(r.status == Status::error);
    CHECK(r.message == "the oracle named site 9 as the first bad one, outside the tested range [1, 8]");
    CHECK(r.steps.size() == 1);
  }
  SUBCASE("named for a range called clean") {
    SearchResult r = find_first_bad(8, Strategy::bisect, scripted(six, {clean_named}));
    CHECK(r.status == Status::error);
    CHECK(r.message == "the oracle named site 2 as the first bad one but called the range [1, 4] clean");
  }
}

TEST_CASE("strategy names") {
  REQUIRE(all_strategies().size() == 4);
  CHECK(all_strategies().front() == Strategy::automatic);  // the default, first in --help
  CHECK(strategy_name(Strategy::automatic) == "auto");
  CHECK(strategy_name(Strategy::bisect) == "bisect");
  CHECK(strategy_name(Strategy::linear) == "linear");
  CHECK(strategy_name(Strategy::all) == "all");
  for (Strategy s : all_strategies()) {
    CHECK(strategy_from_name(strategy_name(s)) == s);
    CHECK_FALSE(strategy_help(s).empty());
  }
  CHECK(strategy_from_name("Bisect") == std::nullopt);
  CHECK(strategy_from_name("") == std::nullopt);
  CHECK(strategy_from_name("binary") == std::nullopt);
}

TEST_CASE("verdict and status names") {
  CHECK(step_verdict_name(StepVerdict::reproduces) == "reproduces");
  CHECK(step_verdict_name(StepVerdict::clean) == "clean");
  CHECK(step_verdict_name(StepVerdict::inconclusive) == "inconclusive");
  CHECK(step_verdict_name(StepVerdict::error) == "error");
  CHECK(search_status_name(Status::found) == "found");
  CHECK(search_status_name(Status::not_found) == "not_found");
  CHECK(search_status_name(Status::inconclusive) == "inconclusive");
  CHECK(search_status_name(Status::error) == "error");
}

TEST_CASE("planned_oracle_calls") {
  for (Strategy s : all_strategies()) {
    CHECK(planned_oracle_calls(1, s) == 1);
    CHECK(planned_oracle_calls(0, s) == 0);
  }
  CHECK(planned_oracle_calls(2, Strategy::bisect) == 3);
  CHECK(planned_oracle_calls(3, Strategy::bisect) == 4);
  CHECK(planned_oracle_calls(8, Strategy::bisect) == 5);
  CHECK(planned_oracle_calls(9, Strategy::bisect) == 6);
  CHECK(planned_oracle_calls(1000, Strategy::bisect) == 12);
  CHECK(planned_oracle_calls(8, Strategy::linear) == 8);
  CHECK(planned_oracle_calls(1000, Strategy::linear) == 1000);
  CHECK(planned_oracle_calls(8, Strategy::all) == 6);
  CHECK(planned_oracle_calls(1000, Strategy::all) == 13);
  CHECK(planned_oracle_calls(1000, Strategy::automatic) == 13);
}
