// The summary printed on stdout at the end of a run. Child text is passed
// through one_line, so with color off the output holds no escape code at all,
// even when a child's error line was colored.

#include <algorithm>

#include <fmt/format.h>

#include "report/sink_text.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect {

namespace {

using namespace report_text;

enum class Tone { plain, good, bad, warn };

class Painter {
 public:
  explicit Painter(bool color) : m_color(color) {}
  std::string operator()(const std::string& text, Tone tone) const {
    if (!m_color || tone == Tone::plain) {
      return text;
    }
    const char* code = tone == Tone::good ? "\x1b[32m" : tone == Tone::bad ? "\x1b[31m" : "\x1b[33m";
    return code + text + "\x1b[0m";
  }

 private:
  bool m_color;
};

Tone verdict_tone(Verdict v) {
  switch (v) {
    case Verdict::clean: return Tone::good;
    case Verdict::running:
    case Verdict::interrupted:
    case Verdict::could_not_test: return Tone::warn;
    default: return Tone::bad;
  }
}

std::string failure_lines(const Failure& f, const Painter& paint) {
  std::string kind = paint(std::string(outcome_name(f.kind)), Tone::bad);
  if (f.signal) {
    kind += fmt::format(", signal {} ({})", *f.signal, signal_string(*f.signal));
  }
  std::string out = fmt::format("  failure:     {}\n", kind);
  if (!f.first_line.empty()) {
    out += fmt::format("  first line:  {}\n", one_line(f.first_line));
  }
  out += fmt::format("  first check: {}\n", one_line(first_check(f)));
  return out;
}

std::string batch_lines(const Report& r) {
  std::string line = batch_summary(r);
  if (line.empty()) {
    return "";
  }
  std::string out = "  batch:       " + line + "\n";
  for (const auto& fact : r.failure->batch->facts) {
    out += "               " + one_line(fact) + "\n";
  }
  return out;
}

// The trigger shrunk, or why not (job/shrink.hpp).
std::string trigger_lines(const Report& r) {
  if (r.minimal_inputs) {
    const MinimalInputs& m = *r.minimal_inputs;
    std::string out = "  trigger:     " + one_line(m.sentence) + (m.file.empty() ? "" : ": " + m.file) + "\n";
    for (const auto& fact : m.facts) {
      out += "               " + one_line(fact) + "\n";
    }
    return out;
  }
  return r.shrink_note.empty() ? "" : "  trigger:     " + one_line(r.shrink_note) + "\n";
}

// One sample in the batch against it alone (job/batch_dependence.hpp).
std::string batch_dependence_lines(const Report& r) {
  if (r.batch_dependence) {
    return std::string("  in company:  ") + (r.batch_dependence->dependent ? "batch_dependent: " : "") +
           one_line(r.batch_dependence->sentence) + "\n";
  }
  return r.batch_dependence_note.empty() ? "" : "  in company:  " + one_line(r.batch_dependence_note) + "\n";
}

std::string matrix_lines(const std::vector<VariantSummary>& matrix, const Painter& paint) {
  size_t name_width = 0;
  size_t count_width = 0;
  for (const auto& v : matrix) {
    name_width = std::max(name_width, v.name.size());
    count_width = std::max(count_width, fmt::format("{}/{}", v.reproduced, v.runs).size());
  }
  std::string out = "flags:\n";
  for (const auto& v : matrix) {
    std::string count = fmt::format("{:>{}}", fmt::format("{}/{}", v.reproduced, v.runs), count_width);
    std::string line = fmt::format("  {:<{}}   {}", one_line(v.name), name_width,
                                   paint(count + " reproduced", v.reproduced > 0 ? Tone::bad : Tone::good));
    std::string env = env_string(v.env);
    out += (env.empty() ? line : line + "  " + env) + "\n";
  }
  return out;
}

}  // namespace

std::string report_to_console(const Report& r, bool color) {
  Painter paint(color);
  std::string out = "verdict: " + paint(std::string(verdict_name(r.verdict)), verdict_tone(r.verdict));
  if (!r.verdict_reason.empty()) {
    out += ": " + one_line(r.verdict_reason);
  }
  out += "\n";
  if (!r.error.empty()) {
    out += fmt::format("  error: {}\n", one_line(r.error));
  }
  if (r.culprit) {
    out += fmt::format("  culprit:     {}\n", paint(culprit_summary(*r.culprit), Tone::bad));
    if (!r.culprit->root_cause.sentence.empty()) {
      out += fmt::format("  cause:       {}\n", one_line(r.culprit->root_cause.sentence));
    } else if (!r.culprit->root_cause.note.empty()) {
      out += fmt::format("  cause:       none decided; {}\n", one_line(r.culprit->root_cause.note));
    }
    for (const auto& l : r.culprit->source_lines) {
      out += fmt::format("  source:      {}\n", one_line(l.text()));
    }
    if (r.culprit->judgement) {
      out += fmt::format("  whose bug:   {}\n", one_line(r.culprit->judgement->sentence));
      if (!r.culprit->judgement->alone_sentence.empty()) {
        out += fmt::format("  alone:       {}\n", one_line(r.culprit->judgement->alone_sentence));
      }
    }
    if (r.repro && r.repro->upstream) {
      out += fmt::format("  upstream:    {}\n", one_line(upstream_sentence(*r.repro->upstream)));
    }
    if (r.culprit->sanitizer && !r.culprit->sanitizer->errors.empty()) {
      const SanitizerFinding& e = r.culprit->sanitizer->errors.front();
      out += fmt::format("  sanitizer:   {}{}{}\n", one_line(e.what), e.address.empty() ? "" : " at " + e.address,
                         e.buffer.empty() ? "" : ": " + one_line(e.buffer));
    }
  }
  for (const auto& line : r.inputs_outside_range) {
    out += fmt::format("  inputs:      {}; run as given, as the package runs them by default\n", one_line(line));
  }
  if (r.bisection) {
    out += fmt::format("  bisection:   {}\n", bisection_summary(*r.bisection, r.builds));
    for (const auto& o : r.bisection->other_origins) {
      out += fmt::format("  also:        {}\n", one_line(o.note));
    }
    for (const auto& h : r.bisection->healed) {
      out += fmt::format("  passed over: {}\n", one_line(h.note));
    }
  }
  if (!r.bisection && r.builds.count + r.builds.cache_hits > 0) {
    out += fmt::format("  builds:      {}\n", builds_summary(r.builds));  // the first run's probes, a clean job's
  }
  if (r.masked) {
    for (const auto& h : *r.masked) {
      out += fmt::format("  masked:      {}\n", one_line(h.note));
    }
  } else if (!r.masked_note.empty()) {
    out += fmt::format("  masked:      {}\n", one_line(r.masked_note));
  }
  if (r.coredump) {
    out += fmt::format("  core dump:   {}\n", one_line(coredump_summary(*r.coredump)));
  }
  if (r.failure && r.verdict != Verdict::clean) {
    out += failure_lines(*r.failure, paint) + batch_lines(r) + trigger_lines(r) + batch_dependence_lines(r);
  }
  if (!r.matrix.empty()) {
    out += matrix_lines(r.matrix, paint);
  }
  if (!r.runs.empty()) {
    out += fmt::format("ran: {} in {:.1f} s\n", runs_text(r), r.total_seconds);
  }
  if (!r.reproduce_command.empty() && r.verdict != Verdict::clean) {
    out += fmt::format("reproduce:\n  {}\n", one_line(r.reproduce_command));
  }
  return out;
}

}  // namespace aoti_bisect
