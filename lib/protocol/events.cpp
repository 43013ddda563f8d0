#include "protocol/events.hpp"

#include <cerrno>
#include <cmath>
#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>

#include "common/error.hpp"

namespace aoti_bisect {

namespace {
double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace

EventWriter::EventWriter(const std::filesystem::path& path) {
  m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (m_fd < 0) {
    throw Error(ErrorKind::internal, fmt::format("cannot open events file '{}'", path.string()));
  }
  m_start = now_s();
}

EventWriter::~EventWriter() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

void EventWriter::emit(EventKind kind, nlohmann::json fields) {
  if (m_fd < 0) {
    return;
  }
  nlohmann::json line = nlohmann::json::object();
  line["event"] = std::string(event_name(kind));
  line["t"] = std::round((now_s() - m_start) * 1e6) / 1e6;
  for (auto& [k, v] : fields.items()) {
    line[k] = v;
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(m_fd, p, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::vector<nlohmann::json> read_events(const std::filesystem::path& path) {
  std::vector<nlohmann::json> events;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("event")) {
      events.push_back(std::move(j));
    }
  }
  return events;
}

}  // namespace aoti_bisect
