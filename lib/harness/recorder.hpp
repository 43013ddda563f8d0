#pragma once
// The one place a job's report changes. Phases return values; the recorder
// folds each into the report, tells the person watching (Progress), and
// writes the reports atomically after every fold that a reader could miss.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/progress.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

// What the inspect phase found (job/inspect.hpp), recorded at once.
struct Inspection {
  std::optional<PackageSummary> package;  // once the package was read
  std::string inputs_sha256;
  std::string sample_inputs;  // the display path of the package's own sample inputs, where they are used
  std::optional<std::string> inputs_format;
  std::vector<std::string> inputs_read_as;
  std::string inputs_origin;
  std::vector<std::string> notes;  // in the order found
};

class Recorder {
 public:
  Recorder(std::filesystem::path out_dir, bool junit, Progress& progress);

  const Report& report() const { return m_report; }
  const std::filesystem::path& out_dir() const { return m_out_dir; }
  Progress& progress() { return m_progress; }
  const std::string& phase() const { return m_phase; }  // the current phase's name

  // Phase timing: each phase ends when the next begins, or at finish().
  void begin_phase(const std::string& name, const std::string& detail);

  // Runs: how many are planned (for "[3/7]"), each one as it starts and ends.
  void plan_runs(int more);
  void run_started(const std::string& id);
  void run_finished(RunRecord record);

  // Folds; each writes the reports.
  void start(const std::vector<std::string>& command_line, const std::string& inputs_path,
             const std::string& reference_path);
  void package(PackageSummary summary, const std::string& inputs_sha256);
  // The inspect phase's findings, in one call.
  void inspected(Inspection found);
  void package_sha256(const std::string& sha256);
  // The torch the package was built with, as far as it shows it (package/package_torch.hpp).
  void package_torch(const std::string& version, const std::string& torch_dir,
                     std::vector<std::string> libraries);  // hashed apart (job.cpp)
  void reference(const std::string& reference_path);
  void environment(const Environment& env);
  void inputs(std::vector<TensorInfo> inputs, std::string binding = "");
  // A run over several batches: what each showed, and whether the failing
  // one fails only after the ones before it.
  void batches(std::vector<BatchRecord> batches, std::optional<bool> needs_history);
  void batch_groups(std::vector<BatchGroup> groups);  // --all-batches
  // The inputs file the report's inputs section shows (the failing batch).
  void inputs_source(const std::string& path, const std::string& sha256);
  // Inputs outside the range the package was compiled for, run as given:
  // Report::inputs_outside_range, and a line for the person watching.
  void inputs_outside_range(std::vector<std::string> lines);
  // What the inputs file is (inputs/tensor_file.hpp) and where it came from
  // when the user gave none ("" for the user's own file).
  void inputs_format(const std::string& format, std::vector<std::string> read_as, const std::string& origin = "");
  // The trigger shrunk: the smallest failing set of samples, a line for the
  // person watching, and the reproduce command on its file ("" keeps it).
  void minimal_inputs(MinimalInputs minimal, const std::string& reproduce);
  // Why the batch was not shrunk, or what it allows: Report::shrink_note,
  // and a line for the person watching.
  void shrink_note(const std::string& note);
  // Report::masked and masked_note (search/mask_scan.hpp).
  void masks(std::optional<std::vector<HealedSite>> masked, const std::string& note);
  // One sample in the batch against it alone (job/batch_dependence.hpp), or
  // why it was not compared; each also a line for the person watching.
  void batch_dependence(BatchDependence found);
  void batch_dependence_note(const std::string& note);
  void matrix(std::vector<VariantSummary> variants, std::optional<Failure> failure, const std::string& reproduce);
  // The failure alone, where no matrix ran (inputs the model refuses).
  void failure(Failure failure);
  void findings(std::vector<MatrixFinding> findings);   // each also a line for the person watching
  void build(const BuildRecord& record, bool counted);  // carries the sources passed over so far
  void passed_over(const PassedOver& source);
  void fidelity(const std::string& text);  // of the latest build
  void builds_note(const std::string& note);
  void note(const std::string& text);  // Report::notes, and the person watching
  void call_sites_match(bool match, const std::string& note);
  void bisection(const Bisection& bisection);
  void coredump(CoreDumpReading reading);        // the coredump variant's core dump, read
  void signature(const std::string& signature);  // of the failure (no-op without one)
  void culprit(Culprit culprit, std::optional<Reproducer> repro);
  // Whose bug the culprit is (job/judge_phase.hpp), and the smallest program
  // showing it; each also a line for the person watching.
  void judgement(Judgement judgement);
  void upstream(UpstreamRepro upstream);
  // The search ran before the matrix and named a culprit: when (seconds
  // from the start); a line for the person watching. `confirmed` false: as
  // the search found it, before the evidence run confirms it
  // (answer_confirmed), which the verdict otherwise says it did not.
  void first_answer(const std::string& line, bool confirmed = true);
  // The evidence run confirmed the culprit (or named another: the line
  // says so); the first answer where none was given yet.
  void answer_confirmed(const std::string& line);
  // The early search's results set aside (the matrix chose another
  // environment): culprit, reproducer and bisection cleared; builds stay.
  void set_aside_search();
  // The reproducer's command, once the matrix has chosen it.
  void refresh_repro_command();

  // The verdict, the reason and (for could_not_test and internal_error) the
  // one-line error; ends the phase and writes the reports.
  void finish(Verdict verdict, const std::string& reason, const std::string& error = "");

  // Writes the reports: at once with `now` (the job's first save, the
  // answer, the end), else at most once a second while the job runs (a
  // search of 10,000 call sites wrote its four reports 20 times, a fifth of
  // the driver's time). One that cannot be written (disk full, read-only)
  // throws Error(internal) and leaves no report and no temp file behind.
  void save(bool now = false);
  // A save failed and the reports were removed (none is left stale): the
  // job ends with that error, and writes none again.
  bool reports_removed() const { return m_reports_removed; }
  // Removes the reports written so far (a config error found once the
  // package was read: like every config error, it leaves no report).
  void discard();

 private:
  void end_phase();

  Report m_report;
  bool m_reports_removed = false;
  std::vector<PassedOver> m_passed_over;
  std::filesystem::path m_out_dir;
  bool m_junit = false;
  Progress& m_progress;
  double m_start = 0;
  double m_last_save = -1;  // steady seconds of the last write; -1: none yet
  double m_phase_start = 0;
  std::string m_phase;
  int m_runs_done = 0;
  int m_runs_planned = 0;
};

}  // namespace aoti_bisect
