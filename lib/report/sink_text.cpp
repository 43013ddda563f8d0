// Text helpers of the report sinks: child text made one safe line, and the values every sink shows
// (shapes, variables, how often a failure showed, the culprit, a core dump, runs and builds).

#include "report/sink_text.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/text.hpp"
#include "process/process.hpp"

namespace aoti_bisect::report_text {

namespace {

// Length of an ANSI escape sequence starting at text[i] (an ESC), 1 when it
// is a lone ESC. CSI: ESC [ params final(0x40-0x7E); others: ESC + one byte.
size_t escape_length(const std::string& text, size_t i) {
  if (i + 1 >= text.size()) {
    return 1;
  }
  if (text[i + 1] != '[') {
    return 2;
  }
  size_t j = i + 2;
  while (j < text.size()) {
    auto c = static_cast<unsigned char>(text[j]);
    ++j;
    if (c >= 0x40 && c <= 0x7e) {
      break;
    }
  }
  return j - i;
}

}  // namespace

std::string one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b) {
      i += escape_length(text, i);
      continue;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string shape_string(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

std::string env_string(const std::map<std::string, std::string>& env) {
  std::string out;
  for (const auto& [key, value] : env) {
    if (!out.empty()) {
      out += ' ';
    }
    out += key + "=" + value;
  }
  return one_line(out);
}

std::string stat_string(const std::optional<double>& value) {
  if (!value) {
    return "-";
  }
  return number_text(*value);
}

std::string signal_string(int sig) {
  return signal_name(sig);
}

std::string batch_summary(const Report& r) {
  if (r.batches.empty() || !r.failure || !r.failure->batch) {
    return "";
  }
  const FailingBatch& b = *r.failure->batch;
  const char* unit = b.calls ? "call" : "batch";
  // Numbered from 1, like call sites (report.json's `index` is 0-based).
  std::string out = fmt::format("{} {} of {} ({}) failed first", unit, b.index + 1, r.batches.size(), one_line(b.file));
  if (b.index > 0 && r.needs_history) {
    out += *r.needs_history ? fmt::format("; it fails only after the {} before it (alone it does not)",
                                          b.calls ? "calls" : "batches")
                            : "; it fails alone too";
  }
  return out;
}

std::string search_runs_note(const Failure& f) {
  return f.search_runs > 0 ? fmt::format(" ({} of them the kernel search's)", f.search_runs) : "";
}

std::string how_often(const Failure& f) {
  std::string runs = fmt::format("{} run{}", f.runs, f.runs == 1 ? "" : "s");
  if (f.kind == OutcomeKind::nondeterministic) {
    return fmt::format("{} of the baseline environment's {} gave other outputs than the first", f.reproduced, runs);
  }
  if (f.kind == OutcomeKind::input_mismatch) {
    return fmt::format("the inputs refused in {} of {}", f.reproduced, runs);
  }
  return fmt::format("{} of the flag matrix's {}{}", f.reproduced, runs, search_runs_note(f));
}

std::string first_check(const Failure& failure) {
  if (!failure.first_check.empty()) {
    return failure.first_check;
  }
  return std::string(outcome_info(failure.kind).first_check);
}

const RunRecord* baseline_run(const Report& report) {
  for (const auto& run : report.runs) {
    if (run.id == "baseline") {
      return &run;
    }
  }
  return report.runs.empty() ? nullptr : &report.runs.front();
}

std::string culprit_summary(const Culprit& culprit) {
  std::string out = fmt::format("call site {}", culprit.call_index);
  if (!culprit.kernel.empty()) {
    out += " " + culprit.kernel;
  }
  if (!culprit.kind.empty()) {
    out += " (" + culprit.kind + ")";
  }
  if (!culprit.why.empty()) {
    out += ": " + culprit.why;
  }
  return one_line(out);
}

std::string coredump_summary(const CoreDumpReading& d) {
  std::string out = d.exception.empty() ? "a device exception" : d.exception;
  if (!d.kernel.empty()) {
    out += " in " + d.kernel;
    if (d.call_sites.size() == 1) {
      out += fmt::format(" (call site {})", d.call_sites.front());
    } else if (!d.call_sites.empty()) {
      std::vector<std::string> sites;
      for (int s : d.call_sites) {
        sites.push_back(std::to_string(s));
      }
      out += " (call sites " + join(sites, ", ") + ")";
    } else {
      out += " (no call site of the wrapper launches it)";
    }
  }
  if (!d.block.empty()) {
    out += ", block " + d.block;
  }
  if (!d.thread.empty()) {
    out += " thread " + d.thread;
  }
  if (!d.pc.empty()) {
    out += ", PC " + d.pc;
  }
  if (d.agrees) {
    out += *d.agrees ? "; the search names the same kernel" : "; the search names another kernel";
  } else if (!d.read_by_debugger && !d.debugger_note.empty()) {
    out += "; " + d.debugger_note;
  }
  return one_line(out);
}

std::vector<std::pair<std::string, int>> runs_by_group(const Report& report) {
  std::vector<std::pair<std::string, int>> out;
  for (const RunRecord& run : report.runs) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == run.group; });
    if (it == out.end()) {
      out.emplace_back(run.group, 1);
    } else {
      ++it->second;
    }
  }
  return out;
}

std::string group_phrase(const std::string& group) {
  if (group == "matrix") {
    return "of the flag matrix";
  }
  if (group == "search") {
    return "of the search";
  }
  if (group == "compare") {
    return "to compare outputs";
  }
  if (group == "batches") {
    return "of the batches";
  }
  if (group == "shrink") {
    return "to shrink the batch";
  }
  if (group == "batch") {
    return "to compare samples in company and alone";
  }
  if (group == "masks") {
    return "to look for masked NaN/Inf";
  }
  return "of " + group;
}

std::string runs_text(const Report& report) {
  std::vector<std::string> parts;
  for (const auto& [group, n] : runs_by_group(report)) {
    parts.push_back(fmt::format("{} {}", n, group_phrase(group)));
  }
  size_t n = report.runs.size();
  const auto probed = std::count_if(report.runs.begin(), report.runs.end(),
                                    [](const RunRecord& r) { return !r.probe_plan.empty() && r.probe_plan != "none"; });
  std::string out = fmt::format("{} run{}", n, n == 1 ? "" : "s");
  std::string tail = probed > 0 ? fmt::format("; {} probed", probed) : "";
  return parts.empty() ? out + (probed > 0 ? fmt::format(" ({} probed)", probed) : "")
                       : fmt::format("{} ({}{})", out, fmt::join(parts, ", "), tail);
}

std::string builds_summary(const Builds& builds) {
  // The same two numbers as report.json's builds.count and builds.cache_hits.
  if (builds.count + builds.cache_hits <= 0) {
    return "";
  }
  std::string out = builds.count == 0 ? std::string("no build run")
                                      : fmt::format("{} build{} run, {:.1f} s", builds.count,
                                                    builds.count == 1 ? "" : "s", builds.seconds);
  if (builds.cache_hits > 0) {
    out += fmt::format(", {} from the cache", builds.cache_hits);
  }
  return out;
}

std::string bisection_summary(const Bisection& bisection, const Builds& builds) {
  std::vector<std::string> parts;
  if (!bisection.source.empty()) {
    parts.push_back("probes: " + bisection.source);
  }
  if (!bisection.strategy.empty()) {
    parts.push_back(bisection.strategy);
  }
  if (!bisection.status.empty() && bisection.status != "found") {
    parts.push_back(bisection.status);
  }
  std::string runs = fmt::format("{} {}", bisection.runs, bisection.runs == 1 ? "run" : "runs");
  if (bisection.planned_runs > 0) {
    runs += fmt::format(" of {} planned", bisection.planned_runs);
  }
  parts.push_back(runs);
  if (std::string b = builds_summary(builds); !b.empty()) {
    parts.push_back(b);
  }
  return one_line(fmt::format("{}", fmt::join(parts, ", ")));
}

}  // namespace aoti_bisect::report_text
