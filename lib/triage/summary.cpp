// What triage and verify learn from the cases' reports: case states, groups by signature and by torch,
// marks against a baseline, the exit code, and summary.json, summary.md and junit.xml.

#include "triage/summary.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <type_traits>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"
#include "protocol/values.hpp"
#include "report/markdown_parts.hpp"

namespace aoti_bisect {
using Json = nlohmann::json;

namespace {

std::string text_at(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

template <class T>
std::optional<T> number_at(const Json& j, const char* key) {
  auto it = j.find(key);
  bool fits = it != j.end() && (std::is_integral_v<T> ? it->is_number_integer() : it->is_number());
  return fits ? std::optional<T>(it->get<T>()) : std::nullopt;
}

// The "culprit" object of `j` ({"call_index", "kernel"}), if it has one.
void read_culprit(const Json& j, std::optional<int>& call_index, std::string& kernel) {
  auto k = j.find("culprit");
  if (k != j.end() && k->is_object()) {
    kernel = text_at(*k, "kernel");
    call_index = number_at<int>(*k, "call_index");
  }
}

Json case_culprit_json(const std::optional<int>& call_index, const std::string& kernel) {
  if (kernel.empty()) {
    return nullptr;
  }
  return Json{{"call_index", call_index ? Json(*call_index) : Json(nullptr)}, {"kernel", kernel}};
}

std::string seconds_text(double s) {
  return fmt::format("{:.3f}", s >= 0 ? s : 0.0);
}

}  // namespace

std::string culprit_text(const std::optional<int>& call_index, const std::string& kernel) {
  if (kernel.empty()) {
    return "";
  }
  return call_index ? fmt::format("call site {} {}", *call_index, kernel) : kernel;
}

std::string_view case_state_name(CaseState s) {
  switch (s) {
    case CaseState::clean: return "clean";
    case CaseState::failed: return "failed";
    case CaseState::could_not_test: return "could_not_test";
    case CaseState::interrupted: return "interrupted";
    case CaseState::not_run: return "not_run";
  }
  return "could_not_test";
}

CaseState case_state(const CaseResult& c) {
  const std::string& v = c.verdict;
  if (v == "clean") {
    return CaseState::clean;
  }
  if (v == "isolated" || v == "not_isolated" || v == "inconclusive" || v == "suppressed_by_instrumentation") {
    return CaseState::failed;
  }
  if (v == "interrupted") {
    return CaseState::interrupted;
  }
  if (v == "not_run") {
    return CaseState::not_run;
  }
  return CaseState::could_not_test;  // could_not_test, internal_error, no_report, running, anything unknown
}

void read_case_report(const Json& report, CaseResult& c) {
  c.verdict = text_at(report, "verdict");
  if (c.verdict.empty()) {
    c.verdict = "no_report";
  }
  c.error = text_at(report, "error");
  auto f = report.find("failure");
  if (f != report.end() && f->is_object()) {
    c.failure_kind = text_at(*f, "kind");
    c.signature = text_at(*f, "signature");
  }
  if (c.verdict == "isolated") {
    read_culprit(report, c.culprit_call_index, c.culprit_kernel);
  }
  c.seconds = number_at<double>(report, "total_seconds").value_or(c.seconds);
  if (auto p = report.find("package"); p != report.end() && p->is_object()) {
    c.package_torch = text_at(*p, "torch_version");
  }
  if (auto e = report.find("environment"); e != report.end() && e->is_object()) {
    c.runner_torch = text_at(*e, "torch_version");
  }
  if (auto in = report.find("inputs"); in != report.end() && in->is_object()) {
    if (auto m = in->find("minimal"); m != in->end() && m->is_object()) {
      c.minimal_inputs = text_at(*m, "sentence");
    }
    if (auto b = in->find("batch_dependence"); b != in->end() && b->is_object()) {
      c.batch_dependent = text_at(*b, "finding") == "batch_dependent";
    }
  }
}

std::vector<TorchGroup> group_by_torch(const std::vector<CaseResult>& cases) {
  std::vector<TorchGroup> groups;
  for (const auto& c : cases) {
    auto g =
        std::find_if(groups.begin(), groups.end(), [&](const TorchGroup& x) { return x.torch == c.package_torch; });
    if (g == groups.end()) {
      groups.push_back(TorchGroup{c.package_torch, {}, {}});
      g = groups.end() - 1;
    }
    g->cases.push_back(c.name);
    if (!c.runner_torch.empty() &&
        std::find(g->runners.begin(), g->runners.end(), c.runner_torch) == g->runners.end()) {
      g->runners.push_back(c.runner_torch);
    }
  }
  return groups;
}

std::vector<Group> group_cases(const std::vector<CaseResult>& cases) {
  std::vector<Group> groups;
  for (const auto& c : cases) {
    if (case_state(c) != CaseState::failed || c.signature.empty()) {
      continue;
    }
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.signature == c.signature; });
    if (g == groups.end()) {
      groups.push_back(Group{c.signature, c.failure_kind, c.culprit_call_index, c.culprit_kernel, {}, ""});
      g = groups.end() - 1;
    }
    g->cases.push_back(c.name);
  }
  return groups;
}

std::vector<EarlierFailure> earlier_failures(const Json& doc, const std::string& source) {
  std::vector<EarlierFailure> out;
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::usage,
                 fmt::format("'{}' is not an aoti-bisect summary.json or report.json: {}", source, why));
  };
  if (!doc.is_object()) {
    throw bad("not a JSON object");
  }
  if (auto groups = doc.find("groups"); groups != doc.end()) {
    if (!groups->is_array()) {
      throw bad("'groups' is not a list");
    }
    for (const auto& g : *groups) {
      if (!g.is_object() || text_at(g, "signature").empty()) {
        throw bad("a group has no 'signature'");
      }
      // An earlier night's fixed groups are history, not failures.
      if (text_at(g, "status") == "fixed") {
        continue;
      }
      EarlierFailure e{text_at(g, "signature"), text_at(g, "kind"), std::nullopt, "", {}, ""};
      read_culprit(g, e.culprit_call_index, e.culprit_kernel);
      if (auto cs = g.find("cases"); cs != g.end() && cs->is_array()) {
        for (const auto& n : *cs) {
          if (n.is_string()) {
            e.cases.push_back(n.get<std::string>());
          }
        }
      }
      out.push_back(std::move(e));
    }
    return out;
  }
  if (doc.contains("verdict") && doc.contains("failure")) {
    CaseResult c;
    read_case_report(doc, c);
    if (!c.signature.empty()) {
      out.push_back(EarlierFailure{c.signature, c.failure_kind, c.culprit_call_index, c.culprit_kernel, {}, ""});
    }
    return out;
  }
  throw bad("it has neither 'groups' nor 'failure'");
}

void mark_against_baseline(Summary& s, const std::vector<EarlierFailure>& baseline) {
  std::set<std::string> today;
  for (auto& g : s.groups) {
    bool known = std::any_of(baseline.begin(), baseline.end(),
                             [&](const EarlierFailure& e) { return e.signature == g.signature; });
    g.status = known ? "known" : "new";
    today.insert(g.signature);
  }
  std::map<std::string, CaseState> state;
  for (const auto& c : s.cases) {
    state[c.name] = case_state(c);
  }
  for (const auto& e : baseline) {
    if (today.count(e.signature) != 0) {
      continue;
    }
    today.insert(e.signature);
    bool untested = std::any_of(e.cases.begin(), e.cases.end(), [&](const std::string& n) {
      auto it = state.find(n);
      return it != state.end() && it->second != CaseState::clean && it->second != CaseState::failed;
    });
    s.groups.push_back(e);
    s.groups.back().status = untested ? "untested" : "fixed";
  }
}

void judge_verify(Summary& s, const std::vector<EarlierFailure>& earlier) {
  for (auto& c : s.cases) {
    CaseState st = case_state(c);
    if (st != CaseState::failed) {
      c.verify = std::string(case_state_name(st));
    } else if (earlier.empty()) {
      c.verify = "fails";
    } else {
      bool known = std::any_of(earlier.begin(), earlier.end(),
                               [&](const EarlierFailure& e) { return e.signature == c.signature; });
      c.verify = known ? "reproduces" : "new_failure";
    }
  }
}

int triage_exit_code(const std::vector<CaseResult>& cases, bool interrupted) {
  if (interrupted) {
    return static_cast<int>(ExitCode::interrupted);
  }
  bool failed = false;
  bool untested = false;
  for (const auto& c : cases) {
    CaseState st = case_state(c);
    failed = failed || st == CaseState::failed;
    untested = untested || (st != CaseState::clean && st != CaseState::failed);
  }
  if (failed) {
    return static_cast<int>(ExitCode::isolated);
  }
  return static_cast<int>(untested ? ExitCode::cannot_test : ExitCode::clean);
}

std::string summary_to_json(const Summary& s) {
  Json cases = Json::array();
  for (const auto& c : s.cases) {
    Json j{{"name", c.name},
           {"index", c.index >= 0 ? Json(c.index) : Json(nullptr)},
           {"verdict", c.verdict},
           {"state", std::string(case_state_name(case_state(c)))},
           {"exit_code", c.exit_code >= 0 ? Json(c.exit_code) : Json(nullptr)},
           {"failure_kind", text_or_null<Json>(c.failure_kind)},
           {"signature", text_or_null<Json>(c.signature)},
           {"culprit", case_culprit_json(c.culprit_call_index, c.culprit_kernel)},
           {"report", text_or_null<Json>(c.report)},
           {"seconds", c.seconds},
           {"error", text_or_null<Json>(c.error)},
           {"package_torch", text_or_null<Json>(c.package_torch)},
           {"runner_torch", text_or_null<Json>(c.runner_torch)},
           {"minimal_inputs", text_or_null<Json>(c.minimal_inputs)},
           {"batch_dependent", c.batch_dependent}};
    if (!c.verify.empty()) {
      j["verify"] = c.verify;
    }
    cases.push_back(std::move(j));
  }
  Json groups = Json::array();
  for (const auto& g : s.groups) {
    groups.push_back(Json{{"signature", g.signature},
                          {"kind", text_or_null<Json>(g.kind)},
                          {"culprit", case_culprit_json(g.culprit_call_index, g.culprit_kernel)},
                          {"cases", g.cases},
                          {"status", text_or_null<Json>(g.status)}});
  }
  Json torches = Json::array();
  for (const auto& t : group_by_torch(s.cases)) {
    torches.push_back(Json{{"torch", text_or_null<Json>(t.torch)}, {"runners", t.runners}, {"cases", t.cases}});
  }
  Json j{{"schema_version", 1},
         {"tool", Json{{"name", "aoti-bisect"}, {"version", s.tool_version}}},
         {"command", s.command},
         {"manifest", text_or_null<Json>(s.manifest)},
         {"manifest_sha256", text_or_null<Json>(s.manifest_sha256)},
         {"manifest_cases", s.manifest_cases},
         {"shard", text_or_null<Json>(s.shard)},
         {"baseline", text_or_null<Json>(s.baseline)},
         {"interrupted", s.interrupted},
         {"exit_code", s.exit_code},
         {"seconds", s.seconds},
         {"cases", std::move(cases)},
         {"groups", std::move(groups)},
         {"torches", std::move(torches)}};
  if (!s.merged_from.empty()) {
    Json from = Json::array();
    for (const auto& m : s.merged_from) {
      from.push_back(Json{{"dir", m.dir}, {"shard", m.shard}, {"cases", m.cases}});
    }
    j["merged_from"] = std::move(from);
  }
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Summary summary_from_json(const Json& doc, const std::string& source) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::usage, fmt::format("'{}' is not an aoti-bisect triage summary.json: {}", source, why));
  };
  if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_array()) {
    throw bad("it has no 'cases' list");
  }
  Summary s;
  if (auto t = doc.find("tool"); t != doc.end() && t->is_object()) {
    s.tool_version = text_at(*t, "version");
  }
  s.command = text_at(doc, "command");
  s.manifest = text_at(doc, "manifest");
  s.manifest_sha256 = text_at(doc, "manifest_sha256");
  s.shard = text_at(doc, "shard");
  s.baseline = text_at(doc, "baseline");
  s.manifest_cases = number_at<int>(doc, "manifest_cases").value_or(0);
  s.interrupted = doc.value("interrupted", false);
  s.seconds = number_at<double>(doc, "seconds").value_or(0);
  for (const auto& j : doc["cases"]) {
    if (!j.is_object() || text_at(j, "name").empty()) {
      throw bad("a case has no 'name'");
    }
    CaseResult c;
    c.name = text_at(j, "name");
    c.index = number_at<int>(j, "index").value_or(-1);
    c.verdict = text_at(j, "verdict");
    c.exit_code = number_at<int>(j, "exit_code").value_or(-1);
    c.failure_kind = text_at(j, "failure_kind");
    c.signature = text_at(j, "signature");
    read_culprit(j, c.culprit_call_index, c.culprit_kernel);
    c.report = text_at(j, "report");
    c.seconds = number_at<double>(j, "seconds").value_or(0);
    c.error = text_at(j, "error");
    c.verify = text_at(j, "verify");
    c.package_torch = text_at(j, "package_torch");
    c.runner_torch = text_at(j, "runner_torch");
    c.minimal_inputs = text_at(j, "minimal_inputs");
    c.batch_dependent = j.value("batch_dependent", false);
    s.cases.push_back(std::move(c));
  }
  return s;
}

namespace {

// The summary's title (failure groups in cases) and its list of facts: the
// cases by state, manifest, shard, merged directories, baseline, exit code.
void summary_md_heading(const Summary& s, std::string& out) {
  using namespace report_md;
  std::map<CaseState, int> counts;
  for (const auto& c : s.cases) {
    counts[case_state(c)]++;
  }
  size_t failing_groups = 0;
  for (const auto& g : s.groups) {
    failing_groups += g.status != "fixed" && g.status != "untested" ? 1 : 0;
  }
  out += fmt::format("# aoti-bisect {}: {} failure group{} in {} case{}{}\n\n", s.command, failing_groups,
                     failing_groups == 1 ? "" : "s", s.cases.size(), s.cases.size() == 1 ? "" : "s",
                     s.interrupted ? " (interrupted: partial)" : "");
  std::vector<std::string> parts;
  for (CaseState st :
       {CaseState::clean, CaseState::failed, CaseState::could_not_test, CaseState::interrupted, CaseState::not_run}) {
    if (counts[st] > 0) {
      parts.push_back(fmt::format("{} {}", counts[st], case_state_name(st)));
    }
  }
  out += fmt::format("- **Cases:** {}\n", parts.empty() ? "none" : join(parts, ", "));
  item(out, "Manifest", s.manifest.empty() ? "" : code(s.manifest));
  item(out, "Shard",
       s.shard.empty() ? ""
                       : fmt::format("{} ({} of the manifest's {} cases)", s.shard, s.cases.size(), s.manifest_cases));
  if (!s.merged_from.empty()) {
    std::vector<std::string> from;
    for (const auto& m : s.merged_from) {
      from.push_back(fmt::format("{} ({}, {} case{})", code(m.dir), m.shard, m.cases, m.cases == 1 ? "" : "s"));
    }
    item(out, "Merged from", join(from, ", "));
  }
  item(out, "Baseline", s.baseline.empty() ? "" : code(s.baseline));
  out += fmt::format("- **Exit code:** {}\n\n", s.exit_code);
}

// "## Failures by signature": one row per group, with a Status column when
// there is a baseline or any group has a status.
void summary_md_failure_groups(const Summary& s, std::string& out) {
  using namespace report_md;
  out += "## Failures by signature\n\n";
  if (s.groups.empty()) {
    out += "No case failed.\n\n";
    return;
  }
  bool with_status = !s.baseline.empty() ||
                     std::any_of(s.groups.begin(), s.groups.end(), [](const Group& g) { return !g.status.empty(); });
  std::vector<std::string> head = {"Signature", "Kind", "Culprit", "Cases"};
  if (with_status) {
    head.insert(head.begin() + 1, "Status");
  }
  out += table_head(head);
  for (const auto& g : s.groups) {
    std::vector<std::string> cases;
    for (const auto& n : g.cases) {
      cases.push_back(code(n));
    }
    std::vector<std::string> row = {
        code(g.signature), code(g.kind),
        g.culprit_kernel.empty() ? "not isolated" : code(culprit_text(g.culprit_call_index, g.culprit_kernel)),
        join(cases, ", ")};
    if (with_status) {
      row.insert(row.begin() + 1, g.status.empty() ? "" : "**" + g.status + "**");
    }
    out += table_row(row);
  }
  out += "\n";
}

// "## Cases by torch": the torch each case was built with and the LibTorch
// that ran it.
void summary_md_torches(const Summary& s, std::string& out) {
  using namespace report_md;
  out += "## Cases by torch\n\n";
  out += table_head({"Built with torch", "Run by LibTorch", "Cases"});
  for (const auto& t : group_by_torch(s.cases)) {
    std::vector<std::string> cases;
    for (const auto& n : t.cases) {
      cases.push_back(code(n));
    }
    out +=
        table_row({t.torch.empty() ? "not recorded" : plain(t.torch), plain(join(t.runners, ", ")), join(cases, ", ")});
  }
  out += "\n";
}

// "## Cases": one row per case, with Verify and Trigger columns when any case
// has them.
void summary_md_cases(const Summary& s, std::string& out) {
  using namespace report_md;
  out += "## Cases\n\n";
  bool with_verify = std::any_of(s.cases.begin(), s.cases.end(), [](const CaseResult& c) { return !c.verify.empty(); });
  bool with_minimal =
      std::any_of(s.cases.begin(), s.cases.end(), [](const CaseResult& c) { return !c.minimal_inputs.empty(); });
  std::vector<std::string> head = {"Case", "Verdict", "Exit", "Failure", "Culprit", "Signature", "Report"};
  if (with_minimal) {
    head.insert(head.end() - 1, "Trigger");
  }
  if (with_verify) {
    head.insert(head.begin() + 1, "Verify");
  }
  out += table_head(head);
  for (const auto& c : s.cases) {
    std::string failure = c.failure_kind.empty() ? (c.error.empty() ? "" : plain(c.error)) : code(c.failure_kind);
    std::vector<std::string> row = {
        code(c.name),
        code(c.verdict),
        c.exit_code >= 0 ? std::to_string(c.exit_code) : "",
        failure,
        c.culprit_kernel.empty() ? "" : code(culprit_text(c.culprit_call_index, c.culprit_kernel)),
        c.signature.empty() ? "" : code(c.signature),
        c.report.empty() ? "" : fmt::format("[report]({})", c.report.substr(0, c.report.rfind('/')) + "/report.md")};
    if (with_minimal) {
      row.insert(row.end() - 1, plain(c.minimal_inputs) + (c.batch_dependent ? "; `batch_dependent`" : ""));
    }
    if (with_verify) {
      row.insert(row.begin() + 1, c.verify.empty() ? "" : "**" + c.verify + "**");
    }
    out += table_row(row);
  }
}

}  // namespace

std::string summary_to_markdown(const Summary& s) {
  std::string out;
  summary_md_heading(s, out);
  summary_md_failure_groups(s, out);
  summary_md_torches(s, out);
  summary_md_cases(s, out);
  return out;
}

std::string summary_to_junit(const Summary& s) {
  int failures = 0;
  int errors = 0;
  int skipped = 0;
  std::string body;
  for (const auto& c : s.cases) {
    std::string open = fmt::format("    <testcase classname=\"aoti-bisect.{}\" name=\"{}\" time=\"{}\"", s.command,
                                   xml_escape(c.name), seconds_text(c.seconds));
    CaseState st = case_state(c);
    if (st == CaseState::clean) {
      body += open + "/>\n";
      continue;
    }
    std::string detail = fmt::format("verdict: {}", c.verdict);
    if (!c.signature.empty()) {
      detail += "\nsignature: " + c.signature;
    }
    if (!c.report.empty()) {
      detail += "\nreport: " + c.report;
    }
    if (st == CaseState::failed) {
      ++failures;
      std::string message = c.failure_kind;
      std::string culprit = culprit_text(c.culprit_call_index, c.culprit_kernel);
      message += culprit.empty() ? ", not isolated" : " at " + culprit;
      body += fmt::format("{}>\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n", open,
                          xml_escape(c.failure_kind), xml_escape(message), xml_escape(detail));
    } else if (st == CaseState::not_run) {
      ++skipped;
      body += open + ">\n      <skipped message=\"not run (the triage was interrupted)\"/>\n    </testcase>\n";
    } else {
      ++errors;
      std::string message = c.error.empty() ? c.verdict : c.error;
      body += fmt::format("{}>\n      <error type=\"{}\" message=\"{}\">{}</error>\n    </testcase>\n", open,
                          xml_escape(c.verdict), xml_escape(printable_name(message)), xml_escape(detail));
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"aoti-bisect {}\" tests=\"{}\" "
      "failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      s.command, s.cases.size(), failures, errors, skipped, seconds_text(s.seconds), body);
}

}  // namespace aoti_bisect
