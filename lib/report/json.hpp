#pragma once
// JSON for the small values the runner sends in its events and the driver
// reads back (TensorInfo, TensorStats, Comparison). Non-finite doubles are
// written as the strings "nan", "inf", "-inf" and read back as such.

#include <nlohmann/json.hpp>

#include "report/report.hpp"

namespace aoti_bisect {

nlohmann::json json_number(double v);
double number_from_json(const nlohmann::json& j);

nlohmann::json to_json(const TensorInfo& t);
nlohmann::json to_json(const TensorStats& s);
nlohmann::json to_json(const Comparison& c);

TensorInfo tensor_info_from_json(const nlohmann::json& j);
TensorStats tensor_stats_from_json(const nlohmann::json& j);
Comparison comparison_from_json(const nlohmann::json& j);

}  // namespace aoti_bisect
