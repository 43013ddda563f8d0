#pragma once
// The report: one value that the job fills in step by step and that every
// sink (console, report.json, report.md, junit.xml) renders. Paths in it are
// already display paths (relative, "~"); tensor contents never appear.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classify/outcome.hpp"
#include "protocol/values.hpp"
#include "wrapper/provenance.hpp"

namespace aoti_bisect {

inline constexpr int k_report_schema_version = 1;

struct RunRecord {
  std::string id;                // "baseline", "launch_blocking.2"
  std::string group = "matrix";  // the part of the job that ran it: "matrix", "search",
                                 // "compare", "batches" (ChildRequest::group)
  std::string variant;
  int repeat = 0;
  std::map<std::string, std::string> env;  // variables this run set
  std::string probe_plan = "none";         // summary of the probe plan
  OutcomeKind outcome = OutcomeKind::ok;
  std::string exit;  // "exit 0", "signal 11 (SIGSEGV)", "timeout after 30.0 s"
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool core_dumped = false;
  double seconds = 0;
  std::string first_error_line;  // redacted
  std::vector<TensorStats> outputs;
  std::optional<Comparison> comparison;
};

struct VariantSummary {
  std::string name;
  std::map<std::string, std::string> env;
  int runs = 0;
  int reproduced = 0;
  bool deterministic = false;
};

struct Environment {
  std::string tool_version;
  std::string torch_version;   // runner's LibTorch
  std::string python_version;  // "" when no python3 was found
  std::string cuda_version;    // "" on CPU builds
  std::string hip_version;
  std::string device;       // "cpu", "cuda:0"
  std::string device_name;  // "NVIDIA H200", or the CPU model
  std::string driver_version;
  std::string os;            // "Linux 6.1.0 x86_64 (Debian 12.11)"
  std::string git_revision;  // of the working directory, "" if none
};

struct PackageSummary {
  std::string path;  // display path
  std::string sha256;
  std::vector<std::string> models;
  std::string model;       // the one run
  std::string device_key;  // "cpu", "cuda"
  std::map<std::string, std::string> metadata;
  std::string torch_version;  // where recorded, or where its build's torch folder still holds a torch; else ""
  std::string torch_dir;      // display path of the torch folder its build used, "" when unknown
  std::vector<std::string> torch_libraries;  // the LibTorch libraries its library needs (libtorch.so, libc10.so)
  int call_sites = 0;
  bool instrumented = false;
  bool has_exported_program = false;
};

// The batch a failure came from, in a run over several (--inputs A --inputs
// B ..., or --calls N: the same batch N times).
struct FailingBatch {
  int index = 0;                   // 0-based, in the given order
  std::string file;                // display path
  bool calls = false;              // --calls: index is the call (index + 1 is its number)
  std::vector<std::string> facts;  // what distinguishes it from the batches that passed (classify/batch_runs.hpp)
};

struct Failure {
  OutcomeKind kind = OutcomeKind::error;
  std::string first_line;   // the most useful error line seen
  std::string first_check;  // from the outcome table
  std::optional<int> signal;
  std::string reproducing_variant;  // the one later phases use
  int reproduced = 0;               // over all runs of the matrix
  int runs = 0;
  int search_runs = 0;  // of `runs`, the kernel search's runs counted as the matrix's (issue 67)
  bool deterministic = false;
  std::string signature;  // stable name of the bug (classify/signature.hpp), set when the job ends
  std::optional<FailingBatch> batch;
};

// What a contrast of the flag matrix says (matrix/reading.hpp): the variant,
// the contrast ("passes_with", ...) and the profile's sentence for it.
struct MatrixFinding {
  std::string variant;
  std::string contrast;
  std::string sentence;
};

// --all-batches: the failing batches that share a signature (the recipe of
// a failure not isolated: kind, first error line, flags).
struct BatchGroup {
  std::string signature;
  std::string kind;
  std::string first_line;
  std::vector<int> batches;  // indices, in order
};

// One batch of a run over several: what it showed.
struct BatchRecord {
  int index = 0;
  std::string file;     // display path
  std::string outcome;  // "ok", a failure kind, "not_run" (after the first failure)
  std::string first_line;
};

// A GPU core dump made by the `coredump` variant (classify/gpu_coredump.hpp),
// as the report gives it: where the device exception happened, and which of
// the wrapper's call sites launch that kernel.
struct CoreDumpReading {
  std::string run;   // the run that made it ("coredump.1")
  std::string file;  // display path of the core file, "" when it is gone
  std::string exception;
  std::string pc;
  std::string kernel;  // "" when no cuda-gdb read the file
  std::string grid, block, thread, launch;
  std::optional<int> device, sm;
  bool read_by_debugger = false;
  std::string debugger_note;    // why cuda-gdb did not read it, where it did not
  std::vector<int> call_sites;  // the wrapper's call sites that launch `kernel`
  std::optional<bool> agrees;   // with the search's culprit, where both name a kernel
};

// Verdicts and their exit codes (common/error.hpp ExitCode):
//   clean 0 · isolated 1 · not_isolated 3 · inconclusive 3 ·
//   suppressed_by_instrumentation 3 · could_not_test 4 · internal_error 5 ·
//   interrupted 130
enum class Verdict {
  running,
  clean,
  isolated,
  not_isolated,
  inconclusive,
  suppressed_by_instrumentation,
  could_not_test,
  internal_error,
  interrupted,
};
std::string_view verdict_name(Verdict v);

// Statistics of one tensor a call site touched, before and after its launch.
struct ProbeStats {
  std::string tensor;                 // "buf7", "arg10_1"
  bool initialized = true;            // before launch: a graph input or written by an earlier site
  std::optional<TensorStats> before;  // absent when the site was not probed before launch
  std::optional<TensorStats> after;   // absent when the launch never finished (a fault)
  std::string fqn;                    // a constant's original module path ("bn.running_var"), else ""
  std::string origin;                 // "parameter bn.running_var", "graph input 1", "" for buffers
};

struct Producer {  // where a culprit's bad input came from
  std::string tensor;
  std::optional<int> call_index;  // absent for a graph input
  std::string kernel;             // "" for a graph input
  std::string why;                // "graph input 1 (arg11_1) holds 7, outside [0, 5)"
};

struct GraphNodeRef {  // an exported-program node
  std::string name;    // "relu"
  std::string op;      // "aten.relu.default"
  std::string source;  // "model.py:12 in forward" (the model's own frame), "" if not recorded
  std::string code;    // that line of source, trimmed
};

// How a call site's output differs from eager (the mismatch search).
struct Divergence {
  std::string tensor;  // the output buffer ("buf7")
  std::string dtype;
  std::vector<GraphNodeRef> nodes;  // the graph node(s) whose value it holds (its own first)
  std::string compared_with;        // the node whose eager value was closest (the figures are against it)
  std::vector<std::string> folded;  // nodes freezing folded into its code (compared with the last one's value)
  double max_abs_error = 0;
  double max_rel_error = 0;  // max_abs_error / scale
  double scale = 0;          // largest finite |eager value| of the tensor
  int64_t nonfinite = 0;     // elements whose NaN/Inf differ from eager
  double atol = 0;
  double rtol = 0;
  std::vector<int64_t> worst_index;  // the worst element
  std::string actual;                // its compiled value ("1.5", "nan")
  std::string expected;              // its eager value
  int inputs_compared = 0;           // inputs of the site checked against eager (all within tolerance)
  double inputs_worst_ratio = 0;     // their largest error / allowed error (<= 1)
};

// Outputs that differ between runs: how one tensor the culprit wrote
// differed between two more runs from the same inputs, element by element.
struct RunDifference {
  std::string tensor;  // "buf6"
  std::string dtype;
  int64_t elements = 0;
  int64_t differ = 0;                // elements not equal in the two runs (NaN/Inf mismatches included)
  double max_abs = 0;                // the largest difference among elements finite in both
  std::vector<int64_t> worst_index;  // where it is
  std::string first;                 // the value there in the first run ("1.5", "nan")
  std::string second;                // ... and in the second
};

// After a fault is isolated on a GPU: one run under compute-sanitizer's
// memcheck aimed at the culprit (classify/sanitizer.hpp), its first errors
// with each address named as the culprit's buffer it falls in or next to.
struct SanitizerFinding {
  std::string what;  // "Invalid __global__ write of size 4 bytes"
  std::string kernel;
  std::string thread, block;
  std::string address;  // "0x7f1200000c0c", "" when none was given
  std::string buffer;   // "12 bytes past the end of buf7 (float32 [8, 32], 1024 bytes)", "" unknown
  std::string note;     // the sanitizer's own words on the address
};
struct SanitizerPass {
  std::string run;      // "bisect.4.sanitizer"
  std::string command;  // the sanitizer's command line
  std::vector<SanitizerFinding> errors;
  std::string note;  // why there are none, or why it did not run
};

// Why, as far as the evidence goes (evidence/root_cause.hpp): one sentence
// and what it rests on. For a cpp kernel's NaN/Inf, the intermediate that
// turned NaN (or Inf) in its replay while what it reads did not.
// One intermediate of a cpp kernel that turned NaN (or Inf) in its replay
// while what it read did not.
struct IntermediateStep {
  std::string expression;                                // "tmp7 = tmp6.log()", as the kernel writes it
  std::string kind;                                      // "nan" or "inf": what it turned into
  std::string value;                                     // its value there ("nan", "-inf")
  std::vector<std::pair<std::string, int64_t>> element;  // the loop indices there ({"x0", 3}, {"x1", 12})
  std::string output_tensor;          // the argument that element is stored into ("buf7"), "" unknown
  std::vector<int64_t> output_index;  // its index there
  std::vector<std::pair<std::string, std::string>> operands;  // what it read there ({"tmp6", "0"})
  int64_t elements = 0;   // times it made them (lanes a vector computes past the data included)
  std::string operation;  // what the operands make of it ("0/0", "log of a negative value"), "" when not one of those
  std::string op;         // the graph op it comes from where the package names one, else ""
};

struct RootCause {
  std::string sentence;  // what report.md opens with; "" when the evidence decides no cause
  // "intermediate" (the kernel's replay with its intermediates checked),
  // "extern_inputs" (an extern call's inputs and output, measured), "constant"
  // (a constant it reads holds NaN/Inf), "index" (an index past the tensor it
  // indexes), "unwritten" (memory no kernel wrote), "run_to_run"; "" none.
  std::string basis;
  // basis "intermediate": the intermediate that made them, and where that
  // was NaN made of Inf (inf - inf), the statement that made the Inf first.
  std::vector<IntermediateStep> intermediates;
  std::string operation;  // the first step's, or an extern call's "overflow"; "" when not decided
  std::string op;         // the graph op, where the package names one
  std::string note;       // what was not measured and why ("the replay did not run: ...")
};

// One output of the model measured against a float64 eager run of the
// exported program (job/judge_phase.hpp): eager's and the package's errors.
struct JudgedOutput {
  int index = 0;  // 0-based, flattened
  std::string dtype;
  int64_t numel = 0;
  std::optional<double> eager_rmse;    // root mean square error against float64; nullopt: not finite
  std::optional<double> package_rmse;  // nullopt: not finite, or the package's outputs were not saved
  std::optional<double> fp64_rms;      // float64's own root mean square, the scale of "far"
  int64_t eager_nonfinite = 0;
  int64_t package_nonfinite = 0;
  int64_t fp64_nonfinite = 0;
  int64_t eager_beyond = 0;    // elements out of tolerance against float64
  int64_t package_beyond = 0;
  double multiplier = 2.0;     // the minifier's rule: package_rmse <= multiplier * eager_rmse + tol / 10
  bool package_measured = false;
};

// Whose bug the culprit is (evidence/judgement.hpp).
struct Judgement {
  std::string kind;      // "model", "data", "compiler", "numerics"; "" not judged (`sentence` says why)
  std::string sentence;  // one line, the figures behind the kind
  // Where eager shows the failure: the graph node that made NaN/Inf from
  // finite operands, or raised; "" none.
  GraphNodeRef eager_node;
  bool eager_node_in_culprit = false;
  std::string holder;  // data: the input or parameter that holds NaN/Inf (or the indices), "" none
  std::vector<std::string> culprit_nodes;  // the exported-program nodes the culprit computes; empty: not known
  std::vector<JudgedOutput> outputs;
  // Wrong values: the culprit's graph nodes compiled alone on eager's values
  // of their inputs (repro/upstream/repro.py's first run). "wrong_on_its_own"
  // (they differ from eager there), "amplifies" (they match, and the
  // difference shows once upstream nodes are compiled with them), "" not run.
  std::string alone;
  std::string alone_sentence;
  std::string amplified_node;  // amplifies: the farthest upstream graph node it needs
  std::string amplified_site;  // and the call site computing it ("call site 3 cpp_fused_relu_1"), "" unknown
  int widened_inputs = 0;      // float64 run: floating inputs widened
  int widened_parameters = 0;  // and floating parameters and buffers
  std::vector<std::string> kept_dtypes;  // inputs' dtypes that cannot widen, left as they are
  double seconds = 0;
};

// The culprit's graph nodes as the smallest program that shows the symptom
// (OUT/repro/upstream/repro.py), run once by the tool.
struct UpstreamRepro {
  std::string script;  // display path
  bool reproduced = false;
  int nodes = 0;        // graph nodes in it
  int graph_nodes = 0;  // in the exported program
  double compile_seconds = 0;  // the script's runs, each an export and a compile
  int tries = 0;
  std::string issue;  // display path of ISSUE.md (compiler judgements), "" none
  std::string note;   // why not reproduced, or where the search for it stopped
};

struct Culprit {
  int call_index = 0;  // 1-based, by occurrence in the run
  std::string kernel;
  std::string kind;                          // "cpp", "triton", "extern"
  std::string phase;                         // "launch" (faulted inside it) or "after_launch" (bad values after it)
  std::string source_nodes;                  // graph nodes from the wrapper's comment, if known
  std::string aten_ops;                      // their ATen ops from the same comment ("[aten.addmm]"), if known
  std::vector<std::string> post_grad_nodes;  // what the package's provenance says it computes ("log", "sub_1")
  std::string branch;                        // the torch.cond branch (subgraph) it ran in, "" at top level
  std::string why;                           // one line of evidence
  RootCause root_cause;
  // Under the poison variant: "reads memory no kernel wrote: ..." (which
  // tensor, how many elements still held the poison); "" otherwise.
  std::string unwritten;
  std::vector<ProbeStats> args;
  std::optional<Producer> producer;
  std::optional<Divergence> divergence;    // mismatch: how its output differs from eager
  std::vector<RunDifference> run_to_run;   // nondeterministic: how its outputs differ between two runs
  std::optional<SanitizerPass> sanitizer;  // a fault on a GPU: the aimed memcheck pass
  std::vector<GraphNodeRef> graph_nodes;   // mismatch: the exported-program nodes it computes (fused in)
  // Its lines of the model's Python source, where the package carries them
  // (wrapper/provenance.hpp): from the package alone.
  std::vector<SourceLine> source_lines;
  std::optional<Judgement> judgement;  // with an exported program; without one, why not (kind "")
};

struct UnmappedSite {  // a call site whose outputs name no graph node
  int call_index = 0;
  std::string kernel;
  std::string why;  // per output: "buf3: an internal value of softmax (exp)"
};

struct HonestError {  // the largest in-tolerance difference the mismatch search saw
  int call_index = 0;
  std::string kernel;
  std::string tensor;
  std::string dtype;
  double max_abs_error = 0;
  double max_rel_error = 0;
  double ratio = 0;  // error / allowed error
};

struct BisectionStep {
  int lo = 0;
  int hi = 0;
  std::string purpose;  // "bisect", "linear", "all", "confirm", "neighbour", "trace"
  std::string verdict;  // "reproduces", "clean", "inconclusive", "error"
  int runs = 0;
  int agreeing = 0;
  std::string note;
};

// A probe source the search did not use, and why (the next one took over).
struct PassedOver {
  std::string source;  // "interpose", "exported_program", ...
  std::string why;
};

// A call site that ran, by occurrence in the run (report.svg draws them).
struct SiteSummary {
  int index = 0;  // 1-based, by occurrence in the run
  std::string kernel;
  std::string kind;    // "cpp", "triton", "extern"
  std::string branch;  // the subgraph (torch.cond branch) it ran in, "" at top level
  std::string source;  // its Python source lines, where the package carries them (SourceLine::text)
};

// A call site whose NaN/Inf never reached the outputs: made and healed (or
// made on purpose and consumed), so not the culprit. The search names them
// because they are worth knowing.
struct HealedSite {
  int call_index = 0;
  std::string kernel;
  std::string tensor;  // what it wrote them into
  int64_t nan_count = 0;
  int64_t inf_count = 0;
  bool by_design = false;           // Inf from its own code's infinity literal (a mask)
  std::optional<int> last_read_by;  // the last site that read them
  std::string last_read_kernel;
  bool cleaned = false;  // that site wrote none of them on
  std::string note;  // "call site 2 cpp_fused_log_0 made 12 NaN in buf1, which call site 4 ... cleaned: not the cause"
};

// Another call site whose NaN/Inf reach outputs on their own, beside the
// culprit (the earliest such site): where outputs have independent origins.
struct OtherOrigin {
  int call_index = 0;
  std::string kernel;
  std::vector<int> outputs;  // 0-based output indices its values reach
  std::string source;        // its Python source lines, where the package carries them
  std::string note;          // "call site 8 cpp_fused_log_3 makes the NaN/Inf of output 0 on its own"
};

inline constexpr std::string_view k_blind_spot_status = "blind_spot";

struct Bisection {
  std::string source;                   // where the probes came from: "interpose", "exported_program", "guide"
  std::vector<PassedOver> passed_over;  // sources tried before it
  std::string strategy;                 // "bisect", "linear", "all"
  // search_status_name (bisect/bisect.hpp), or k_blind_spot_status: a site
  // named behind call sites without probes.
  std::string status;
  std::string predicate;  // "fault" or "nonfinite"
  std::string variant;    // the flag variant the runs used
  int call_sites = 0;     // in the instrumented build's run
  int planned_runs = 0;
  int runs = 0;
  std::vector<BisectionStep> steps;
  std::vector<SiteSummary> sites;  // every call site that ran, in launch order (from the trace run)
  std::string message;
  std::string self_check;  // the evidence run, with every site up to the culprit probed: what it showed
  // nonfinite: where the outputs' NaN/Inf come from, traced from the outputs
  // back to the site that made them ("" when not traced), and the sites
  // passed over because what they made never reached an output.
  std::string reach;
  std::vector<HealedSite> healed;
  std::vector<OtherOrigin> other_origins;  // independent origins beside the culprit, in run order
  // mismatch: call sites with mapped outputs, those without, and the largest
  // difference seen that was within tolerance (how close honest rounding came)
  std::optional<int> mapped_sites;
  std::vector<UnmappedSite> unmapped;
  std::optional<HonestError> largest_within;
};

struct BuildRecord {
  std::string purpose;  // "instrumented" (level 1), "guide <kernel>" (level 2), "hooks"
  std::string key;
  bool cache_hit = false;
  double seconds = 0;
  std::string torch_version;
  std::string source;                   // "interpose", "exported_program", "guide"
  std::string fidelity;                 // how far the instrumented model is the package's own code
  std::vector<PassedOver> passed_over;  // sources not used before this one
  // A rebuild of the package's own library (search/library_rebuild.hpp):
  // the objects (wrapper, kernel, weights) compiled this time, the others
  // from the cache; nullopt for other builds.
  std::optional<int> objects_compiled = std::nullopt;
};

struct Builds {
  int count = 0;  // builds that ran (cache hits excluded)
  int cache_hits = 0;
  double seconds = 0;  // time spent in builds
  std::vector<BuildRecord> items;
  std::optional<bool> call_sites_match;  // instrumented wrapper vs the original, when both were read
  std::string note;                      // differences, if any
};

struct Reproducer {
  std::string dir;                 // display path of DIR/repro
  std::vector<std::string> files;  // saved input tensors of the culprit
  std::string command;             // shortest command that reruns the failing configuration
  std::string replay;              // display path of DIR/repro/replay (the culprit alone); "" when not written
  std::string replay_note;         // what the replay checks, or why it cannot run
  std::optional<UpstreamRepro> upstream;
};

// The trigger shrunk (job/shrink.hpp): the smallest set of the failing
// batch's samples that still fails, in the reproducing environment.
struct MinimalInputs {
  std::vector<int64_t> samples;  // numbered from 1, in the file's order
  int64_t of = 0;                // the batch's samples
  bool alone = false;            // one sample, which fails alone
  bool none_alone = false;       // several, and each one run alone passed
  bool minimal = false;          // no smaller set tried failed (false: the runs ran out first)
  int64_t repeated_to = 0;       // run repeated to the package's smallest batch; 0: as it is
  int runs = 0;
  std::string how;                 // "halves, then the one sample left", "delta debugging"
  std::string file;                // display path of OUT/repro/minimal.inputs.pt; "" when not written
  std::string reference;           // a mismatch: OUT/repro/minimal.reference.pt, the reference's rows of them
  std::string sentence;            // "sample 4 of 16 fails alone"
  std::vector<std::string> facts;  // what sets them apart from the samples that passed
};

// One sample in the failing batch against a run of it alone
// (job/batch_dependence.hpp), compared at every call site.
struct SampleInCompany {
  int64_t sample = 0;       // numbered from 1, in the file's order
  bool in_trigger = false;  // one of the trigger's samples (MinimalInputs::samples)
  int64_t alone_batch = 1;  // rows of its run alone: 1, or repeated to the package's smallest batch
  int sites_compared = 0;   // call sites with a tensor compared
  int tensors_compared = 0;
  int tensors_not_compared = 0;  // no one dimension scales with the batch
  // The first call site whose values for the sample differ beyond tolerance.
  std::optional<int> site;
  std::string kernel;
  std::string tensor;
  bool whole_batch = false;  // a tensor without a row per sample (a value over the whole batch)
  int rows_dim = -1;
  int64_t differ = 0;     // elements compared that differ
  int64_t elements = 0;   // elements compared
  int64_t nonfinite = 0;  // of them NaN/Inf in one run only
  double max_abs = 0;     // the largest finite difference
  double bound = 0;       // the tolerance there (atol + rtol * scale)
  std::string in_batch;   // the worst element in the batch's run, and alone
  std::string alone;
};

// Where a sample depends on its batch (job/batch_dependence.hpp): samples of
// the failing batch, each in a run of the batch and in a run of it alone
// (repeated to the package's smallest batch), compared site by site.
struct BatchDependence {
  int64_t batch = 0;                     // samples in the run in company (the failing batch)
  bool repeated = false;                 // a run alone could not run at batch 1: repeated to the smallest batch
  bool fails_only_in_company = false;    // the trigger's samples fail together and none alone
  bool dependent = false;                // the finding batch_dependent
  std::vector<SampleInCompany> samples;  // those compared, in the file's order
  std::optional<size_t> detailed;        // the sample whose first differing site the sentence gives
  int runs = 0;
  std::string sentence;
};

struct PhaseTime {
  std::string phase;  // "inspect", "validate", "baseline", "matrix", "report"
  double seconds = 0;
};

struct Report {
  int schema_version = k_report_schema_version;
  std::string tool_version;
  std::vector<std::string> command_line;  // redacted argv
  Environment environment;
  PackageSummary package;
  std::vector<TensorInfo> inputs;
  std::string inputs_binding;  // how the file was bound to the flat inputs (classify inputs_binding_text)
  std::string inputs_path;     // display path
  std::string inputs_format;   // "torch.save", "torch.save (legacy format)", "safetensors"; "" unknown
  std::vector<std::string>
      inputs_read_as;         // values read as something else ("a ...BatchEncoding read as the dict it holds")
  std::string inputs_origin;  // "" the user's file; else where it came from ("the package's sample inputs ...")
  std::string inputs_sha256;
  // Dynamic dimensions of the inputs outside the range the package was
  // compiled for (its wrapper's input checks), run as the package runs them
  // by default: with those checks off.
  std::vector<std::string> inputs_outside_range;
  std::optional<MinimalInputs> minimal_inputs;      // the trigger shrunk
  std::optional<BatchDependence> batch_dependence;  // one sample in the batch against it alone
  std::string batch_dependence_note;                // why it was not compared
  std::string shrink_note;     // why it was not, or what the batch allows ("the package takes only batch 8: ...")
  // --check-masked, after a clean run (search/mask_scan.hpp): the sites
  // that make NaN/Inf no output holds (not by design); nullopt when not
  // looked for; `masked_note` says why not, where it was asked for.
  std::optional<std::vector<HealedSite>> masked;
  std::string masked_note;
  std::string reference_path;  // display path, "" when none
  std::vector<RunRecord> runs;
  std::vector<BatchRecord> batches;      // a run over several batches; empty for one
  std::optional<bool> needs_history;     // the failing batch fails only after the ones before it
  std::vector<BatchGroup> batch_groups;  // --all-batches: every failing batch, grouped by signature
  std::vector<VariantSummary> matrix;
  std::vector<MatrixFinding> findings;  // the matrix read as a differential diagnosis
  Verdict verdict = Verdict::running;
  std::string verdict_reason;  // one line: why this verdict (e.g. what isolation would need)
  std::optional<Failure> failure;
  std::vector<PhaseTime> phases;
  double total_seconds = 0;
  std::string reproduce_command;   // shortest command that reproduces, redacted
  std::optional<Culprit> culprit;  // set by the bisection when it names a call site
  // Seconds from the job's start to the first printed culprit: the search
  // right after the baseline (answer first), else the end of the job.
  std::optional<double> first_answer_seconds;
  std::string first_answer;  // the line printed then
  // Seconds to the evidence run's confirmation of a first answer given as
  // the search found it; null where that answer was not confirmed (or came
  // confirmed).
  std::optional<double> answer_confirmed_seconds;
  bool first_answer_provisional = false;  // given before the evidence run
  std::optional<Bisection> bisection;
  std::optional<CoreDumpReading> coredump;  // the coredump variant's reading of the fault
  Builds builds;
  std::optional<Reproducer> repro;
  std::string error;               // could_not_test / internal_error: the one-line message
  std::vector<std::string> notes;  // what the run did besides testing (an earlier run moved aside, ...)
};

// "repro/upstream/repro.py: 5 of the exported program's 13 graph nodes show the
// symptom (exit 1), compiled in 11.1 s", or why none did.
std::string upstream_sentence(const UpstreamRepro& u);

}  // namespace aoti_bisect
