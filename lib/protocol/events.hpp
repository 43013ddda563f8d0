#pragma once
// The runner's event stream: JSON Lines, one write(2) per event, so the last
// lines survive a crash of the child. The driver reads them back after the
// child ends.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/runner.hpp"

namespace aoti_bisect {

class EventWriter {
 public:
  EventWriter() = default;
  explicit EventWriter(const std::filesystem::path& path);  // truncates; throws Error(internal)
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Adds "event": type and "t": seconds since the writer opened.
  void emit(EventKind kind, nlohmann::json fields = nlohmann::json::object());
  int fd() const { return m_fd; }  // for async-signal-safe writes

 private:
  int m_fd = -1;
  double m_start = 0;
};

// Every well-formed line of an events file; a torn last line is skipped.
std::vector<nlohmann::json> read_events(const std::filesystem::path& path);

}  // namespace aoti_bisect
