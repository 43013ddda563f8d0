#include "protocol/runner.hpp"

#include <string>

namespace aoti_bisect {

const std::vector<EventInfo>& event_table() {
  static const std::vector<EventInfo> table = {
      {EventKind::start, "start"},
      {EventKind::batch, "batch"},
      {EventKind::inputs, "inputs"},
      {EventKind::input_mismatch, "input_mismatch"},
      {EventKind::input_stats, "input_stats"},
      {EventKind::loaded, "loaded"},
      {EventKind::hooks, "hooks"},
      {EventKind::poison, "poison"},
      {EventKind::probes, "probes"},
      {EventKind::run_begin, "run_begin"},
      {EventKind::site_begin, "site_begin"},
      {EventKind::probe, "probe"},
      {EventKind::saved, "saved"},
      {EventKind::sync_error, "sync_error"},
      {EventKind::site_end, "site_end"},
      {EventKind::run_end, "run_end"},
      {EventKind::probes_missing, "probes_missing"},
      {EventKind::outputs, "outputs"},
      {EventKind::comparison, "comparison"},
      {EventKind::batch_end, "batch_end"},
      {EventKind::error, "error"},
      {EventKind::fatal, "fatal"},
      {EventKind::signal, "signal"},
      {EventKind::done, "done"},
  };
  return table;
}

std::string_view event_name(EventKind kind) {
  for (const auto& e : event_table()) {
    if (e.kind == kind) {
      return e.name;
    }
  }
  return "unknown";
}

EventKind event_kind_from_name(std::string_view name) {
  for (const auto& e : event_table()) {
    if (e.name == name) {
      return e.kind;
    }
  }
  return EventKind::unknown;
}

EventKind event_kind(const nlohmann::json& event) {
  if (!event.is_object() || !event.contains("event") || !event["event"].is_string()) {
    return EventKind::unknown;
  }
  return event_kind_from_name(event["event"].get_ref<const std::string&>());
}

}  // namespace aoti_bisect
