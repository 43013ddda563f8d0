#pragma once
// The probe plan: what the runner does at each call site of an instrumented
// build (design.md "Probes"). Call sites are numbered by occurrence in the
// run, 1-based. Written by the driver as JSON, read by the runner.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace aoti_bisect {

// Ordered: each mode does what the ones before it do.
enum class ProbeMode {
  off,    // nothing
  trace,  // site_begin / site_end events: kernel name and the tensors it touches
  sync,   // after launch, synchronise the device and check for an error (CPU: nothing to do)
  stats,  // statistics of each tensor before and after launch
  save,   // also save the tensors before launch (for the reproducer)
};
std::string_view probe_mode_name(ProbeMode m);
std::optional<ProbeMode> probe_mode_from_name(std::string_view name);

struct ProbePlan {
  struct Range {
    int from = 1;
    int to = 1;
    ProbeMode mode = ProbeMode::trace;
  };
  ProbeMode default_mode = ProbeMode::trace;
  std::vector<Range> ranges;       // later ranges win
  std::filesystem::path save_dir;  // for `save`
  // `save` writes each tensor's value after the launch instead (the second
  // of two runs compares its own with them: outputs that differ between runs).
  bool save_after = false;

  ProbeMode mode_for(int site) const;
  std::string summary() const;  // "trace; stats 1-16", for reports
};

nlohmann::json to_json(const ProbePlan& plan);
ProbePlan probe_plan_from_json(const nlohmann::json& j);  // throws Error(usage) when malformed

}  // namespace aoti_bisect
