#include "report/report.hpp"

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

}  // namespace aoti_bisect
