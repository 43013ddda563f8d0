// find_by_name: the one lookup of an enum by its name (common/by_name.hpp),
// and the four lookups built on it.

#include <doctest/doctest.h>

#include "bisect/bisect.hpp"
#include "classify/outcome.hpp"
#include "common/by_name.hpp"
#include "harness/probe_source.hpp"
#include "protocol/probe_plan.hpp"

using namespace aoti_bisect;

namespace {
struct Row {
  std::string_view name;
  int value;
};
}  // namespace

TEST_CASE("find_by_name: the first row of that name, rows with a name member or names themselves") {
  const Row rows[] = {{"a", 1}, {"b", 2}, {"b", 3}};
  CHECK(find_by_name(rows, "b", [](const Row& r) { return r.value; }) == 2);
  CHECK_FALSE(find_by_name(rows, "c", [](const Row& r) { return r.value; }).has_value());
  CHECK_FALSE(find_by_name(rows, "", [](const Row& r) { return r.value; }).has_value());
  constexpr std::string_view names[] = {"x", "y"};
  CHECK(find_by_name(names, "y", [&](const std::string_view& n) { return &n - names; }) == 1);
}

TEST_CASE("the enums' lookups by name give back what their names name") {
  CHECK(outcome_from_name("nonfinite") == OutcomeKind::nonfinite);
  CHECK(outcome_from_name(outcome_name(OutcomeKind::timeout)) == OutcomeKind::timeout);
  CHECK_FALSE(outcome_from_name("NaN").has_value());
  CHECK(probe_mode_from_name("stats") == ProbeMode::stats);
  CHECK(probe_mode_from_name("off") == ProbeMode::off);
  CHECK(probe_mode_from_name("save") == ProbeMode::save);
  CHECK_FALSE(probe_mode_from_name("all").has_value());
  CHECK(strategy_from_name("linear") == Strategy::linear);
  CHECK_FALSE(strategy_from_name("halves").has_value());
  CHECK(probe_source_from_name("interpose") == ProbeSource::interpose);
  CHECK_FALSE(probe_source_from_name("printer").has_value());
}
