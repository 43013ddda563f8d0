#pragma once
// Where the probes come from. Every source sits behind InstrumentationSource:
// it runs the search with its own instrumentation and records into one
// Bisection. Sources whose probes the runner switches per call site at run
// time (today: the exported program at printer level 1) only make the model
// and share one search (RunTimeProbeSource); guide mode rebuilds per range.

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "evidence/divergence.hpp"
#include "evidence/evidence.hpp"
#include "harness/phase.hpp"
#include "harness/probe_source.hpp"
#include "inductor/build.hpp"
#include "package/package.hpp"

namespace aoti_bisect {

// What the search needs from the job: the failure and the package.
struct BisectSetup {
  const Package& pkg;
  const ModelFiles& model;
  const WrapperInfo& wrapper;              // of the original package
  std::map<std::string, std::string> env;  // the reproducing variant's variables
  std::string variant;
  OutcomeKind kind;  // the failure to isolate
  std::string first_line;
  bool deterministic = false;
  double baseline_seconds = 0;
  std::string runner_torch_version;
  // The exported program the instrumentation is built from (run_bisection
  // finds it): --exported-program, or the one inside the package.
  std::filesystem::path exported_program;
  std::string exported_model = "model";
  ModelDir original;  // the package as extracted for the baseline, with its facts
  // The inputs files every run feeds (job/batches.hpp): the failing batch,
  // after the batches before it where it needs them. Empty: the job's inputs.
  std::vector<std::filesystem::path> batches;
  // Told the verdict's line ("isolated to call site 5 k (cpp)") as soon as
  // the culprit is named, before its one-kernel replay (about 15 s the first
  // time): the job prints its answer there (the answer first).
  std::function<void(const std::string&)> on_culprit;
  // Told as soon as the search names a call site, before the evidence run
  // that confirms it ("call site 5 k (cpp), named by the search"): the
  // answer after the trace run, for a failure the trace run answers.
  std::function<void(const std::string&)> on_found;
  // The job's first run, where it was this search's trace run
  // (search.hpp's FirstRunProbes: every call site's values read, the
  // failure's environment): the search reads its trace instead of making
  // one, when its own probed model is `first_trace_model`.
  std::shared_ptr<const ChildResult> first_trace;
  ModelDir first_trace_model;
};

struct BisectOutcome {
  // How a source's search ended: it searched (`verdict` and `reason` are its
  // answer); it could not probe, and the next source takes over
  // (passed_over); or the fidelity guard refused its instrumented model
  // (untrusted: the source may prepare it another way, else the next source
  // takes over). `why_not` says why, for the last two.
  enum class Use { searched, passed_over, untrusted };
  Verdict verdict = Verdict::not_isolated;
  std::string reason;  // one line, appended to the verdict reason
  Use use = Use::searched;
  std::string why_not;
  // The model with run-time probes the search ran (a later check compares
  // call sites with it: job/batch_dependence.hpp); none from guide mode.
  std::optional<ModelDir> probed;
  // What explains the culprit further and may wait: its one-kernel replay
  // (repro/replay --intermediates), a process of its own that loads
  // LibTorch. The job runs it once its runs are done and the fork servers
  // holding the model are stopped, so that it never runs beside them.
  std::function<void()> explain_later;
};

// A run of a search for the failure under `s` (its variant, environment
// and batches) of `model` with `plan`: the one place the searches make
// their ChildRequests; `env` set over the failure's environment.
ChildRequest search_request(const BisectSetup& s, std::string id, ModelDir model, std::optional<ProbePlan> plan,
                            const std::map<std::string, std::string>& env = {}, std::string group = "search");

// What makes one: a search's answer, a source passed over, a model not trusted.
inline BisectOutcome searched(Verdict verdict, std::string reason = "") {
  return {.verdict = verdict, .reason = std::move(reason)};
}
inline BisectOutcome passed_over(std::string why) {
  return {.verdict = Verdict::not_isolated, .reason = why, .use = BisectOutcome::Use::passed_over, .why_not = why};
}
inline BisectOutcome untrusted(std::string why) {
  return {.verdict = Verdict::not_isolated, .use = BisectOutcome::Use::untrusted, .why_not = std::move(why)};
}

class InstrumentationSource {
 public:
  virtual ~InstrumentationSource() = default;
  virtual std::string_view name() const = 0;
  virtual BisectOutcome isolate(JobContext& job, const BisectSetup& setup, Predicate predicate, Bisection& bis) = 0;
};

// A model whose probes the runner switches per call site at run time.
struct ProbedModel {
  ModelDir model;
  WrapperInfo wrapper;                // its call sites
  NodeMap node_map;                   // mismatch: which graph node each buffer holds
  nlohmann::json node_info;           // the nodes' ops and source lines
  std::filesystem::path node_values;  // their eager values on the inputs
  // The package's own code, changed or watched: the trace run's outputs are
  // compared with the first run's. `required`: a difference means the
  // instrumented model is not trusted (the next source takes over).
  enum class Fidelity { not_checked, noted, required } fidelity = Fidelity::not_checked;
  // Wrong values without the exported program: why there is no map from
  // buffers to graph nodes ("" when there is one, or the failure is not a
  // mismatch). The search then reads what the package alone shows.
  std::string no_node_map;
};

// Makes the first source the search tries, in place of the chain (the
// tests' seam: job/job.hpp JobSeams::source).
using SourceFactory = std::function<std::unique_ptr<InstrumentationSource>()>;

// What a package-level source (interpose, rewrite) starts from. For wrong
// values, the exported program's build gives the map from buffers to graph
// nodes and their eager values, usable when it launches the same kernels in
// the same order as the package (then its buffers have the package's
// names); for other failures, nothing. Or why not.
std::variant<ProbedModel, std::string> package_model_base(JobContext& job, const BisectSetup& setup,
                                                          Predicate predicate);

class RunTimeProbeSource : public InstrumentationSource {
 public:
  // The shared search: a trace run, the halving with probe plans, an
  // evidence run on the culprit (probed_search.hpp).
  BisectOutcome isolate(JobContext& job, const BisectSetup& setup, Predicate predicate, Bisection& bis) final;
  // The instrumented model alone, for one run that is no search (a mask
  // scan: search/mask_scan.hpp), or why there is none.
  std::variant<ProbedModel, std::string> model_for(JobContext& job, const BisectSetup& setup, Predicate predicate) {
    return prepare(job, setup, predicate);
  }

 protected:
  // The instrumented model, or one line saying why there is none.
  virtual std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup& setup,
                                                         Predicate predicate) = 0;
  // Whether a source that cannot prepare lets the next one try.
  virtual bool next_may_try() const { return false; }
  // After the fidelity guard refused the model: whether to prepare another
  // way (one line saying how) and search again.
  virtual std::optional<std::string> retry_untrusted() { return std::nullopt; }

 private:
  // isolate's search, before a run stopped at --timeout is said to be that.
  BisectOutcome search(JobContext& job, const BisectSetup& setup, Predicate predicate, Bisection& bis);
};

}  // namespace aoti_bisect
