// The verdicts' names, and the sentence that says what the upstream reproducer showed.

#include "report/report.hpp"

#include <fmt/format.h>

namespace aoti_bisect {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::running: return "running";
    case Verdict::clean: return "clean";
    case Verdict::isolated: return "isolated";
    case Verdict::not_isolated: return "not_isolated";
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::suppressed_by_instrumentation: return "suppressed_by_instrumentation";
    case Verdict::could_not_test: return "could_not_test";
    case Verdict::internal_error: return "internal_error";
    case Verdict::interrupted: return "interrupted";
  }
  return "internal_error";
}

std::string upstream_sentence(const UpstreamRepro& u) {
  std::string tries = u.tries == 1 ? "1 compile" : fmt::format("{} compiles", u.tries);
  if (u.reproduced) {
    return fmt::format("{}: {} of the exported program's {} graph nodes, compiled alone, show the symptom (exit 1; "
                       "{} in {:.1f} s){}",
                       u.script, u.nodes, u.graph_nodes, tries, u.compile_seconds,
                       u.note.empty() ? "" : "; " + u.note);
  }
  return fmt::format("{}: not reproduced ({}; {} in {:.1f} s)", u.script,
                     u.note.empty() ? "the culprit's nodes alone do not show the symptom" : u.note, tries,
                     u.compile_seconds);
}

}  // namespace aoti_bisect
