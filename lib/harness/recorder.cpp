// The Recorder: each phase's result folded into the report, told to the person watching, and the
// reports written to disk; phase timing and run counts.

#include "harness/recorder.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/clock.hpp"
#include "common/error.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

Recorder::Recorder(std::filesystem::path out_dir, bool junit, Progress& progress)
    : m_out_dir(std::move(out_dir)), m_junit(junit), m_progress(progress), m_start(steady_seconds()) {
  m_report.tool_version = AOTI_BISECT_VERSION;
  m_report.environment.tool_version = AOTI_BISECT_VERSION;
}

void Recorder::begin_phase(const std::string& name, const std::string& detail) {
  end_phase();
  m_phase = name;
  m_phase_start = steady_seconds();
  m_progress.phase(name, detail);
}

void Recorder::end_phase() {
  if (!m_phase.empty()) {
    m_report.phases.push_back({m_phase, steady_seconds() - m_phase_start});
    m_phase.clear();
  }
}

void Recorder::plan_runs(int more) {
  m_runs_planned = m_runs_done + more;
}

void Recorder::run_started(const std::string& id) {
  m_progress.run_started(id, m_runs_done, std::max(m_runs_planned, m_runs_done + 1));
}

void Recorder::run_finished(RunRecord record) {
  ++m_runs_done;
  m_progress.run_finished(record.id, record.outcome, record.exit, record.seconds, m_runs_done,
                          std::max(m_runs_planned, m_runs_done));
  m_report.runs.push_back(std::move(record));
  save();
}

void Recorder::start(const std::vector<std::string>& command_line, const std::string& inputs_path,
                     const std::string& reference_path) {
  m_report.command_line = command_line;
  m_report.inputs_path = inputs_path;
  m_report.reference_path = reference_path;
}

void Recorder::package(PackageSummary summary, const std::string& inputs_sha256) {
  m_report.package = std::move(summary);
  m_report.inputs_sha256 = inputs_sha256;
}

void Recorder::inspected(Inspection found) {
  if (!found.sample_inputs.empty()) {
    inputs_source(found.sample_inputs, "");
  }
  if (found.package) {
    package(std::move(*found.package), found.inputs_sha256);
  }
  if (found.inputs_format) {
    inputs_format(*found.inputs_format, std::move(found.inputs_read_as), found.inputs_origin);
  }
  for (const auto& n : found.notes) {
    note(n);
  }
}

void Recorder::package_sha256(const std::string& sha256) {
  m_report.package.sha256 = sha256;
}

void Recorder::package_torch(const std::string& version, const std::string& torch_dir,
                             std::vector<std::string> libraries) {
  if (m_report.package.torch_version.empty()) {
    m_report.package.torch_version = version;
  }
  m_report.package.torch_dir = torch_dir;
  m_report.package.torch_libraries = std::move(libraries);
}

void Recorder::reference(const std::string& reference_path) {
  m_report.reference_path = reference_path;
}

void Recorder::environment(const Environment& env) {
  m_report.environment = env;
  m_report.environment.tool_version = AOTI_BISECT_VERSION;
}

void Recorder::inputs(std::vector<TensorInfo> inputs, std::string binding) {
  m_report.inputs = std::move(inputs);
  m_report.inputs_binding = std::move(binding);
}

void Recorder::batches(std::vector<BatchRecord> batches, std::optional<bool> needs_history) {
  m_report.batches = std::move(batches);
  m_report.needs_history = needs_history;
  save();
}

void Recorder::batch_groups(std::vector<BatchGroup> groups) {
  m_report.batch_groups = std::move(groups);
  save();
}

void Recorder::inputs_source(const std::string& path, const std::string& sha256) {
  m_report.inputs_path = path;
  m_report.inputs_sha256 = sha256;
}

void Recorder::inputs_outside_range(std::vector<std::string> lines) {
  if (lines.empty() || lines == m_report.inputs_outside_range) {
    return;
  }
  for (const auto& l : lines) {
    m_progress.note("the inputs are outside the package's compiled range, run as given: " + l);
  }
  m_report.inputs_outside_range = std::move(lines);
  save();
}

void Recorder::minimal_inputs(MinimalInputs minimal, const std::string& reproduce) {
  m_progress.note("shrunk: " + minimal.sentence +
                  (minimal.file.empty() ? std::string() : "; its inputs: " + minimal.file));
  for (const auto& fact : minimal.facts) {
    m_progress.note("  " + fact);
  }
  m_report.minimal_inputs = std::move(minimal);
  if (!reproduce.empty()) {
    m_report.reproduce_command = reproduce;
    refresh_repro_command();
  }
  save();
}

void Recorder::masks(std::optional<std::vector<HealedSite>> masked, const std::string& note) {
  m_report.masked = std::move(masked);
  m_report.masked_note = note;
  save();
}

void Recorder::shrink_note(const std::string& note) {
  m_progress.note(note);
  m_report.shrink_note = note;
  save();
}

void Recorder::batch_dependence(BatchDependence found) {
  m_progress.note((found.dependent ? "batch_dependent: " : "batch: ") + found.sentence);
  m_report.batch_dependence = std::move(found);
  save();
}

void Recorder::batch_dependence_note(const std::string& note) {
  m_progress.note(note);
  m_report.batch_dependence_note = note;
  save();
}

void Recorder::inputs_format(const std::string& format, std::vector<std::string> read_as, const std::string& origin) {
  m_report.inputs_format = format;
  m_report.inputs_read_as = std::move(read_as);
  m_report.inputs_origin = origin;
}

void Recorder::matrix(std::vector<VariantSummary> variants, std::optional<Failure> failure,
                      const std::string& reproduce) {
  m_report.matrix = std::move(variants);
  m_report.failure = std::move(failure);
  if (m_report.failure) {
    m_report.reproduce_command = reproduce;
  }
}

void Recorder::failure(Failure failure) {
  m_report.failure = std::move(failure);
}

void Recorder::findings(std::vector<MatrixFinding> findings) {
  m_report.findings = std::move(findings);
  for (const auto& f : m_report.findings) {
    m_progress.note("the flags say: " + f.sentence);
  }
  save();
}

void Recorder::build(const BuildRecord& record, bool counted) {
  Builds& b = m_report.builds;
  b.items.push_back(record);
  if (b.items.back().passed_over.empty()) {
    b.items.back().passed_over = m_passed_over;
  }
  b.count += counted && !record.cache_hit ? 1 : 0;
  b.cache_hits += record.cache_hit ? 1 : 0;
  b.seconds += record.seconds;
}

void Recorder::fidelity(const std::string& text) {
  if (!m_report.builds.items.empty()) {
    m_report.builds.items.back().fidelity = text;
    save();
  }
}

void Recorder::passed_over(const PassedOver& source) {
  m_passed_over.push_back(source);
  if (m_report.bisection) {
    m_report.bisection->passed_over = m_passed_over;
  }
}

void Recorder::builds_note(const std::string& note) {
  std::string& n = m_report.builds.note;
  n += (n.empty() ? "" : "; ") + note;
}

void Recorder::call_sites_match(bool match, const std::string& note) {
  m_report.builds.call_sites_match = match;
  if (!note.empty()) {
    m_report.builds.note = note;
  }
}

void Recorder::bisection(const Bisection& bisection) {
  m_report.bisection = bisection;
  m_report.bisection->passed_over = m_passed_over;
  save();
}

void Recorder::coredump(CoreDumpReading reading) {
  m_report.coredump = std::move(reading);
  save();
}

void Recorder::note(const std::string& text) {
  m_report.notes.push_back(text);
  m_progress.note(text);
  save();
}

void Recorder::culprit(Culprit culprit, std::optional<Reproducer> repro) {
  m_report.culprit = std::move(culprit);
  m_report.repro = std::move(repro);
  save(true);
}

void Recorder::judgement(Judgement judgement) {
  if (!m_report.culprit) {
    return;
  }
  m_progress.note("whose bug: " + judgement.sentence);
  m_report.culprit->judgement = std::move(judgement);
  save(true);
}

void Recorder::upstream(UpstreamRepro upstream) {
  if (!m_report.repro) {
    m_report.repro.emplace();
  }
  m_progress.note("upstream: " + upstream_sentence(upstream));
  m_report.repro->upstream = std::move(upstream);
  save(true);
}

void Recorder::first_answer(const std::string& line, bool confirmed) {
  m_report.first_answer_seconds = steady_seconds() - m_start;
  m_report.first_answer = line;
  m_report.first_answer_provisional = !confirmed;
  m_progress.note(fmt::format("answer after {:.1f} s: {}", *m_report.first_answer_seconds, line));
  save(true);
}

void Recorder::answer_confirmed(const std::string& line) {
  if (!m_report.first_answer_seconds) {
    first_answer(line);
    return;
  }
  m_report.answer_confirmed_seconds = steady_seconds() - m_start;
  m_progress.note(fmt::format("confirmed after {:.1f} s: {}", *m_report.answer_confirmed_seconds, line));
  save(true);
}

void Recorder::set_aside_search() {
  m_report.culprit.reset();
  m_report.repro.reset();
  m_report.bisection.reset();
  m_report.first_answer_seconds.reset();
  m_report.answer_confirmed_seconds.reset();
  m_report.first_answer_provisional = false;
  m_report.first_answer.clear();
  m_passed_over.clear();
  save();
}

void Recorder::refresh_repro_command() {
  if (m_report.repro) {
    m_report.repro->command = m_report.reproduce_command;
    save();
  }
}

void Recorder::signature(const std::string& signature) {
  if (m_report.failure) {
    m_report.failure->signature = signature;
  }
}

void Recorder::finish(Verdict verdict, const std::string& reason, const std::string& error) {
  end_phase();
  m_report.verdict = verdict;
  if (!reason.empty()) {
    m_report.verdict_reason = reason;
  }
  if (!error.empty()) {
    m_report.error = error;
  }
  if (m_report.culprit && !m_report.first_answer_seconds) {
    m_report.first_answer_seconds = steady_seconds() - m_start;  // the culprit came with the verdict
  }
  if (m_report.first_answer_provisional && !m_report.answer_confirmed_seconds && m_report.first_answer_seconds) {
    note(
        fmt::format("the answer printed after {:.1f} s ({}) was not confirmed by the evidence run; the verdict "
                    "says what was found",
                    *m_report.first_answer_seconds, m_report.first_answer));
  }
  save(true);
}

void Recorder::discard() {
  std::error_code ec;
  for (const char* name : {"report.json", "report.md", "report.svg", "junit.xml"}) {
    fs::remove(m_out_dir / name, ec);
  }
  m_reports_removed = true;
}

void Recorder::save(bool now) {
  constexpr double k_save_interval_s = 1.0;
  const double t = steady_seconds();
  m_report.total_seconds = t - m_start;
  if (!now && m_last_save >= 0 && t - m_last_save < k_save_interval_s) {
    return;  // the next save, or the end's, writes what changed
  }
  m_last_save = t;
  try {
    write_reports(m_report, m_out_dir, m_junit);
  } catch (const Error& e) {
    // Disk full, a folder made read-only: an earlier report would now be
    // stale (verdict `running`), so none is left; the job stops with this.
    std::error_code ec;
    for (const char* name : {"report.json", "report.md", "report.svg", "junit.xml"}) {
      fs::remove(m_out_dir / name, ec);
    }
    m_reports_removed = true;
    throw Error(ErrorKind::internal,
                fmt::format("the reports cannot be written: {}; free space or choose another --out", e.what()));
  }
}

}  // namespace aoti_bisect
