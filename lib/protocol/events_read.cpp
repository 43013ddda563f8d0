// The driver's side of the events file (protocol/events.hpp): a run's
// lines read and indexed (Events), and a killed child's file trimmed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "protocol/events.hpp"

namespace aoti_bisect {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

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
  while (m_at < m_events->size() && ((m_kinds & (1u << static_cast<unsigned>(m_events->kind(m_at)))) == 0 ||
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
