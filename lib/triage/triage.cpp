// `aoti-bisect triage` and `verify`: each case one `aoti-bisect run` child, N at a time, its result read
// from its report, then the summaries written; an earlier night's failures loaded as a baseline.

#include "triage/triage.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/clock.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "harness/recorder.hpp"
#include "job/out_dir.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& triage_products() {
  static const std::vector<std::string> names = {"summary.json", "summary.md", "junit.xml", "cases"};
  return names;
}

std::vector<std::string> case_argv(const TriageOptions& o, const ManifestCase& c, const fs::path& case_dir) {
  std::vector<std::string> argv = {o.tool.empty() ? self_executable().string() : o.tool.string(), "run",
                                   c.package.string(), "--out", case_dir.string()};
  for (const auto& in : c.inputs) {
    argv.push_back("--inputs");
    argv.push_back(in.string());
  }
  auto add = [&](const char* flag, const fs::path& p) {
    if (!p.empty()) {
      argv.push_back(flag);
      argv.push_back(p.string());
    }
  };
  add("--reference", c.reference);
  add("--exported-program", c.exported_program);
  add("--config", c.config);
  add("--cache-dir", o.cache_dir);
  for (const auto& lib : c.load_libraries) {
    add("--load-library", lib);
  }
  if (!c.model.empty()) {
    argv.push_back("--model");
    argv.push_back(c.model);
  }
  if (c.against_eager) {
    argv.push_back("--against-eager");
  }
  if (c.timeout_s) {
    argv.push_back("--timeout");
    argv.push_back(fmt::format("{}", *c.timeout_s));
  }
  for (auto [flag, value] : {std::pair<const char*, std::optional<int>>{"--repeats", c.repeats}, {"--jobs", c.jobs}}) {
    if (value) {
      argv.push_back(flag);
      argv.push_back(std::to_string(*value));
    }
  }
  if (!o.python.empty() && std::find(c.options.begin(), c.options.end(), "--python") == c.options.end()) {
    argv.push_back("--python");
    argv.push_back(o.python);
  }
  argv.insert(argv.end(), c.options.begin(), c.options.end());
  return argv;
}

// The last "aoti-bisect: ..." line of a case's stderr (its error), else its
// last line.
std::string error_line(const std::string& stderr_tail) {
  std::string last;
  std::string tool;
  size_t start = 0;
  while (start < stderr_tail.size()) {
    size_t end = stderr_tail.find('\n', start);
    if (end == std::string::npos) {
      end = stderr_tail.size();
    }
    std::string line(trim(std::string_view(stderr_tail).substr(start, end - start)));
    if (!line.empty()) {
      last = line;
      if (line.rfind("aoti-bisect: ", 0) == 0) {
        tool = line.substr(13);
      }
    }
    start = end + 1;
  }
  return redact_paths(printable_name(tool.empty() ? last : tool));
}

CaseResult finished_case(const ManifestCase& c, const fs::path& out_dir, const ExitStatus& st) {
  CaseResult r;
  r.name = c.name;
  r.seconds = st.seconds;
  r.exit_code = st.how == ExitStatus::How::exited ? st.exit_code : -1;
  fs::path report = out_dir / "cases" / c.name / "report.json";
  std::error_code ec;
  if (fs::is_regular_file(report, ec)) {
    r.report = "cases/" + c.name + "/report.json";
    try {
      read_case_report(nlohmann::json::parse(read_file(report, "report")), r);
    } catch (const std::exception& e) {
      r.verdict = "no_report";
      r.error = fmt::format("its report.json cannot be read ({})", printable_name(e.what()));
    }
  } else {
    r.verdict = st.how == ExitStatus::How::interrupted ? "interrupted" : "no_report";
  }
  if (st.how == ExitStatus::How::interrupted) {
    r.verdict = "interrupted";
  }
  if (r.error.empty() && r.verdict != "clean" && r.failure_kind.empty()) {
    std::string line = error_line(st.stderr_tail);
    r.error = st.how == ExitStatus::How::exited ? line : st.describe() + (line.empty() ? "" : ": " + line);
  }
  if (r.verdict == "no_report" && r.error.empty()) {
    r.error = "it ended with " + st.describe() + " and wrote no report";
  }
  return r;
}

std::string finished_line(const CaseResult& r) {
  std::string line = fmt::format("{}: {}", r.name, r.verdict);
  if (r.exit_code >= 0) {
    line += fmt::format(" (exit {})", r.exit_code);
  }
  if (!r.failure_kind.empty()) {
    line += ", " + r.failure_kind;
    if (!r.culprit_kernel.empty()) {
      line += r.culprit_call_index ? fmt::format(" at call site {} {}", *r.culprit_call_index, r.culprit_kernel)
                                   : " at " + r.culprit_kernel;
    }
  }
  if (!r.signature.empty()) {
    line += ", signature " + r.signature;
  }
  if (!r.error.empty() && r.failure_kind.empty()) {
    line += ": " + r.error;
  }
  return line + fmt::format(" [{:.1f} s]", r.seconds);
}

}  // namespace

void write_summaries(const Summary& s, const fs::path& dir) {
  try {
    write_file_atomic(dir / "summary.json", summary_to_json(s));
    write_file_atomic(dir / "summary.md", summary_to_markdown(s));
    write_file_atomic(dir / "junit.xml", summary_to_junit(s));
  } catch (const Error& e) {
    throw Error(ErrorKind::internal,
                fmt::format("the summary cannot be written: {}; free space or choose another --out", e.what()));
  }
}

std::vector<EarlierFailure> load_baseline(const fs::path& path) {
  std::string text;
  try {
    text = read_file(path, "baseline");
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, e.what());
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::usage,
                fmt::format("baseline '{}' is not JSON: {}", display_path(path), printable_name(e.what())));
  }
  return earlier_failures(doc, display_path(path));
}

Summary run_triage(const TriageOptions& o, const TriageProgress& progress,
                   const std::function<void(Summary&)>& before_summary) {
  double start = steady_seconds();
  OutDir out(o.out_dir, triage_products());
  for (const auto& note : out.notes()) {
    progress(note);
  }
  std::error_code ec;
  fs::create_directories(o.out_dir / "cases", ec);
  install_interrupt_handlers();

  Summary s;
  s.tool_version = AOTI_BISECT_VERSION;
  s.command = o.command;
  s.manifest = o.manifest;
  s.manifest_sha256 = o.manifest_sha256;
  s.manifest_cases = o.manifest_cases > 0 ? o.manifest_cases : static_cast<int>(o.cases.size());
  s.shard = o.shard;
  s.baseline = o.baseline ? o.baseline_source : "";
  s.cases.resize(o.cases.size());
  const size_t n = o.cases.size();
  for (size_t i = 0; i < n; ++i) {
    s.cases[i].name = o.cases[i].name;
    s.cases[i].index = o.cases[i].index;
  }
  ProcessSet set;
  std::map<int, size_t> running;  // token -> case
  size_t next = 0;
  size_t done = 0;
  const size_t jobs = static_cast<size_t>(std::max(1, o.jobs));
  auto env = current_environment();
  while (done < n) {
    while (!interrupt_requested() && next < n && running.size() < jobs) {
      const ManifestCase& c = o.cases[next];
      fs::path case_dir = o.out_dir / "cases" / c.name;
      fs::create_directories(case_dir, ec);
      SpawnSpec spec;
      spec.argv = case_argv(o, c, case_dir);
      spec.env = env;
      spec.stdout_path = case_dir / "run.stdout";
      spec.stderr_path = case_dir / "run.stderr";
      spec.timeout_s = o.case_timeout_s;
      spec.kill_grace_s = 30;  // an interrupted case writes its report before it exits
      progress(fmt::format("[{}/{}] {}: started", next + 1, n, c.name));
      running[set.start(spec)] = next;
      ++next;
    }
    if (running.empty()) {
      break;  // interrupted before the rest started
    }
    auto [token, status] = set.wait_any();
    size_t i = running.at(token);
    running.erase(token);
    s.cases[i] = finished_case(o.cases[i], o.out_dir, status);
    s.cases[i].index = o.cases[i].index;
    ++done;
    progress(fmt::format("[{}/{}] {}", i + 1, n, finished_line(s.cases[i])));
  }
  s.interrupted = interrupt_requested();
  s.groups = group_cases(s.cases);
  if (o.baseline) {
    mark_against_baseline(s, *o.baseline);
  }
  s.exit_code = triage_exit_code(s.cases, s.interrupted);
  if (before_summary) {
    before_summary(s);
  }
  s.seconds = steady_seconds() - start;
  write_summaries(s, o.out_dir);
  return s;
}

}  // namespace aoti_bisect
