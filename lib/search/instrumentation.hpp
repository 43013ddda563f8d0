#pragma once
// Where the probes come from. Every source sits behind InstrumentationSource:
// it runs the search with its own instrumentation and records into one
// Bisection. Sources whose probes the runner switches per call site at run
// time (today: the exported program at printer level 1) only make the model
// and share one search (RunTimeProbeSource); guide mode rebuilds per range.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "inductor/build.hpp"
#include "search/divergence.hpp"
#include "search/evidence.hpp"
#include "harness/phase.hpp"
#include "package/package.hpp"

namespace aoti_bisect {

// What the search needs from the job: the failure and the package.
struct BisectSetup {
  const Package& pkg;
  const ModelFiles& model;
  const WrapperInfo& wrapper;             // of the original package
  std::map<std::string, std::string> env; // the reproducing variant's variables
  std::string variant;
  OutcomeKind kind;                       // the failure to isolate
  std::string first_line;
  bool deterministic = false;
  double baseline_seconds = 0;
  std::string runner_torch_version;
  // The exported program the instrumentation is built from (run_bisection
  // finds it): --exported-program, or the one inside the package.
  std::filesystem::path exported_program;
  std::string exported_model = "model";
  ModelDir original;                      // the package as extracted for the baseline, with its facts
  // The inputs files every run feeds (job/batches.hpp): the failing batch,
  // after the batches before it where it needs them. Empty: the job's inputs.
  std::vector<std::filesystem::path> batches;
  // Search runs already made in this job (an earlier search set aside):
  // this one's run ids go on from there (bisect.N.purpose, guide.N.range).
  int runs_before = 0;
};

struct BisectOutcome {
  Verdict verdict = Verdict::not_isolated;
  std::string reason;        // one line, appended to the verdict reason
  std::string fall_back;     // a source that cannot probe says why; the next source takes over
  bool untrusted = false;    // the fidelity guard refused the instrumented model
};

// An Inductor build of the setup's exported program at `printer_level`
// (cached). Throws Error like build_instrumented; the failure is noted in
// the report's builds first.
BuildResult build_from_exported_program(JobContext& job, const BisectSetup& setup, int printer_level,
                                        const std::vector<std::string>& filtered_kernels = {});

struct ProbedModel;

// The exported program at printer level 1 (cached), its call sites compared
// with the package's (builds.call_sites_match); for mismatch also its node
// map and the eager values of the mapped nodes. Or one line saying why not.
std::variant<ProbedModel, std::string> probed_exported_program(JobContext& job, const BisectSetup& setup,
                                                               Predicate predicate);

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
};

// What a package-level source (interpose, rewrite) starts from. For wrong
// values, the exported program's build gives the map from buffers to graph
// nodes and their eager values, usable when it launches the same kernels in
// the same order as the package (then its buffers have the package's
// names); for other failures, nothing. Or why not.
std::variant<ProbedModel, std::string> package_model_base(JobContext& job, const BisectSetup& setup, Predicate predicate);

class RunTimeProbeSource : public InstrumentationSource {
 public:
  // The shared search: a trace run, the halving with probe plans, an
  // evidence run on the culprit (search.cpp).
  BisectOutcome isolate(JobContext& job, const BisectSetup& setup, Predicate predicate, Bisection& bis) final;

 protected:
  // The instrumented model, or one line saying why there is none.
  virtual std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup& setup,
                                                         Predicate predicate) = 0;
  // Whether a source that cannot prepare lets the next one try.
  virtual bool next_may_try() const { return false; }
  // After the fidelity guard refused the model: whether to prepare another
  // way (one line saying how) and search again.
  virtual std::optional<std::string> retry_untrusted() { return std::nullopt; }
};

// Interposition, the package alone: a hook library generated from the
// package's text (package/hooks.hpp), bound by the runner into the model's
// own GOT slots. No rebuild of the model; its library runs unchanged.
class InterposeSource : public RunTimeProbeSource {
 public:
  std::string_view name() const override { return probe_source_name(ProbeSource::interpose); }

 protected:
  std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup& setup, Predicate predicate) override;
  bool next_may_try() const override { return true; }
};

// The exported program compiled once more with the intermediate-value
// printer at level 1 (cached), plus, for mismatch, its node map and the
// eager values of the mapped nodes.
// The wrapper rewrite: the package's wrapper.cpp with level-1 probe calls
// inserted, recompiled with the package's recorded commands, its kernel.cpp
// compiled as recorded, its weights cut out of its library and relinked
// (cached by content). Trusted only when a run of it returns the package's
// outputs bit for bit.
class RewriteSource : public RunTimeProbeSource {
 public:
  std::string_view name() const override { return probe_source_name(ProbeSource::rewrite); }

 protected:
  std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup& setup, Predicate predicate) override;
  bool next_may_try() const override { return true; }
  // The wrapper at -O0 first; refused by the guard, once more as recorded.
  std::optional<std::string> retry_untrusted() override;

 private:
  bool m_recorded_flags = false;
};

class ExportedProgramSource : public RunTimeProbeSource {
 public:
  std::string_view name() const override { return probe_source_name(ProbeSource::exported_program); }

 protected:
  std::variant<ProbedModel, std::string> prepare(JobContext& job, const BisectSetup& setup, Predicate predicate) override;
};

// Guide mode (--rebuild-per-step, or the fallback when probe calls cannot
// reach the runner): one level-2 build per search step (guide_mode.cpp):
// the package's own wrapper with print calls around the range's call sites
// (the rewrite, B; no exported program needed), else the exported program
// rebuilt by Inductor. Interposition (A) has no use for a build per range:
// its hooks are switched per call site at run time by the probe plan.
class GuideSource : public InstrumentationSource {
 public:
  explicit GuideSource(std::string fallback_reason = "") : m_fallback_reason(std::move(fallback_reason)) {}
  std::string_view name() const override { return probe_source_name(ProbeSource::guide); }
  BisectOutcome isolate(JobContext& job, const BisectSetup& setup, Predicate predicate, Bisection& bis) override;

 private:
  std::string m_fallback_reason;
};

}  // namespace aoti_bisect
