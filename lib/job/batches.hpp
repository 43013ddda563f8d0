#pragma once
// Many batches (--inputs A --inputs B ..., a folder or a glob; --calls N):
// the job begins with one run over every batch in the given order, in one
// process, as the user's loop did; it ends at the first batch that fails.
// That batch then runs alone in a fresh process: if it fails alone, the
// rest of the job feeds it alone; if it fails only after the batches
// before it (needs_history), every later run feeds them first.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/children.hpp"
#include "harness/progress.hpp"
#include "harness/recorder.hpp"
#include "harness/runs.hpp"
#include "harness/settings.hpp"

namespace aoti_bisect {

// The batches --inputs names, in order: a file as given; a folder, its .pt
// files; anything else a glob pattern, its matches (folders and matches in
// natural order). Throws Error(cannot_test), one line, for a value that
// names no file.
std::vector<std::filesystem::path> expand_inputs(const std::vector<std::string>& given);

// What the batch loop found for the report; the job records it (record_batches).
struct BatchFindings {
  std::vector<BatchRecord> records;            // Report::batches
  std::optional<bool> needs_history;           // Report::needs_history
  std::vector<BatchGroup> groups;              // --all-batches: Report::batch_groups
  std::vector<std::string> notes;              // Report::notes (--all-batches' loop)
  std::optional<std::string> failing_file;     // the failing batch, redacted: Report::inputs_source
  std::string failing_sha256;
};

// What the batch loop found.
struct BatchLoop {
  bool interrupted = false;                     // stopped by the user: `found` holds what ran before
  ChildResult loop;                             // the run over the batches: the job's baseline
  std::optional<int> failing;                   // the first batch that failed
  std::vector<std::filesystem::path> run_list;  // what the job's later runs feed
  std::optional<FailingBatch> batch;            // the failure's batch, for the report
  BatchFindings found;
};

// Runs `baseline` over every batch (Settings::batches), then the failing
// batch alone (and, with --all-batches, the whole list again); tells
// `progress` what it learns on the way.
BatchLoop run_batch_loop(const Settings& s, Runs& runs, Progress& progress, ChildRequest baseline);

// Writes what the loop found into the report, in one place.
void record_batches(Recorder& rec, const BatchFindings& found);

// The report's batches[]: each batch's outcome ("ok", the failure kind of the
// one that failed, "not_run" after it).
std::vector<BatchRecord> batch_records(const std::vector<std::filesystem::path>& files,
                                       const std::vector<BatchRun>& ran, const std::string& failed_kind,
                                       const std::string& failed_line);

}  // namespace aoti_bisect
