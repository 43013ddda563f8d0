#pragma once
// What report.json's two files share (internal to lib/report): sink_json.cpp
// writes the report, sink_json_culprit.cpp its culprit and its search.

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report.hpp"

namespace aoti_bisect::report_json {

using Json = nlohmann::ordered_json;

// A number, or "nan", "inf", "-inf" where it is not finite; null when absent.
Json number(double v);
Json number(const std::optional<double>& v);

template <typename T>
Json value_or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// A tensor's statistics (sink_json.cpp).
Json stats_json(const TensorStats& s);

// The culprit, the sources a search passed over and the bisection
// (sink_json_culprit.cpp); null where there is no culprit or bisection.
Json culprit_json(const std::optional<Culprit>& c);
Json passed_over_json(const std::vector<PassedOver>& items);
Json bisection_json(const std::optional<Bisection>& b);
Json masked_json(const std::optional<std::vector<HealedSite>>& masked);  // --check-masked; null when not looked

}  // namespace aoti_bisect::report_json
