#pragma once
// One evidence model for every instrumentation source: a RunTrace per child
// run (per call site: the tensors before and after its launch, whether each
// was written earlier, which site began and never ended, which one a device
// sync blamed), parsed from the runner's events or from the level-2
// printer's stdout; one predicate table; one answer per search step; one
// culprit builder (its producer: producer.hpp).

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bisect/bisect.hpp"
#include "classify/classify.hpp"
#include "protocol/events.hpp"
#include "report/report.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// What the search looks for, from the failure kind.
// divergence: outputs that differ between runs (kind nondeterministic): two
// runs probing every call site, compared site by site (no bisection).
enum class Predicate { fault, nonfinite, mismatch, divergence, unsupported };
struct PredicateInfo {
  Predicate predicate;
  std::string_view name;           // report.json bisection.predicate
  std::string_view culprit_phase;  // "launch" or "after_launch"
};
const std::vector<PredicateInfo>& predicate_table();
std::string_view predicate_name(Predicate p);

// Why a CPU crash may show only after the last call site returned.
inline constexpr std::string_view k_memory_corruption_hint =
    "on the CPU, likely memory corruption: a write past a buffer's end shows only when the heap is next used; the "
    "guard_pages variant catches it inside the kernel";
Predicate predicate_for(OutcomeKind kind);

struct SiteTrace {
  int site = 0;          // 1-based, by occurrence in the run
  int wrapper_site = 0;  // the wrapper's call site (1-based) that ran; 0: not known
  std::string kernel;
  bool began = false;
  bool ended = false;
  bool failed = false;               // the call returned an error code (the model raised there)
  double began_at = 0;               // steady-clock seconds when it began; 0: not known
  std::vector<ProbeStats> tensors;   // in probe order; `initialized` as the probe judged it
  std::vector<std::string> touched;  // tensors the launch touched (trace: site_end)
  const ProbeStats* find(const std::string& tensor) const;
};

struct RunTrace {
  std::map<int, SiteTrace> sites;
  int launched = 0;               // the highest site that began; 0 when the source cannot tell
  std::optional<int> unfinished;  // began and never ended: where the run stopped
  std::optional<int> sync_error;  // the site whose device sync found an error
  bool probes_missing = false;    // an instrumented model's probe calls never reached the runner
  bool counts_are_flags = false;  // NaN/Inf "counts" are 0/1 flags (the printer shows min/max/mean only)
  bool poisoned = false;          // run under the poison variant: probes count unwritten elements
  const SiteTrace* site(int k) const;
};

// From the runner's events (run-time probes).
RunTrace trace_from_events(const Events& events);

// A run stopped at its time limit names the launch it was inside only where
// that launch had run for at least half the limit and 1 s. Stopped sooner, the model
// was slow, not stuck in one launch: the line says so (and to raise
// --timeout). nullopt where the run did not time out or the launch was stuck.
// `stopped_at`: ExitStatus::stopped_at.
std::optional<std::string> slow_not_stuck(OutcomeKind kind, const RunTrace& trace, double stopped_at, double limit_s);

// Buffer -> the extern call site that created what it holds (returned
// handles and the names they were moved to). Such a buffer is never shown
// at the call that made it; the first later probed site that reads it shows
// it before its launch.
using ReturnedBy = std::map<std::string, int>;

// The first site in [lo, hi] that introduced NaN/Inf: a tensor with more
// NaN after its launch than before (before only counts when the tensor was
// written earlier) while none of its written inputs held NaN, or more Inf
// while none held NaN or Inf (a softmax that makes NaN from a mask's -inf
// introduces the NaN). Whether what it made reaches the outputs is the
// evidence run's question (evidence/reach.hpp). An
// extern call whose inputs were finite introduced them when a buffer it
// created first shows NaN/Inf where a later site reads it.
// With `constant_sources`, NaN/Inf that the model's constants (parameters,
// buffers) hold do not disqualify a site: the first site reading a bad
// constant introduces its values into the run. The search asks this only
// when no site introduced them from finite inputs and constants.
// Kernels in `inf_by_design` write an infinity literal of their own code (an
// attention mask's `where(causal, 0, -inf)`): Inf they introduce, with no new
// NaN, is by intent and does not make them the introducer.
std::optional<int> first_introducer(const RunTrace& trace, int lo, int hi, const ReturnedBy& returned_by = {},
                                    bool constant_sources = false, const std::set<std::string>& inf_by_design = {});

// The buffer `site` created that first shows NaN/Inf at a later site: that
// later site and the tensor's probe there.
struct CreatedBad {
  int seen_at = 0;
  const ProbeStats* probe = nullptr;
};
std::optional<CreatedBad> created_bad(const RunTrace& trace, int site, const ReturnedBy& returned_by);

// One run's answer to "is the first bad site in [lo, hi]?" for the fault and
// nonfinite predicates (mismatch: evidence/divergence.hpp).
Probe answer_step(Predicate pred, OutcomeKind expected, const Classification& cls, const RunTrace& trace, int lo,
                  int hi, const ReturnedBy& returned_by = {}, bool constant_sources = false,
                  const std::set<std::string>& inf_by_design = {});

// One step's verdict from its repeated runs: an error if any run erred, the
// common answer if all agree, else inconclusive.
Probe aggregate_answers(const std::vector<Probe>& answers);

// The upper bound "N" of an index check's error line, if it has one:
// Inductor's "index out of bounds: 0 <= tmp21 < 5L", ATen's "... which is not
// in the valid range [0, 60)" and "index 7 is out of bounds for dimension 0
// with size 5".
std::optional<int64_t> index_bound_of(const std::string& error_line);

// "cpp", "triton" or "extern" from a kernel's name.
std::string kind_of_kernel(const std::string& kernel);

// Builds the culprit at `site` from the evidence run's trace. `history` is a
// run that saw every site before it (the trace run, or the evidence run
// itself), for the producer of a bad input; `wrapper` gives kernel kinds,
// source nodes and graph input names.
struct CulpritInput {
  int site = 0;
  Predicate predicate = Predicate::fault;
  const RunTrace* evidence = nullptr;
  const RunTrace* history = nullptr;
  const WrapperInfo* wrapper = nullptr;
  std::string first_line;  // the failure's error line
  ReturnedBy returned_by;  // buffers extern calls created
};
Culprit build_culprit(const CulpritInput& in);

}  // namespace aoti_bisect
