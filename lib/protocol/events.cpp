#include "protocol/events.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/clock.hpp"
#include "common/error.hpp"
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

bool write_all(int fd, const char* p, size_t left) {
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
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

EventWriter::~EventWriter() { close(); }

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
    if (write_all(m_fd, text.data(), text.size())) {
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
    (void)write_all(w->m_fd, line, size);
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

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The site of a line the probes wrote (JsonFields: "event", "t", then
// "site" when it has one): read from the text, unparsed. False where the
// line is not of that form, so it is parsed.
bool fast_index(std::string_view line, EventKind& kind, int& site) {
  constexpr std::string_view head = "{\"event\":\"";
  if (line.substr(0, head.size()) != head) {
    return false;
  }
  size_t end = line.find('"', head.size());
  if (end == std::string_view::npos) {
    return false;
  }
  kind = event_kind_from_name(line.substr(head.size(), end - head.size()));
  constexpr std::string_view t = "\",\"t\":";
  if (line.substr(end, t.size()) != t) {
    return false;
  }
  size_t at = end + t.size();
  while (at < line.size() && (is_digit(line[at]) || line[at] == '.' || line[at] == 'e' || line[at] == 'E' ||
                              line[at] == '-' || line[at] == '+')) {
    ++at;
  }
  site = 0;
  constexpr std::string_view s = ",\"site\":";
  if (line.substr(at, s.size()) != s) {
    // No site, or not where the probes put it: "}" ends an event with no
    // other field; anything else is parsed.
    return line.substr(at) == "}";
  }
  at += s.size();
  bool negative = at < line.size() && line[at] == '-';
  at += negative ? 1 : 0;
  size_t digits = at;
  int64_t v = 0;
  while (at < line.size() && is_digit(line[at]) && at - digits < 10) {
    v = v * 10 + (line[at] - '0');
    ++at;
  }
  if (at == digits || at >= line.size() || (line[at] != ',' && line[at] != '}')) {
    return false;
  }
  site = static_cast<int>(negative ? -v : v);
  return true;
}

}  // namespace

static_assert(static_cast<unsigned>(EventKind::unknown) < 32, "Events::of keeps one bit per kind");

Events::Iterator::Iterator(const Events* events, size_t at, uint32_t kinds, int site)
    : m_events(events), m_at(at), m_kinds(kinds), m_site(site) {
  skip();
}

Events::Iterator& Events::Iterator::operator++() {
  ++m_at;
  skip();
  return *this;
}

void Events::Iterator::skip() {
  while (m_at < m_events->size() &&
         ((m_kinds & (1u << static_cast<unsigned>(m_events->kind(m_at)))) == 0 ||
          (m_site >= 0 && m_events->site(m_at) != m_site))) {
    ++m_at;
  }
}

Events::Events(std::initializer_list<nlohmann::json> events) {
  for (const auto& e : events) {
    push_back(e);
  }
}

Events::Events(const std::vector<nlohmann::json>& events) {
  for (const auto& e : events) {
    push_back(e);
  }
}

bool Events::push_line(std::string_view line) {
  size_t at = m_text.size();
  m_text.append(line);
  if (!index_line(at, std::string_view(m_text).substr(at))) {
    m_text.resize(at);
    return false;
  }
  return true;
}

bool Events::index_line(size_t offset, std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  EventKind kind = EventKind::unknown;
  int site = 0;
  if (fast_index(line, kind, site)) {
    // Not parsed here (that would double the cost of reading a probed
    // run): a line cut short is refused; one malformed inside, which the
    // writer never makes, reads back as an empty object.
    if (line.back() != '}') {
      return false;
    }
  } else {
    auto j = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("event")) {
      return false;
    }
    kind = event_kind(j);
    auto it = j.find("site");
    site = it != j.end() && it->is_number_integer() ? it->get<int>() : 0;
  }
  m_lines.push_back(Entry{offset, static_cast<uint32_t>(line.size()), kind, site});
  return true;
}

void Events::push_back(const nlohmann::json& event) {
  push_line(event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

nlohmann::json Events::at(size_t i) const {
  std::string_view l = line(i);
  auto j = nlohmann::json::parse(l.begin(), l.end(), nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

nlohmann::json Events::last(EventKind kind) const {
  for (size_t i = size(); i-- > 0;) {
    if (m_lines[i].kind == kind) {
      return at(i);
    }
  }
  return nullptr;
}

void Events::clear() {
  std::string().swap(m_text);
  std::vector<Entry>().swap(m_lines);
}

Events::Range Events::of(std::initializer_list<EventKind> kinds, int site) const {
  uint32_t mask = 0;
  for (EventKind k : kinds) {
    mask |= 1u << static_cast<unsigned>(k);
  }
  return Range(this, mask, site);
}

Events Events::only(std::initializer_list<EventKind> kinds, int site) const {
  Events out;
  Range r = of(kinds, site);
  for (auto it = r.begin(); it != r.end(); ++it) {
    out.push_from(*this, it.index());
  }
  return out;
}

Events Events::read(const std::filesystem::path& path) {
  Events events;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return events;
  }
  std::string text(static_cast<size_t>(std::max<std::streamoff>(0, in.tellg())), '\0');
  in.seekg(0);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  // The lines stay where they are in the file's text: each is indexed, and
  // one that is not an event is left out of the index.
  events.m_text = std::move(text);
  const std::string& t = events.m_text;
  size_t at = 0;
  while (at < t.size() && t[at] != '\0') {  // a killed child's mapping: nothing after its last line
    size_t nl = t.find('\n', at);
    bool whole = nl != std::string::npos;
    std::string_view line(t.data() + at, (whole ? nl : t.size()) - at);
    if (!whole && nlohmann::json::parse(line.begin(), line.end(), nullptr, false).is_discarded()) {
      break;  // torn: the child stopped in the middle of it
    }
    events.index_line(at, line);
    at = whole ? nl + 1 : t.size();
  }
  return events;
}

void finish_events_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    // From the end back to the last byte that is not zero: the lines end there.
    off_t end = st.st_size;
    char buf[65536];
    bool found = false;
    while (end > 0 && !found) {
      off_t from = end > static_cast<off_t>(sizeof buf) ? end - static_cast<off_t>(sizeof buf) : 0;
      ssize_t n = ::pread(fd, buf, static_cast<size_t>(end - from), from);
      if (n <= 0) {
        break;
      }
      for (ssize_t i = n; i-- > 0;) {
        if (buf[i] != '\0') {
          end = from + i + 1;
          found = true;
          break;
        }
      }
      if (!found) {
        end = from;
      }
    }
    if (end < st.st_size) {
      (void)::ftruncate(fd, end);
    }
  }
  ::close(fd);
}

}  // namespace aoti_bisect
