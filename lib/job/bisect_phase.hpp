#pragma once
// The kernel bisection phase of a job: one instrumented build, a trace run
// under the reproducing flags, the search over call sites with probes
// switched on at run time, and the culprit with its evidence.

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "bisect/bisect.hpp"
#include "job/context.hpp"
#include "package/package.hpp"

namespace aoti_bisect {

struct BisectSetup {
  const Package& pkg;
  const ModelFiles& model;
  const WrapperInfo& wrapper;             // of the original package
  std::filesystem::path work_dir;         // removed when the job ends
  std::map<std::string, std::string> env; // the reproducing variant's variables
  std::string variant;
  OutcomeKind kind;                       // the failure to isolate
  std::string first_line;
  bool deterministic = false;
  double baseline_seconds = 0;
  nlohmann::json inductor_configs;
  std::string runner_torch_version;
};

struct BisectOutcome {
  Verdict verdict = Verdict::not_isolated;
  std::string reason;  // one line, appended to the verdict reason
};

BisectOutcome run_bisection(Context& ctx, const BisectSetup& setup);

// What one instrumented run says, for the search (exposed for tests).
struct SiteEvidence {
  std::optional<int> unfinished;   // a site that began and never ended
  std::optional<int> sync_error;   // the site whose sync found a device error
  std::optional<int> introducer;   // the first site (in the probed range) that introduced NaN/Inf
  int sites = 0;                   // sites seen
};
SiteEvidence read_site_evidence(const std::vector<nlohmann::json>& events, int lo, int hi);

// One step's verdict from its repeated runs: an error if any run erred, the
// common answer if all agree, else inconclusive (shared with guide mode).
Probe aggregate_answers(const std::vector<Probe>& answers);

// Copies a finished search into the report's bisection (runs, status, steps)
// and saves the report.
void record_search(Context& ctx, Bisection& bis, const SearchResult& sr);

// The exported program to rebuild from: --exported-program, else the one
// inside the package (package_pt2); `name` is set to its model name.
std::optional<std::string> find_exported_program(const RunOptions& opt, const Package& pkg, const ModelFiles& model,
                                                 std::string& name);

// The upper bound "N" of "index out of bounds: 0 <= tmp21 < 5L", if the line has one.
std::optional<int64_t> index_bound_of(const std::string& error_line);

}  // namespace aoti_bisect
