// verify's statuses per case, judged from the two packages' reports, and its summary.json, summary.md and junit.xml.
#include "verify/verify_summary.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"
#include "process/process.hpp"
#include "protocol/values.hpp"
#include "report/markdown_parts.hpp"

namespace aoti_bisect {

namespace {

using VJson = nlohmann::ordered_json;

// The outputs' shapes of a report's first run that got outputs (the
// baseline, or its first repeat).
std::vector<std::vector<int64_t>> output_shapes(const Report& r) {
  for (const auto& run : r.runs) {
    if (!run.outputs.empty()) {
      std::vector<std::vector<int64_t>> shapes;
      for (const auto& o : run.outputs) {
        shapes.push_back(o.shape);
      }
      return shapes;
    }
  }
  return {};
}

std::string verify_shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> t;
  for (int64_t n : shape) {
    t.push_back(std::to_string(n));
  }
  return "[" + join(t, ", ") + "]";
}

// "NaN", "Inf", "NaN and Inf" in a failing run's outputs; "NaN/Inf" when
// the counts are not there.
std::string nonfinite_words(const Report& r) {
  int64_t nan = 0, inf = 0;
  for (const auto& run : r.runs) {
    if (run.outcome == OutcomeKind::nonfinite) {
      for (const auto& o : run.outputs) {
        nan += o.nan_count;
        inf += o.inf_count;
      }
      break;
    }
  }
  return nan > 0 && inf > 0 ? "NaN and Inf" : nan > 0 ? "NaN" : inf > 0 ? "Inf" : "NaN/Inf";
}

std::string failure_words(const Report& r) {
  const OutcomeKind k = r.failure->kind;
  switch (k) {
    case OutcomeKind::nonfinite:
      return nonfinite_words(r);
    case OutcomeKind::device_assert:
      return "a failed device-side check" + (r.failure->first_line.empty() ? "" : " (" + r.failure->first_line + ")");
    case OutcomeKind::crash:
      return r.failure->signal ? "a crash (" + signal_name(*r.failure->signal) + ")" : "a crash";
    case OutcomeKind::mismatch: {
      const std::string& line = r.failure->first_line;  // "4 of 32 output values outside tolerance: ..."
      return line.empty() ? "wrong values" : "wrong values (" + line.substr(0, line.find(':')) + ")";
    }
    case OutcomeKind::timeout:
      return "no exit within the time limit";
    default:
      return std::string(outcome_name(k)) + (r.failure->first_line.empty() ? "" : " (" + r.failure->first_line + ")");
  }
}

std::string culprit_words(const Report& r) {
  if (!r.culprit) {
    return ", not isolated";
  }
  return fmt::format(" at call site {} {}", r.culprit->call_index, r.culprit->kernel);
}

VJson verify_culprit_json(const std::optional<int>& index, const std::string& kernel) {
  if (kernel.empty()) {
    return nullptr;
  }
  return VJson{{"call_index", index ? VJson(*index) : VJson(nullptr)}, {"kernel", kernel}};
}

std::string junit_seconds(double s) {
  return fmt::format("{:.3f}", s);
}

}  // namespace

std::string count_change(const std::vector<std::vector<int64_t>>& before, const std::vector<std::vector<int64_t>>& now,
                         int64_t rows) {
  if (before.size() != now.size()) {
    return fmt::format("{} output{} before, {} now", before.size(), before.size() == 1 ? "" : "s", now.size());
  }
  for (size_t i = 0; i < before.size(); ++i) {
    const auto& b = before[i];
    const auto& n = now[i];
    if (b == n) {
      continue;
    }
    if (b.size() == n.size() && !b.empty() && std::equal(b.begin() + 1, b.end(), n.begin() + 1)) {
      const char* what = b[0] == rows && rows > 0 ? "samples" : "rows";
      return fmt::format("output {}: {} row{} before, {} now: {} were {}", i, b[0], b[0] == 1 ? "" : "s", n[0], what,
                         n[0] < b[0] ? "dropped" : "added");
    }
    return fmt::format("output {}: shape {} before, {} now", i, verify_shape_text(b), verify_shape_text(n));
  }
  return "";
}

void judge_case(VerifyCase& c, const Report& fixed, const Report* before,
                const std::vector<EarlierFailureSite>& earlier, int64_t rows) {
  c.verdict = std::string(verdict_name(fixed.verdict));
  if (before != nullptr) {
    c.before = VerifyCase::Before{std::string(verdict_name(before->verdict)),
                                  before->failure ? std::string(outcome_name(before->failure->kind)) : "",
                                  before->failure ? before->failure->signature : ""};
  }
  if (fixed.verdict == Verdict::interrupted) {
    c.status = "interrupted";
    return;
  }
  if (fixed.failure && fixed.failure->kind == OutcomeKind::input_mismatch) {
    c.status = "could_not_test";  // the inputs do not fit the fixed package: nothing is known of the fix
    c.error = "the inputs do not fit the fixed package: " + fixed.failure->first_line;
    c.why = c.error;
    return;
  }
  if (fixed.failure) {
    c.failure_kind = std::string(outcome_name(fixed.failure->kind));
    c.signature = fixed.failure->signature;
    if (fixed.culprit) {
      c.culprit_call_index = fixed.culprit->call_index;
      c.culprit_kernel = fixed.culprit->kernel;
    }
    const bool known = std::any_of(earlier.begin(), earlier.end(), [&](const EarlierFailureSite& e) {
      return e.signature == c.signature ||
             (e.kind == c.failure_kind && e.call_index && e.call_index == c.culprit_call_index);
    });
    c.status = earlier.empty() ? "fails" : known ? "reproduces" : "new_failure";
    std::string then;
    if (before != nullptr && before->failure) {
      then = before->failure->kind == fixed.failure->kind
                 ? ", as before the fix"
                 : ", where the failing package gave " + std::string(outcome_name(before->failure->kind));
    } else if (before != nullptr && before->verdict == Verdict::clean) {
      then = ", which the failing package did not make on these inputs";
    }
    c.why = fmt::format("{}{}{}", failure_words(fixed), culprit_words(fixed), then);
    return;
  }
  if (fixed.verdict != Verdict::clean) {
    c.status = "could_not_test";
    c.error = fixed.error.empty() ? fixed.verdict_reason : fixed.error;
    c.why = c.error;
    return;
  }
  if (before != nullptr) {
    std::string change = count_change(output_shapes(*before), output_shapes(fixed), rows);
    if (!change.empty() && !output_shapes(*before).empty()) {
      c.status = "count_changed";
      c.why = change;
      return;
    }
  }
  if (fixed.masked && !fixed.masked->empty()) {
    for (const auto& h : *fixed.masked) {
      c.masked.push_back(h.note);
    }
    c.status = "masked";
    c.why = "the outputs are clean, but " + fixed.masked->front().note;
    return;
  }
  c.status = "clean";
  c.why = before != nullptr && before->failure ? "clean, where the failing package gave " +
                                                     std::string(outcome_name(before->failure->kind))
                                               : "";
}

bool verify_fails(const std::string& status) {
  return status == "reproduces" || status == "new_failure" || status == "fails" || status == "masked" ||
         status == "count_changed";
}

int verify_exit_code(const VerifySummary& s) {
  if (s.interrupted) {
    return static_cast<int>(ExitCode::interrupted);
  }
  bool untested = s.cases.empty();
  for (const auto& c : s.cases) {
    if (verify_fails(c.status)) {
      return static_cast<int>(ExitCode::isolated);
    }
    untested = untested || c.status != "clean";
  }
  return static_cast<int>(untested ? ExitCode::cannot_test : ExitCode::clean);
}

std::string first_failing_sentence(const VerifySummary& s) {
  for (const auto& c : s.cases) {
    if (verify_fails(c.status)) {
      return fmt::format("{}: {}", c.what.empty() ? c.name : c.what, c.why);
    }
  }
  return "";
}

std::string verify_summary_json(const VerifySummary& s) {
  VJson cases = VJson::array();
  for (const auto& c : s.cases) {
    VJson apart = nullptr;
    if (c.apart && c.apart->error.empty() && c.apart->compared > 0) {
      apart = VJson{{"max_abs", json_number(c.apart->max_abs)},
                   {"max_rel", json_number(c.apart->max_rel)},
                   {"beyond_tolerance", c.apart->beyond},
                   {"elements", c.apart->elements},
                   {"worst_output", text_or_null<VJson>(c.apart->worst_output)}};
    }
    VJson before = nullptr;
    if (c.before) {
      before = VJson{{"verdict", c.before->verdict},
                    {"failure_kind", text_or_null<VJson>(c.before->failure_kind)},
                    {"signature", text_or_null<VJson>(c.before->signature)}};
    }
    cases.push_back(VJson{{"name", c.name},
                         {"what", c.what},
                         {"input_shapes", c.input_shapes},
                         {"status", c.status},
                         {"verify", c.status},
                         {"why", text_or_null<VJson>(c.why)},
                         {"verdict", c.verdict},
                         {"exit_code", c.exit_code >= 0 ? VJson(c.exit_code) : VJson(nullptr)},
                         {"failure_kind", text_or_null<VJson>(c.failure_kind)},
                         {"signature", text_or_null<VJson>(c.signature)},
                         {"culprit", verify_culprit_json(c.culprit_call_index, c.culprit_kernel)},
                         {"before", before},
                         {"outputs_vs_baseline", apart},
                         {"masked", c.masked},
                         {"report", text_or_null<VJson>(c.report)},
                         {"seconds", json_number(c.seconds)},
                         {"error", text_or_null<VJson>(c.error)},
                         {"note", text_or_null<VJson>(c.note)}});
  }
  VJson j{{"schema_version", 2},
         {"tool", VJson{{"name", "aoti-bisect"}, {"version", s.tool_version}}},
         {"command", "verify"},
         {"package", s.package},
         {"failing_package", text_or_null<VJson>(s.failing_package)},
         {"baseline", text_or_null<VJson>(s.baseline)},
         {"baseline_signatures", s.baseline_signatures},
         {"cases", std::move(cases)},
         {"notes", s.notes},
         {"interrupted", s.interrupted},
         {"seconds", json_number(s.seconds)},
         {"exit_code", s.exit_code}};
  return j.dump(2) + "\n";
}

std::string verify_summary_markdown(const VerifySummary& s) {
  using namespace report_md;
  std::map<std::string, int> counts;
  for (const auto& c : s.cases) {
    counts[c.status]++;
  }
  std::vector<std::string> parts;
  for (const auto& [status, n] : counts) {
    parts.push_back(fmt::format("{} {}", n, status));
  }
  std::string out = fmt::format("# aoti-bisect verify: {}\n\n", s.exit_code == 0 ? "every case clean"
                                                                 : s.exit_code == 1 ? "the fix does not hold"
                                                                                    : "not every case could be tested");
  const std::string first = first_failing_sentence(s);
  if (!first.empty()) {
    out += plain(first) + "\n\n";
  }
  out += fmt::format("- **Cases:** {} ({})\n", s.cases.size(), join(parts, ", "));
  item(out, "Package", code(s.package));
  item(out, "Failing package", s.failing_package.empty() ? "" : code(s.failing_package));
  item(out, "Baseline", s.baseline.empty() ? "" : code(s.baseline));
  out += fmt::format("- **Exit code:** {}\n\n## Cases\n\n", s.exit_code);
  out += table_head({"Case", "Inputs", "Status", "Why", "Before the fix", "Report"});
  for (const auto& c : s.cases) {
    std::vector<std::string> shapes;
    for (const auto& sh : c.input_shapes) {
      shapes.push_back(verify_shape_text(sh));
    }
    std::string before = !c.before                        ? ""
                         : c.before->failure_kind.empty() ? plain(c.before->verdict)
                                                          : code(c.before->failure_kind);
    std::string what = c.what + (c.note.empty() ? "" : (c.what.empty() ? "" : "; ") + c.note);
    out += table_row({code(c.name) + (what.empty() ? "" : ": " + plain(what)), plain(join(shapes, " ")),
                      "**" + c.status + "**", plain(c.why), before,
                      c.report.empty() ? "" : fmt::format("[report]({})", c.report)});
  }
  std::string apart;
  for (const auto& c : s.cases) {
    if (c.apart && c.apart->error.empty() && c.apart->beyond > 0) {
      apart += fmt::format(
          "- `{}`: {} of {} elements finite under both packages differ beyond tolerance (max abs {:.4g}, max rel "
          "{:.4g}, worst in {})\n",
          c.name, c.apart->beyond, c.apart->elements, c.apart->max_abs, c.apart->max_rel, c.apart->worst_output);
    }
  }
  if (!apart.empty()) {
    out += "\n## Outputs changed elsewhere\n\nStated, not failed: the fix changed values the failing package "
           "computed finite.\n\n" +
           apart;
  }
  if (!s.notes.empty()) {
    out += "\n## Not made\n\n";
    for (const auto& n : s.notes) {
      out += "- " + plain(n) + "\n";
    }
  }
  return out;
}

std::string verify_summary_junit(const VerifySummary& s) {
  int failures = 0, errors = 0, skipped = 0;
  std::string body;
  for (const auto& c : s.cases) {
    std::string open = fmt::format("    <testcase classname=\"aoti-bisect.verify\" name=\"{}\" time=\"{}\"",
                                   xml_escape(c.name), junit_seconds(c.seconds));
    if (c.status == "clean") {
      body += open + "/>\n";
    } else if (verify_fails(c.status)) {
      ++failures;
      body += fmt::format("{}>\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n", open,
                          xml_escape(c.status), xml_escape(printable_name(c.why)), xml_escape(c.what));
    } else if (c.status == "not_run" || c.status == "interrupted") {
      ++skipped;
      body += open + ">\n      <skipped message=\"" + c.status + "\"/>\n    </testcase>\n";
    } else {
      ++errors;
      body += fmt::format("{}>\n      <error type=\"{}\" message=\"{}\"/>\n    </testcase>\n", open,
                          xml_escape(c.status), xml_escape(printable_name(c.error)));
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"aoti-bisect verify\" "
      "tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      s.cases.size(), failures, errors, skipped, junit_seconds(s.seconds), body);
}

}  // namespace aoti_bisect
