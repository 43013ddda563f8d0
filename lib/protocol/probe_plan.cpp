#include "protocol/probe_plan.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace aoti_bisect {
namespace {
constexpr std::string_view k_names[] = {"off", "trace", "sync", "stats", "save"};
}

std::string_view probe_mode_name(ProbeMode m) { return k_names[static_cast<int>(m)]; }

std::optional<ProbeMode> probe_mode_from_name(std::string_view name) {
  for (int i = 0; i < 5; ++i) {
    if (k_names[i] == name) {
      return static_cast<ProbeMode>(i);
    }
  }
  return std::nullopt;
}

ProbeMode ProbePlan::mode_for(int site) const {
  ProbeMode mode = default_mode;
  for (const auto& r : ranges) {
    if (site >= r.from && site <= r.to) {
      mode = r.mode;
    }
  }
  return mode;
}

std::string ProbePlan::summary() const {
  std::string s(probe_mode_name(default_mode));
  for (const auto& r : ranges) {
    s += r.from == r.to ? fmt::format("; {} {}", probe_mode_name(r.mode), r.from)
                        : fmt::format("; {} {}-{}", probe_mode_name(r.mode), r.from, r.to);
  }
  return s;
}

nlohmann::json to_json(const ProbePlan& plan) {
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& r : plan.ranges) {
    ranges.push_back({{"from", r.from}, {"to", r.to}, {"mode", probe_mode_name(r.mode)}});
  }
  return {{"default", probe_mode_name(plan.default_mode)}, {"ranges", ranges}, {"save_dir", plan.save_dir.string()}};
}

ProbePlan probe_plan_from_json(const nlohmann::json& j) {
  auto mode_of = [](const nlohmann::json& v) {
    auto m = v.is_string() ? probe_mode_from_name(v.get<std::string>()) : std::nullopt;
    if (!m) {
      throw Error(ErrorKind::usage, fmt::format("probe plan: unknown mode {}", v.dump()));
    }
    return *m;
  };
  if (!j.is_object()) {
    throw Error(ErrorKind::usage, "probe plan: expected a JSON object");
  }
  ProbePlan plan;
  if (j.contains("default")) {
    plan.default_mode = mode_of(j["default"]);
  }
  for (const auto& r : j.value("ranges", nlohmann::json::array())) {
    plan.ranges.push_back({r.value("from", 1), r.value("to", 1), mode_of(r.value("mode", nlohmann::json("trace")))});
  }
  plan.save_dir = j.value("save_dir", "");
  return plan;
}

}  // namespace aoti_bisect
