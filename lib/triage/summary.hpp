#pragma once
// What `aoti-bisect triage` (and `verify`) learn from the cases' reports, and
// its renderings: DIR/summary.json, DIR/summary.md, DIR/junit.xml. Pure: the
// reports come in as parsed JSON, strings go out.
//
// summary.json (schema_version 1):
//   manifest_sha256, manifest_cases (how many the manifest holds), shard
//   ("K/N", null when unsharded), merged_from[] (triage-merge: dir, shard,
//   cases)
//   cases[]:  name, index (its place in the manifest), verdict, exit_code,
//             failure_kind, signature, culprit {call_index, kernel} | null,
//             report (relative to DIR), seconds, error
//   groups[]: signature, kind, culprit {call_index, kernel}, cases (names),
//             status: with --baseline "new" (not in the baseline), "known"
//             (in it), "fixed" (in the baseline, and every case that had it
//             ran to the end today without it), "untested" (in the baseline,
//             not seen today, but a case that had it could not be tested);
//             "" without a baseline. Fixed and untested groups list the
//             baseline's cases.
// Exit code: 130 when interrupted; 1 when some case's failure reproduced;
// 4 when some case could not be tested (none failed); 0 when all are clean.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aoti_bisect {

enum class CaseState { clean, failed, could_not_test, interrupted, not_run };
std::string_view case_state_name(CaseState s);

struct CaseResult {
  std::string name;
  int index = -1;                   // its place in the manifest (-1: unknown)
  std::string verdict = "not_run";  // the report's verdict; "not_run", or "no_report" when none was written
  int exit_code = -1;               // the case's exit status (-1: not run, or ended by a signal)
  std::string failure_kind;         // "" when none reproduced
  std::string signature;
  std::optional<int> culprit_call_index;
  std::string culprit_kernel;
  std::string report;  // report.json relative to DIR; "" when none
  double seconds = 0;
  std::string error;             // one line: why it could not be tested
  std::string verify;            // verify only: "clean", "reproduces", "new_failure", "could_not_test"
  std::string package_torch;     // the torch that built the package, as far as it shows it ("" unknown)
  std::string runner_torch;      // the LibTorch of the runner that ran it ("" when it did not run)
  std::string minimal_inputs;    // the trigger shrunk: the report's inputs.minimal.sentence ("" when not)
  bool batch_dependent = false;  // the report's inputs.batch_dependence.finding
};

CaseState case_state(const CaseResult& c);

// Fills verdict, failure, signature, culprit and error from a report.json.
void read_case_report(const nlohmann::json& report, CaseResult& c);

struct Group {
  std::string signature;
  std::string kind;
  std::optional<int> culprit_call_index;
  std::string culprit_kernel;
  std::vector<std::string> cases;
  std::string status;  // see above; "" without a baseline
};

// A shard summary triage-merge took in.
struct MergedShard {
  std::string dir;    // relative to the merged summary's folder
  std::string shard;  // "K/N"
  int cases = 0;
};

struct Summary {
  std::string tool_version;
  std::string command;          // "triage" or "verify"
  std::string manifest;         // display path; "" for verify without one
  std::string manifest_sha256;  // of the manifest file's bytes; "" without one
  int manifest_cases = 0;       // cases the manifest holds (a shard runs some of them)
  std::string shard;            // "K/N"; "" when unsharded
  std::vector<MergedShard> merged_from;
  std::string baseline;  // display path; "" when none
  std::vector<CaseResult> cases;
  std::vector<Group> groups;
  bool interrupted = false;
  double seconds = 0;
  int exit_code = 0;
};

// The cases by the torch that built their package (a zoo built over several
// releases runs each against its own torch), in case order.
struct TorchGroup {
  std::string torch;                 // "" = not known from the package
  std::vector<std::string> runners;  // the runners' LibTorch versions that ran them
  std::vector<std::string> cases;
};
std::vector<TorchGroup> group_by_torch(const std::vector<CaseResult>& cases);

// Groups the failed cases by signature, in case order.
std::vector<Group> group_cases(const std::vector<CaseResult>& cases);

// Signatures an earlier run named: from a summary.json (its groups) or a
// report.json (its failure). Throws Error(usage) naming `source` otherwise.
using EarlierFailure = Group;  // its status unused
std::vector<EarlierFailure> earlier_failures(const nlohmann::json& doc, const std::string& source);

// Marks each group new or known, and appends the earlier groups not seen
// today as fixed or untested.
void mark_against_baseline(Summary& summary, const std::vector<EarlierFailure>& baseline);

// verify: each case's `verify` field. With earlier failures, a failing case
// "reproduces" (an earlier signature) or is a "new_failure"; without, it
// "fails". Others are "clean", "could_not_test", "interrupted", "not_run".
// The exit code is triage's: 1 as soon as any input fails either way.
void judge_verify(Summary& summary, const std::vector<EarlierFailure>& earlier);

int triage_exit_code(const std::vector<CaseResult>& cases, bool interrupted);

// "call site 3 cpp_fused_div_1" (the kernel alone without an index), or ""
// when nothing was isolated: a case's culprit in summaries and on the console.
std::string culprit_text(const std::optional<int>& call_index, const std::string& kernel);

std::string summary_to_json(const Summary& s);
// The inverse, for triage-merge. Throws Error(usage) naming `source` when
// `doc` is not a triage summary.json.
Summary summary_from_json(const nlohmann::json& doc, const std::string& source);
std::string summary_to_markdown(const Summary& s);
std::string summary_to_junit(const Summary& s);

}  // namespace aoti_bisect
