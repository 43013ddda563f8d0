// The runner's value types as JSON both ways (tensor info, statistics, comparisons, tolerances), with
// non-finite numbers as "nan"/"inf" strings; the tolerance table's lookups and merges.

#include "protocol/values.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"
#include "protocol/events.hpp"

namespace aoti_bisect {

nlohmann::json json_number(double v) {
  if (auto text = nonfinite_text(v)) {
    return *text;
  }
  return v;
}

double number_from_json(const nlohmann::json& j) {
  if (j.is_number()) {
    return j.get<double>();
  }
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "inf") {
      return std::numeric_limits<double>::infinity();
    }
    if (s == "-inf") {
      return -std::numeric_limits<double>::infinity();
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {
nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? json_number(*v) : nlohmann::json(nullptr);
}
std::optional<double> optional_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) {
    return std::nullopt;
  }
  return number_from_json(j[key]);
}
}  // namespace

nlohmann::json to_json(const TensorInfo& t) {
  nlohmann::json j = {{"name", t.name},
                      {"dtype", t.dtype},
                      {"shape", t.shape},
                      {"strides", t.strides},
                      {"storage_offset", t.storage_offset},
                      {"device", t.device},
                      {"sha256", t.sha256}};
  if (!t.argument.empty()) {
    j["argument"] = t.argument;
  }
  return j;
}

nlohmann::json to_json(const TensorStats& s) {
  nlohmann::json j = {{"name", s.name},
                      {"dtype", s.dtype},
                      {"shape", s.shape},
                      {"numel", s.numel},
                      {"nan", s.nan_count},
                      {"inf", s.inf_count},
                      {"min", optional_number(s.min)},
                      {"max", optional_number(s.max)},
                      {"mean", optional_number(s.mean)},
                      {"checksum", s.checksum}};
  if (!s.first_nonfinite.empty()) {
    j["first_nonfinite"] = s.first_nonfinite;
  }
  if (!s.layout.empty()) {
    j["layout"] = s.layout;
  }
  if (s.opaque) {
    j["opaque"] = true;
  }
  if (s.unwritten >= 0) {
    j["unwritten"] = s.unwritten;
  }
  return j;
}

void append_json(std::string& out, const TensorStats& s) {
  JsonFields f;
  f.str("name", s.name).str("dtype", s.dtype).ints("shape", s.shape).num("numel", s.numel);
  f.num("nan", s.nan_count).num("inf", s.inf_count);
  for (const auto& [key, v] : {std::pair{"min", &s.min}, std::pair{"max", &s.max}, std::pair{"mean", &s.mean}}) {
    if (*v) {
      f.num(key, **v);
    } else {
      f.null(key);
    }
  }
  f.str("checksum", s.checksum);
  if (!s.first_nonfinite.empty()) {
    f.ints("first_nonfinite", s.first_nonfinite);
  }
  if (!s.layout.empty()) {
    f.str("layout", s.layout);
  }
  if (s.opaque) {
    f.flag("opaque", true);
  }
  if (s.unwritten >= 0) {
    f.num("unwritten", s.unwritten);
  }
  out += '{';
  out += f.text();
  out += '}';
}

nlohmann::json to_json(const Comparison& c) {
  return {{"within_tolerance", c.within_tolerance},
          {"atol", c.atol},
          {"rtol", c.rtol},
          {"max_abs_error", json_number(c.max_abs_error)},
          {"max_rel_error", json_number(c.max_rel_error)},
          {"mismatched", c.mismatched},
          {"nonfinite_mismatched", c.nonfinite_mismatched},
          {"total", c.total},
          {"worst_output", c.worst_output},
          {"note", c.note}};
}

TensorInfo tensor_info_from_json(const nlohmann::json& j) {
  TensorInfo t;
  t.name = j.value("name", "");
  t.dtype = j.value("dtype", "");
  t.shape = j.value("shape", std::vector<int64_t>{});
  t.strides = j.value("strides", std::vector<int64_t>{});
  t.device = j.value("device", "");
  t.sha256 = j.value("sha256", "");
  t.storage_offset = j.value("storage_offset", int64_t{0});
  t.argument = j.value("argument", "");
  return t;
}

TensorStats tensor_stats_from_json(const nlohmann::json& j) {
  TensorStats s;
  s.name = j.value("name", "");
  s.dtype = j.value("dtype", "");
  s.shape = j.value("shape", std::vector<int64_t>{});
  s.numel = j.value("numel", int64_t{0});
  s.nan_count = j.value("nan", int64_t{0});
  s.inf_count = j.value("inf", int64_t{0});
  s.min = optional_from(j, "min");
  s.max = optional_from(j, "max");
  s.mean = optional_from(j, "mean");
  s.checksum = j.value("checksum", "");
  s.first_nonfinite = j.value("first_nonfinite", std::vector<int64_t>{});
  s.layout = j.value("layout", "");
  s.opaque = j.value("opaque", false);
  s.unwritten = j.value("unwritten", int64_t{-1});
  return s;
}

Comparison comparison_from_json(const nlohmann::json& j) {
  Comparison c;
  c.within_tolerance = j.value("within_tolerance", true);
  c.atol = j.value("atol", 0.0);
  c.rtol = j.value("rtol", 0.0);
  c.max_abs_error = j.contains("max_abs_error") ? number_from_json(j["max_abs_error"]) : 0.0;
  c.max_rel_error = j.contains("max_rel_error") ? number_from_json(j["max_rel_error"]) : 0.0;
  c.mismatched = j.value("mismatched", int64_t{0});
  c.nonfinite_mismatched = j.value("nonfinite_mismatched", int64_t{-1});  // -1: a runner that does not say
  c.total = j.value("total", int64_t{0});
  c.worst_output = j.value("worst_output", "");
  c.note = j.value("note", "");
  return c;
}

Tolerance ToleranceTable::for_dtype(const std::string& dtype) const {
  if (auto it = by_dtype.find(dtype); it != by_dtype.end()) {
    return it->second;
  }
  bool floating = dtype.rfind("float", 0) == 0 || dtype.rfind("bfloat", 0) == 0 || dtype.rfind("complex", 0) == 0;
  if (!floating) {
    return Tolerance{0, 0};  // integers and bool: exact
  }
  if (auto it = by_dtype.find("default"); it != by_dtype.end()) {
    return it->second;
  }
  return Tolerance{};
}

void ToleranceTable::set_all(std::optional<double> atol, std::optional<double> rtol) {
  if (!atol && !rtol) {
    return;
  }
  if (!by_dtype.count("default")) {
    by_dtype["default"] = Tolerance{};
  }
  for (auto& [dtype, t] : by_dtype) {
    t.atol = atol.value_or(t.atol);
    t.rtol = rtol.value_or(t.rtol);
  }
}

void ToleranceTable::merge(const ToleranceTable& over) {
  for (const auto& [dtype, t] : over.by_dtype) {
    by_dtype[dtype] = t;
  }
}

nlohmann::json to_json(const ToleranceTable& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [dtype, tol] : t.by_dtype) {
    j[dtype] = {{"atol", tol.atol}, {"rtol", tol.rtol}};
  }
  return j;
}

ToleranceTable tolerance_table_from_json(const nlohmann::json& j) {
  ToleranceTable t;
  if (!j.is_object()) {
    throw Error(ErrorKind::usage, "a tolerance table must map dtype names to {atol, rtol}");
  }
  for (const auto& [dtype, v] : j.items()) {
    if (!v.is_object() || !v.value("atol", nlohmann::json()).is_number() ||
        !v.value("rtol", nlohmann::json()).is_number()) {
      throw Error(ErrorKind::usage, fmt::format("tolerance for '{}' must be {{atol: number, rtol: number}}", dtype));
    }
    t.by_dtype[dtype] = Tolerance{v["atol"].get<double>(), v["rtol"].get<double>()};
  }
  return t;
}

}  // namespace aoti_bisect
