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
#include <initializer_list>
#include <iterator>
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
  char* m_map = nullptr;  // null: plain write(2) (a file that cannot be mapped)
  size_t m_capacity = 0;
  volatile size_t m_size = 0;  // bytes of whole lines written
  double m_start = 0;
  std::string m_line;  // reused for each line
  std::mutex m_mutex;
};

// A run's events as the driver holds them: each line's text once, in one
// buffer, with its kind and call site indexed; a line is parsed into JSON
// only when it is read. A run that probes 10,000 call sites writes about
// 60,000 events (16 MB of text): as JSON objects they took about 7 times
// their text, and the driver held two such runs. Reading one kind (or one
// site) skips the other lines unparsed: `for (const auto& e :
// events.of({EventKind::probe}))`. Iterating all of them parses each.
class Events {
 public:
  class Range;
  class Iterator {
   public:
    using value_type = nlohmann::json;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = nlohmann::json;  // parsed as read: a value, not a reference
    using iterator_category = std::input_iterator_tag;
    Iterator(const Events* events, size_t at, uint32_t kinds, int site);
    nlohmann::json operator*() const { return m_events->at(m_at); }
    Iterator& operator++();
    bool operator==(const Iterator& o) const { return m_at == o.m_at; }
    bool operator!=(const Iterator& o) const { return m_at != o.m_at; }
    size_t index() const { return m_at; }

   private:
    void skip();
    const Events* m_events;
    size_t m_at;
    uint32_t m_kinds;  // bit per EventKind
    int m_site;        // -1: any
  };
  class Range {
   public:
    Range(const Events* events, uint32_t kinds, int site) : m_events(events), m_kinds(kinds), m_site(site) {}
    Iterator begin() const { return Iterator(m_events, 0, m_kinds, m_site); }
    Iterator end() const { return Iterator(m_events, m_events->size(), m_kinds, m_site); }

   private:
    const Events* m_events;
    uint32_t m_kinds;
    int m_site;
  };

  Events() = default;
  Events(std::initializer_list<nlohmann::json> events);  // tests
  Events(const std::vector<nlohmann::json>& events);     // NOLINT(google-explicit-constructor): tests build events so

  // Every well-formed line of an events file; a torn last line is skipped,
  // and so are the zero bytes after the lines of a child that was killed.
  static Events read(const std::filesystem::path& path);

  // Adds one event (a JSON object with an "event" field); false, and
  // nothing added, for a line that is not one.
  bool push_line(std::string_view line);
  void push_back(const nlohmann::json& event);
  void push_from(const Events& other, size_t i) { push_line(other.line(i)); }

  size_t size() const { return m_lines.size(); }
  bool empty() const { return m_lines.empty(); }
  EventKind kind(size_t i) const { return m_lines[i].kind; }
  int site(size_t i) const { return m_lines[i].site; }  // 0 for an event without one
  std::string_view line(size_t i) const { return {m_text.data() + m_lines[i].offset, m_lines[i].size}; }
  nlohmann::json at(size_t i) const;  // parsed
  nlohmann::json operator[](size_t i) const { return at(i); }
  nlohmann::json front() const { return at(0); }
  nlohmann::json back() const { return at(size() - 1); }
  // The last event of a kind, parsed; null if none.
  nlohmann::json last(EventKind kind) const;
  size_t text_bytes() const { return m_text.size(); }
  void clear();  // and frees the memory

  Iterator begin() const { return Iterator(this, 0, ~0u, -1); }
  Iterator end() const { return Iterator(this, size(), ~0u, -1); }
  // The events of these kinds (of one call site, where site >= 0), parsed as read.
  Range of(std::initializer_list<EventKind> kinds, int site = -1) const;
  // A copy of only those.
  Events only(std::initializer_list<EventKind> kinds, int site = -1) const;

 private:
  struct Entry {
    size_t offset;
    uint32_t size;
    EventKind kind;
    int site;
  };
  bool index_line(size_t offset, std::string_view line);  // a line of m_text at offset

  std::string m_text;
  std::vector<Entry> m_lines;
};

// After the child that wrote `path` ended: trims the zero bytes a killed
// child's mapping left after its last line. Nothing else changes.
void finish_events_file(const std::filesystem::path& path);

}  // namespace aoti_bisect
