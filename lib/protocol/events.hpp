#pragma once
// The runner's event stream: JSON Lines in a file the runner maps into its
// memory (MAP_SHARED), so an event costs a copy, not a system call, and
// every line written survives the child's death, SIGKILL included: the
// pages belong to the file. The writer trims the file to its lines when it
// closes, and so does the driver after a child that could not
// (finish_events_file). The driver reads them back after the child ends.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/runner.hpp"

namespace aoti_bisect {

// An event's fields as JSON text, built without a json object: the probes'
// hot path (a run that probes 10,000 call sites writes about 60,000
// events). `"site":3,"kernel":"k"`, with the object's braces left to the
// writer. Numbers follow json_number: NaN and Inf are the strings "nan",
// "inf", "-inf".
class JsonFields {
 public:
  JsonFields& str(std::string_view key, std::string_view value);
  JsonFields& num(std::string_view key, int64_t value);
  JsonFields& num(std::string_view key, double value);
  JsonFields& flag(std::string_view key, bool value);
  JsonFields& null(std::string_view key);
  JsonFields& ints(std::string_view key, const std::vector<int64_t>& values);
  JsonFields& strs(std::string_view key, const std::vector<std::string>& values);
  JsonFields& raw(std::string_view key, std::string_view json_text);  // a value already JSON
  const std::string& text() const { return m_text; }
  void clear() { m_text.clear(); }

 private:
  void key(std::string_view k);
  std::string m_text;
};

// JSON text of a string, quoted and escaped as nlohmann::json dumps it.
void append_json_string(std::string& out, std::string_view s);
// JSON text of a number as json_number writes it.
void append_json_number(std::string& out, double v);

class EventWriter {
 public:
  EventWriter() = default;
  explicit EventWriter(const std::filesystem::path& path);  // truncates; throws Error(internal)
  ~EventWriter();                                           // trims the file to its lines
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Adds "event": type and "t": seconds since the writer opened.
  void emit(EventKind kind, nlohmann::json fields = nlohmann::json::object());
  void emit(EventKind kind, const JsonFields& fields);

  // From a fatal signal's handler (async-signal-safe): appends one prepared
  // line to the open writer, if any, and trims the file to its lines.
  static void append_from_signal(const char* line, size_t size);

 private:
  void append(std::string_view text);
  void grow(size_t need);
  void close();

  int m_fd = -1;
  char* m_map = nullptr;            // null: plain write(2) (a file that cannot be mapped)
  size_t m_capacity = 0;
  volatile size_t m_size = 0;       // bytes of whole lines written
  double m_start = 0;
  std::string m_line;               // reused for each line
  std::mutex m_mutex;
};

// Every well-formed line of an events file; a torn last line is skipped,
// and so are the zero bytes after the lines of a child that was killed.
std::vector<nlohmann::json> read_events(const std::filesystem::path& path);

// After the child that wrote `path` ended: trims the zero bytes a killed
// child's mapping left after its last line. Nothing else changes.
void finish_events_file(const std::filesystem::path& path);

}  // namespace aoti_bisect
