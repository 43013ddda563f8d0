// The runner's side of the events file (protocol/events.hpp): JSON text built
// without JSON objects (JsonFields) and the mapped-file writer (EventWriter).
#include "protocol/events.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "common/clock.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"

namespace aoti_bisect {

namespace {

constexpr size_t k_initial_capacity = size_t{1} << 20;
// Room kept free after every line for a fatal signal's line (the handler
// cannot grow the mapping).
constexpr size_t k_signal_reserve = 4096;

// The one open writer of this process, for the fatal-signal handler.
std::atomic<EventWriter*> g_open_writer{nullptr};

size_t page_rounded(size_t n) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  // Names (kernels, buffers) need no escape: one append.
  if (std::none_of(s.begin(), s.end(), [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return c < 0x20 || c == '"' || c == '\\';
      })) {
    out += s;
    out += '"';
    return;
  }
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += ch;  // UTF-8 passes through; names here are ASCII
        }
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double v) {
  if (auto text = nonfinite_text(v)) {
    append_json_string(out, *text);
    return;
  }
  const size_t start = out.size();
  fmt::format_to(std::back_inserter(out), "{}", v);  // shortest text that reads back the same
  if (out.find_first_of(".eE", start) == std::string::npos) {
    out += ".0";  // a float stays a float, as nlohmann::json dumps it
  }
}

void JsonFields::key(std::string_view k) {
  if (!m_text.empty()) {
    m_text += ',';
  }
  append_json_string(m_text, k);
  m_text += ':';
}

JsonFields& JsonFields::str(std::string_view k, std::string_view value) {
  key(k);
  append_json_string(m_text, value);
  return *this;
}

JsonFields& JsonFields::num(std::string_view k, int64_t value) {
  key(k);
  fmt::format_to(std::back_inserter(m_text), "{}", value);
  return *this;
}

JsonFields& JsonFields::num(std::string_view k, double value) {
  key(k);
  append_json_number(m_text, value);
  return *this;
}

JsonFields& JsonFields::flag(std::string_view k, bool value) {
  key(k);
  m_text += value ? "true" : "false";
  return *this;
}

JsonFields& JsonFields::null(std::string_view k) {
  key(k);
  m_text += "null";
  return *this;
}

JsonFields& JsonFields::ints(std::string_view k, const std::vector<int64_t>& values) {
  key(k);
  m_text += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) {
      m_text += ',';
    }
    fmt::format_to(std::back_inserter(m_text), "{}", values[i]);
  }
  m_text += ']';
  return *this;
}

JsonFields& JsonFields::strs(std::string_view k, const std::vector<std::string>& values) {
  key(k);
  m_text += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) {
      m_text += ',';
    }
    append_json_string(m_text, values[i]);
  }
  m_text += ']';
  return *this;
}

JsonFields& JsonFields::raw(std::string_view k, std::string_view json_text) {
  key(k);
  m_text += json_text;
  return *this;
}

EventWriter::EventWriter(const std::filesystem::path& path) {
  m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (m_fd < 0) {
    throw Error(ErrorKind::internal, fmt::format("cannot open events file '{}'", path.string()));
  }
  m_start = steady_seconds();
  const size_t capacity = page_rounded(k_initial_capacity);
  if (::ftruncate(m_fd, static_cast<off_t>(capacity)) == 0) {
    void* map = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, m_fd, 0);
    if (map != MAP_FAILED) {
      m_map = static_cast<char*>(map);
      m_capacity = capacity;
    }
  }
  if (m_map == nullptr) {
    // A file system that cannot map it: one write(2) per line, as before.
    (void)::ftruncate(m_fd, 0);
  }
  EventWriter* none = nullptr;
  g_open_writer.compare_exchange_strong(none, this);
}

EventWriter::~EventWriter() {
  close();
}

void EventWriter::close() {
  EventWriter* self = this;
  g_open_writer.compare_exchange_strong(self, nullptr);
  if (m_map != nullptr) {
    ::munmap(m_map, m_capacity);
    m_map = nullptr;
    (void)::ftruncate(m_fd, static_cast<off_t>(m_size));
  }
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
}

void EventWriter::grow(size_t need) {
  size_t capacity = m_capacity;
  while (capacity < need) {
    capacity *= 2;
  }
  capacity = page_rounded(capacity);
  // No fatal signal's line while the mapping moves.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  void* map = MAP_FAILED;
  if (::ftruncate(m_fd, static_cast<off_t>(capacity)) == 0) {
    map = ::mremap(m_map, m_capacity, capacity, MREMAP_MAYMOVE);
  }
  if (map != MAP_FAILED) {
    m_map = static_cast<char*>(map);
    m_capacity = capacity;
  } else {
    // Out of address space or disk: what is written stays; the rest goes
    // through write(2) after it.
    ::munmap(m_map, m_capacity);
    m_map = nullptr;
    (void)::ftruncate(m_fd, static_cast<off_t>(m_size));
    ::lseek(m_fd, static_cast<off_t>(m_size), SEEK_SET);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void EventWriter::append(std::string_view text) {
  if (m_map != nullptr && m_size + text.size() + k_signal_reserve > m_capacity) {
    grow(m_size + text.size() + k_signal_reserve);
  }
  if (m_map == nullptr) {
    if (write_all(m_fd, text)) {
      m_size = m_size + text.size();
    }
    return;
  }
  std::memcpy(m_map + m_size, text.data(), text.size());
  std::atomic_signal_fence(std::memory_order_release);  // the line before its length
  m_size = m_size + text.size();
}

void EventWriter::append_from_signal(const char* line, size_t size) {
  EventWriter* w = g_open_writer.load();
  if (w == nullptr || w->m_fd < 0) {
    return;
  }
  if (w->m_map == nullptr) {
    (void)write_all(w->m_fd, std::string_view(line, size));
    return;
  }
  size_t at = w->m_size;
  if (at + size <= w->m_capacity) {
    std::memcpy(w->m_map + at, line, size);
    at += size;
  }
  (void)::ftruncate(w->m_fd, static_cast<off_t>(at));  // async-signal-safe; the mapping's tail is dropped
}

void EventWriter::emit(EventKind kind, nlohmann::json fields) {
  if (m_fd < 0) {
    return;
  }
  nlohmann::json line = nlohmann::json::object();
  line["event"] = std::string(event_name(kind));
  line["t"] = std::round((steady_seconds() - m_start) * 1e6) / 1e6;
  for (auto& [k, v] : fields.items()) {
    line[k] = v;
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(m_mutex);
  append(text);
}

void EventWriter::emit(EventKind kind, const JsonFields& fields) {
  if (m_fd < 0) {
    return;
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  m_line.clear();
  m_line += "{\"event\":\"";
  m_line += event_name(kind);
  m_line += "\",\"t\":";
  append_json_number(m_line, std::round((steady_seconds() - m_start) * 1e6) / 1e6);
  if (!fields.text().empty()) {
    m_line += ',';
    m_line += fields.text();
  }
  m_line += "}\n";
  append(m_line);
}

}  // namespace aoti_bisect
