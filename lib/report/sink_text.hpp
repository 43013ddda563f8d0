#pragma once
// Text helpers shared by the report sinks (internal to lib/report). They make
// child-process text (error lines, env values) safe to put on a terminal, in
// Markdown or in XML, and format the few values every sink shows.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace aoti_bisect::report_text {

// One printable line: ANSI escape sequences dropped, newlines and tabs become
// spaces, other control bytes become "\xNN". UTF-8 passes through.
std::string one_line(const std::string& text);

// "[2, 3]"; "[]" for a scalar.
std::string shape_string(const std::vector<int64_t>& dims);

// "A=1 B=2" in key order; "" when empty.
std::string env_string(const std::map<std::string, std::string>& env);

// A statistic for people: "1.5", "nan", "inf", "-inf"; "-" when absent.
std::string stat_string(const std::optional<double>& value);

// "SIGSEGV" for 11 (same names as the process module).
std::string signal_string(int sig);

// A run over several batches, one line: "batch 2 of 5 (batch2.pt) failed
// first; it fails alone too" or "call 7 of 10 (x.pt) failed first; it fails
// only after the calls before it (alone it passes)"; "" for one batch.
std::string batch_summary(const Report& report);

// How often the failure showed, and over which runs: "9 of the flag
// matrix's 9 runs"; for outputs that differ between runs, "3 of the
// baseline environment's 4 runs gave other outputs than the first".
std::string how_often(const Failure& failure);
// " (1 of them the kernel search's)" where the matrix counted search runs, else "".
std::string search_runs_note(const Failure& failure);

// The failure's first check, falling back to the outcome table.
std::string first_check(const Failure& failure);

// The run whose outputs represent the model: "baseline" if present, else the
// first run; nullptr when there are no runs.
const RunRecord* baseline_run(const Report& report);

// "call site 5 cpp_fused_log_2 (cpp): introduced 151 NaN in buf7"; the kind
// and the evidence are left out when unknown. One line.
std::string culprit_summary(const Culprit& culprit);

// "Warp Illegal Address in triton_poi_fused_index_0 (call site 4), block
// (12,0,0) thread (64,0,0), PC 0x7f3c2a1f96d0; the search agrees": the GPU
// core dump's reading in one line.
std::string coredump_summary(const CoreDumpReading& d);

// "no build run, 1 from the cache", "1 build run, 12.3 s", "2 builds run, 30.1 s, 1 from the cache";
// "" when nothing was built or taken from the cache.
std::string builds_summary(const Builds& builds);

// "bisect, 4 runs of 6 planned, no build run, 1 from the cache"; the status is named
// unless it is "found". One line.
std::string bisection_summary(const Bisection& bisection, const Builds& builds);

// report.runs counted by the part of the job that ran them, in the order
// the groups first ran: {{"matrix", 9}, {"search", 2}}.
std::vector<std::pair<std::string, int>> runs_by_group(const Report& report);

// "of the flag matrix", "of the search", "to compare outputs", "of the batches".
std::string group_phrase(const std::string& group);

// "11 runs (9 of the flag matrix, 2 of the search)"; "1 run (1 of the flag
// matrix)". Every count the sinks print of report.runs is this one.
std::string runs_text(const Report& report);

// Whether a run's outcome counts as failed in the sinks.
inline bool run_failed(const RunRecord& run) {
  return run.outcome != OutcomeKind::ok;
}

}  // namespace aoti_bisect::report_text
