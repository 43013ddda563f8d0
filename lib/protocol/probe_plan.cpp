// The probe plan: probe modes by name, the mode at each call site, its summary, and its JSON both ways.

#include "protocol/probe_plan.hpp"

#include <fmt/format.h>

#include "common/by_name.hpp"
#include "common/error.hpp"

namespace aoti_bisect {
namespace {
constexpr std::string_view k_names[] = {"off", "trace", "sync", "stats", "save"};
}

std::string_view probe_mode_name(ProbeMode m) {
  return k_names[static_cast<int>(m)];
}

std::optional<ProbeMode> probe_mode_from_name(std::string_view name) {
  return find_by_name(k_names, name, [](const std::string_view& n) { return static_cast<ProbeMode>(&n - k_names); });
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
  return {{"default", probe_mode_name(plan.default_mode)},
          {"ranges", ranges},
          {"save_dir", plan.save_dir.string()},
          {"save_after", plan.save_after}};
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
  const nlohmann::json ranges = j.value("ranges", nlohmann::json::array());
  if (!ranges.is_array()) {
    throw Error(ErrorKind::usage, fmt::format("probe plan: 'ranges' must be a list, got {}", ranges.dump()));
  }
  for (const auto& r : ranges) {
    auto site = [&](const char* key) {
      const nlohmann::json v = r.is_object() ? r.value(key, nlohmann::json(1)) : nlohmann::json();
      if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1LL << 30)) {
        throw Error(ErrorKind::usage, fmt::format("probe plan: a range needs call sites 'from' <= 'to', each at "
                                                  "least 1, got {}",
                                                  r.dump()));
      }
      return static_cast<int>(v.get<long long>());
    };
    ProbePlan::Range range{site("from"), site("to"), mode_of(r.value("mode", nlohmann::json("trace")))};
    if (range.from > range.to) {
      throw Error(ErrorKind::usage, fmt::format("probe plan: a range needs call sites 'from' <= 'to', each at least 1, "
                                                "got {}",
                                                r.dump()));
    }
    plan.ranges.push_back(range);
  }
  const nlohmann::json save_dir = j.value("save_dir", nlohmann::json(""));
  if (!save_dir.is_string()) {
    throw Error(ErrorKind::usage, fmt::format("probe plan: 'save_dir' must be a string, got {}", save_dir.dump()));
  }
  plan.save_dir = save_dir.get<std::string>();
  const nlohmann::json save_after = j.value("save_after", nlohmann::json(false));
  if (!save_after.is_boolean()) {
    throw Error(ErrorKind::usage,
                fmt::format("probe plan: 'save_after' must be true or false, got {}", save_after.dump()));
  }
  plan.save_after = save_after.get<bool>();
  return plan;
}

}  // namespace aoti_bisect
