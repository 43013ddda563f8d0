// The runner's event kinds as one table: each kind's name, and an event's kind read from its name.

#include "protocol/runner.hpp"

#include <string>
#include <unordered_map>

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
      {EventKind::time_limit, "time_limit"},
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
  // Asked for every event of every run, many times over (a trace run of
  // 10,000 call sites writes about 60,000): a hash lookup, not a scan.
  static const std::unordered_map<std::string_view, EventKind> by_name = [] {
    std::unordered_map<std::string_view, EventKind> m;
    for (const auto& e : event_table()) {
      m.emplace(e.name, e.kind);
    }
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? EventKind::unknown : it->second;
}

EventKind event_kind(const nlohmann::json& event) {
  if (!event.is_object()) {
    return EventKind::unknown;
  }
  auto it = event.find("event");
  if (it == event.end() || !it->is_string()) {
    return EventKind::unknown;
  }
  return event_kind_from_name(it->get_ref<const std::string&>());
}

}  // namespace aoti_bisect
