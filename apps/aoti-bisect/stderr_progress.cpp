#include "stderr_progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace aoti_bisect::cli {

StderrProgress::StderrProgress() {
  const char* term = std::getenv("TERM");
  m_smart = ::isatty(STDERR_FILENO) && term && std::strcmp(term, "dumb") != 0;
  m_color = m_smart && std::getenv("NO_COLOR") == nullptr;
}

StderrProgress::~StderrProgress() {
  finish();
}

void StderrProgress::finish() {
  if (m_dirty) {
    std::fputs("\r\x1b[K", stderr);
    m_dirty = false;
  }
}

void StderrProgress::line(const std::string& text, bool transient) {
  if (m_smart) {
    std::fprintf(stderr, "\r\x1b[K%s", text.c_str());
    if (transient) {
      m_dirty = true;
    } else {
      std::fputc('\n', stderr);
      m_dirty = false;
    }
  } else if (!transient) {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void StderrProgress::phase(const std::string& name, const std::string& detail) {
  std::string label = m_color ? "\x1b[1m" + name + "\x1b[0m" : name;
  line(fmt::format("[{}] {}", label, detail), false);
}

// Runs are numbered in the job's order, with no total: what a job runs
// depends on what its runs show (the search's steps, the matrix's stages
// after a failure), and a total that changed as it went would be wrong
// before it was right. Numbered as they start, and a run's finished line
// keeps its number (with --jobs N, runs end in another order).
void StderrProgress::run_started(const std::string& id, int /*done*/, int /*total*/) {
  int n = ++m_started;
  m_numbers[id] = n;
  line(fmt::format("  [{}] running {} ...", n, id), true);
}

void StderrProgress::run_finished(const std::string& id, OutcomeKind kind, const std::string& exit, double seconds,
                                  int done, int total) {
  std::string name(outcome_name(kind));
  if (m_color) {
    name = (kind == OutcomeKind::ok ? "\x1b[32m" : "\x1b[31m") + name + "\x1b[0m";
  }
  (void)total;
  auto it = m_numbers.find(id);
  int n = it != m_numbers.end() ? it->second : done;
  line(fmt::format("  [{}] {:<24} {:<14} {} ({:.1f} s)", n, id, name, exit, seconds), false);
}

void StderrProgress::note(const std::string& text) {
  line("aoti-bisect: " + text, false);
}

// A terminal redraws the line for every batch; a log gets one every 10 s.
void StderrProgress::batch(const std::string& run_id, int index, int of, const std::string& file) {
  std::string text = fmt::format("  {}: batch {} of {} ({})", run_id, index + 1, of, file);
  if (m_smart) {
    line(text, true);
    return;
  }
  double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now - m_last_batch_line >= 10 || index + 1 == of) {
    m_last_batch_line = now;
    line(text, false);
  }
}

}  // namespace aoti_bisect::cli
