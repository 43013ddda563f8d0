// junit.xml: one testsuite per part of the job (its runs), then a "verdict"
// testcase, so CI systems show the failure next to the other tests.
// A run fails when its outcome is not ok; the verdict fails unless clean and
// is an <error> when the tool could not test or failed itself.

#include <fmt/format.h>

#include "common/text.hpp"
#include "report/sink_text.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect {

namespace {

using namespace report_text;

std::string xml(const std::string& text) {
  return xml_escape(text);
}

std::string seconds(double s) {
  return fmt::format("{:.3f}", s >= 0 ? s : 0.0);
}

std::string run_case(const RunRecord& run, const std::string& classname) {
  std::string open = fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"", xml(classname), xml(run.id),
                                 seconds(run.seconds));
  if (!run_failed(run)) {
    return open + "/>\n";
  }
  std::string body = fmt::format("variant: {}\nenv: {}\nexit: {}\nprobe plan: {}", run.variant, env_string(run.env),
                                 run.exit, run.probe_plan);
  return fmt::format("{}>\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n", open,
                     xml(std::string(outcome_name(run.outcome))), xml(one_line(run.first_error_line)), xml(body));
}

std::string verdict_case(const Report& r, const std::string& classname) {
  std::string open = fmt::format("    <testcase classname=\"{}\" name=\"verdict\" time=\"{}\"", xml(classname),
                                 seconds(r.total_seconds));
  if (r.verdict == Verdict::clean) {
    return open + "/>\n";
  }
  bool is_error = r.verdict == Verdict::could_not_test || r.verdict == Verdict::internal_error;
  std::string element = is_error ? "error" : "failure";
  std::string message = r.error.empty() ? r.verdict_reason : r.error;
  if (message.empty() && r.failure) {
    message = r.failure->first_line;
  }
  std::string body;
  if (r.culprit) {
    // CI shows the message first: name the call site there, keep the reason in the body.
    if (!message.empty()) {
      body = "reason: " + one_line(message);
    }
    message = "culprit: " + culprit_summary(*r.culprit);
  }
  if (r.failure) {
    body += (body.empty() ? "" : "\n");
    body += fmt::format("failure: {}\nfirst line: {}\nfirst check: {}\nhow often: {}", outcome_name(r.failure->kind),
                        one_line(r.failure->first_line), first_check(*r.failure), how_often(*r.failure));
    if (!r.failure->signature.empty()) {
      body += "\nsignature: " + r.failure->signature;
    }
  }
  if (r.culprit && r.culprit->producer) {
    const Producer& p = *r.culprit->producer;
    std::string from = p.call_index ? fmt::format("call site {} {} ({})", *p.call_index, p.kernel, p.tensor)
                                    : "graph input " + p.tensor;
    body += (body.empty() ? "" : "\n") + ("bad input from: " + one_line(from + (p.why.empty() ? "" : ": " + p.why)));
  }
  if (r.bisection) {
    body += (body.empty() ? "" : "\n") + ("bisection: " + bisection_summary(*r.bisection, r.builds));
  }
  if (!r.reproduce_command.empty()) {
    body += (body.empty() ? "" : "\n") + ("reproduce: " + r.reproduce_command);
  }
  return fmt::format("{}>\n      <{} type=\"{}\" message=\"{}\">{}</{}>\n    </testcase>\n", open, element,
                     xml(std::string(verdict_name(r.verdict))), xml(one_line(message)), xml(body), element);
}

}  // namespace

// One testsuite per part of the job that ran children ("flag matrix",
// "search", ...), each with its runs, then a "verdict" testsuite with the
// verdict's one case: the runs counted here are report.json's run_counts.
std::string report_to_junit(const Report& r) {
  std::string classname = "aoti-bisect." + (r.package.model.empty() ? std::string("model") : r.package.model);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  for (const auto& [group, n] : runs_by_group(r)) {
    int failures = 0;
    double time = 0;
    std::string cases;
    for (const auto& run : r.runs) {
      if (run.group == group) {
        failures += run_failed(run) ? 1 : 0;
        time += run.seconds;
        cases += run_case(run, classname);
      }
    }
    std::string name = group == "matrix" ? "flag matrix" : group;
    out += fmt::format("  <testsuite name=\"aoti-bisect: {}\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{}\">\n",
                       xml(name), n, failures, seconds(time));
    out += cases + "  </testsuite>\n";
  }
  bool is_error = r.verdict == Verdict::could_not_test || r.verdict == Verdict::internal_error;
  bool failed = !is_error && r.verdict != Verdict::clean;
  out +=
      fmt::format("  <testsuite name=\"aoti-bisect: verdict\" tests=\"1\" failures=\"{}\" errors=\"{}\" time=\"{}\">\n",
                  failed ? 1 : 0, is_error ? 1 : 0, seconds(r.total_seconds));
  out += verdict_case(r, classname);
  return out + "  </testsuite>\n</testsuites>\n";
}

}  // namespace aoti_bisect
