#pragma once
// `aoti-bisect triage` and `aoti-bisect verify`: many cases, each one
// `aoti-bisect run` in a child process of its own (a crash or a hang of one
// case never stops the others), N at a time, one shared build cache; then
// DIR/summary.json, DIR/summary.md and DIR/junit.xml (triage/summary.hpp).
// Ctrl-C stops the running cases (each writes its interrupted report), marks
// the rest not run, and still writes the summary.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "triage/manifest.hpp"
#include "triage/summary.hpp"

namespace aoti_bisect {

struct TriageOptions {
  std::string command = "triage";  // "triage" or "verify": names the summary
  std::vector<ManifestCase> cases;
  std::string manifest;         // display path, "" when the cases came from the command line
  std::string manifest_sha256;  // of the manifest file; "" without one
  int manifest_cases = 0;       // cases in the manifest (more than `cases` for a shard)
  std::string shard;            // "K/N" for `--shard`; "" when unsharded
  std::filesystem::path out_dir;
  int jobs = 1;
  std::filesystem::path cache_dir;  // empty: each run's default (~/.cache/aoti-bisect/builds)
  std::string python;               // --python for every case that names none; empty: each run's own choice
  // An earlier night's failures (load_baseline), to mark groups new, known,
  // fixed; absent: no baseline. `baseline_source` names it in the summary.
  std::optional<std::vector<EarlierFailure>> baseline;
  std::string baseline_source;
  std::filesystem::path tool;  // the aoti-bisect to run; empty: this executable
  double case_timeout_s = 0;   // 0: none (each run has its own timeouts)
};

// One line per event, for the person watching ("[2/5] nan_copy: isolated ...").
using TriageProgress = std::function<void(const std::string& line)>;

// The failures an earlier summary.json (or report.json) names. Throws
// Error(usage) naming the file when it cannot be read or is not one.
std::vector<EarlierFailure> load_baseline(const std::filesystem::path& path);

// Writes DIR/summary.json, summary.md and junit.xml. Throws
// Error(internal) when they cannot be written.
void write_summaries(const Summary& s, const std::filesystem::path& dir);

// Runs every case and writes the summaries. Throws Error(usage) for an
// unusable output folder; everything about a case goes into its
// CaseResult. A hook (`before_summary`) lets verify add its own judgment.
Summary run_triage(const TriageOptions& options, const TriageProgress& progress,
                   const std::function<void(Summary&)>& before_summary = {});

}  // namespace aoti_bisect
