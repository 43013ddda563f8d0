// verify: the failing run's inputs and their neighbours, run under the failing and the fixed package, and judged.
#include "verify/verify.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "config/config.hpp"
#include "job/job.hpp"
#include "package/package.hpp"
#include "process/process.hpp"
#include "verify/baseline.hpp"
#include "verify/index_bounds.hpp"
#include "verify/neighbours.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

std::string line_one(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The jobs' own progress stays quiet: verify prints one line per case.
class SilentJob : public Progress {
 public:
  void phase(const std::string&, const std::string&) override {}
  void run_started(const std::string&, int, int) override {}
  void run_finished(const std::string&, OutcomeKind, const std::string&, double, int, int) override {}
  void note(const std::string&) override {}
};

// What the plan needs from one package.
struct PackageFacts {
  WrapperInfo wrapper;
  std::string wrapper_source;
  std::vector<IndexBound> bounds;
};

PackageFacts package_facts(const fs::path& path, const std::string& model) {
  PackageFacts f;
  try {
    Package pkg = Package::open(path);
    const ModelFiles& m = pkg.select_model(model);
    f.wrapper = pkg.wrapper_info(m);
    f.wrapper_source = m.wrapper_cpp.empty() ? "" : pkg.read_entry(m.wrapper_cpp);
    f.bounds = index_bounds(f.wrapper, m.kernel_cpp.empty() ? "" : pkg.read_entry(m.kernel_cpp));
  } catch (const Error&) {
    // The job on the original inputs already said what is wrong with it.
  }
  return f;
}

// The smallest bound per input over both packages: a fix may have dropped
// the check that names it.
std::vector<IndexBound> merged_bounds(std::vector<IndexBound> a, const std::vector<IndexBound>& b) {
  for (const auto& x : b) {
    auto it = std::find_if(a.begin(), a.end(), [&](const IndexBound& y) { return y.input == x.input; });
    if (it == a.end()) {
      a.push_back(x);
    } else if (x.bound < it->bound) {
      *it = x;
    }
  }
  return a;
}

// One call of the runner's utilities (--make-inputs, --compare-outputs):
// the request written beside its answer. "" or why it failed.
std::string call_runner(const fs::path& runner, const std::string& flag, const nlohmann::json& request,
                        const fs::path& dir, const std::string& stem) {
  const fs::path req = dir / (stem + ".request.json");
  write_file_atomic(req, request.dump(1));
  SpawnSpec spec;
  spec.argv = {runner.string(), flag, fs::absolute(req).string()};
  spec.env = current_environment();
  spec.stderr_path = dir / (stem + ".stderr");
  ExitStatus st = run_process(spec);
  if (st.ok()) {
    return "";
  }
  std::string tail = line_one(st.stderr_tail.substr(st.stderr_tail.rfind("aoti-bisect-runner") == std::string::npos
                                                          ? 0
                                                          : st.stderr_tail.rfind("aoti-bisect-runner")));
  return fmt::format("the runner's {} ended with {}{}", flag, st.describe(), tail.empty() ? "" : ": " + tail);
}

class Verify {
 public:
  Verify(const VerifyOptions& o, const VerifyProgress& p) : m_o(o), m_progress(p) {}

  VerifySummary run();

 private:
  const VerifyOptions& m_o;
  const VerifyProgress& m_progress;
  Baseline m_base;
  VerifySummary m_sum;
  fs::path m_runner, m_facts;
  NeighbourFacts m_nf;
  std::vector<Neighbour> m_plan;
  std::map<std::string, Report> m_before;  // the failing package, by case
  std::map<std::string, fs::path> m_inputs_of;  // each case's inputs file but the original's
  // Each case's reference outputs, where there is one: the original's, and
  // a neighbour's cut with it (the batch's rows only).
  std::map<std::string, fs::path> m_reference_of;
  bool m_reference_cuts = false;  // every output of the original has the batch as dimension 0
  bool m_contiguous = false;      // --contiguous-inputs, given or the failing run's

  // The case's batch, where the package has a dynamic one it was read from
  // (0 otherwise): whether dropped rows are samples.
  int64_t batch_rows(const VerifyCase& c) const {
    const auto& in = m_nf.batch.inputs;
    if (m_nf.batch.kind != BatchDimension::Kind::dynamic || in.empty() ||
        static_cast<size_t>(in[0]) >= c.input_shapes.size() || c.input_shapes[static_cast<size_t>(in[0])].empty()) {
      return 0;
    }
    return c.input_shapes[static_cast<size_t>(in[0])][0];
  }

  fs::path case_dir(const std::string& name) const { return m_o.out_dir / "cases" / name; }

  RunOptions job_options(const std::string& name, const fs::path& package, const std::vector<std::string>& inputs,
                         const fs::path& out, const fs::path& work) const {
    RunOptions r = m_o.run;
    auto ref = m_reference_of.find(name);
    r.reference = ref == m_reference_of.end() ? fs::path() : ref->second;
    r.package = package;
    r.inputs_given = inputs;
    r.out_dir = out;
    r.shared_work = work;
    r.no_shrink = true;
    r.no_replay = true;
    r.contiguous_inputs = m_contiguous;
    return r;
  }

  void prepare();
  bool run_original(VerifyCase& c);
  void read_facts();
  void plan();
  void add_given();
  void make_inputs();
  void run_before();
  void run_fixed(VerifyCase& c, size_t k);
  void compare();
  void finish();
};

void Verify::prepare() {
  m_sum.tool_version = AOTI_BISECT_VERSION;
  m_sum.package = display_path(m_o.fixed);
  std::error_code ec;
  if (!fs::is_regular_file(m_o.fixed, ec)) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("package '{}' does not exist; give the fixed .pt2 package", display_path(m_o.fixed)));
  }
  if (!m_o.baseline.empty()) {
    m_base = read_baseline(m_o.baseline, m_o.inputs.empty());
    m_sum.baseline = display_path(m_o.baseline);
    m_sum.baseline_signatures = m_base.signatures;
    m_sum.earlier = m_base.earlier;
    m_sum.failing_package = m_base.failing_package.empty() ? "" : display_path(m_base.failing_package);
    if (!m_base.failing_note.empty()) {
      m_sum.notes.push_back(m_base.failing_note);
    }
  }
  for (const auto& in : m_o.inputs) {
    m_base.inputs.emplace_back(in);
  }
  if (!m_o.inputs.empty()) {
    m_base.failing_batch = m_base.inputs.front();
  }
  // Inputs the failing run copied into the package's layout are copied so here too.
  m_contiguous = m_o.run.contiguous_inputs || m_base.contiguous_inputs;
  if (!m_o.run.reference.empty() || !m_base.reference.empty()) {
    m_reference_of["original"] = m_o.run.reference.empty() ? m_base.reference : m_o.run.reference;
  }
  for (const auto& sig : m_o.signatures) {
    m_sum.baseline_signatures.push_back(sig);
    m_sum.earlier.push_back({sig, "", std::nullopt});
  }
  if (m_base.inputs.empty()) {
    throw Error(ErrorKind::usage, "verify needs the failing inputs: --baseline OUT/report.json of the failing run, or "
                                  "--inputs");
  }
  // An earlier verify's cases go; nothing else in the folder is touched.
  if (fs::exists(m_o.out_dir / "summary.json", ec)) {
    fs::remove_all(m_o.out_dir / "cases", ec);
  }
  fs::create_directories(m_o.out_dir / "cases", ec);
  if (ec) {
    throw Error(ErrorKind::usage,
                fmt::format("--out '{}' cannot be created: {}", display_path(m_o.out_dir), ec.message()));
  }
}

// The fixed package on the inputs as given, under the flag matrix.
bool Verify::run_original(VerifyCase& c) {
  // The baseline's files are one flow, run as the failing run ran them;
  // several --inputs are cases of their own (the first is the original).
  std::vector<std::string> inputs;
  for (const auto& f : m_base.inputs) {
    inputs.push_back(f.string());
  }
  if (!m_o.inputs.empty()) {
    inputs.resize(1);
  }
  m_progress(fmt::format("original: the fixed package on {} under the flag matrix", display_path(m_base.inputs[0])));
  if (!m_base.failing_package.empty()) {
    SilentJob quiet;
    RunOptions r = job_options("original", m_base.failing_package, inputs, case_dir("original") / "before",
                               m_o.out_dir / ".work-failing");
    r.no_matrix = r.no_bisect = true;
    m_before["original"] = run_job(r, quiet).report;
  }
  SilentJob quiet;
  RunOptions r = job_options("original", m_o.fixed, inputs, case_dir("original"), m_o.out_dir / ".work-fixed");
  r.check_masked = true;
  JobResult res = run_job(r, quiet);
  m_runner = res.runner;
  m_facts = res.model_facts;
  if (!res.report.batches.empty() && !fs::is_regular_file(m_base.failing_batch)) {
    // A folder or glob of batches: the neighbours are cut from the batch
    // that failed before the fix, else the first.
    auto before = m_before.find("original");
    const Report& r = before != m_before.end() && before->second.failure && before->second.failure->batch
                          ? before->second
                          : res.report;
    m_base.failing_batch = from_display(r.failure && r.failure->batch ? r.failure->batch->file
                                                                      : res.report.batches.front().file);
  }
  for (const auto& t : res.report.inputs) {
    c.input_shapes.push_back(t.shape);
    m_nf.shapes.push_back(t.shape);
    m_nf.names.push_back(t.argument);
  }
  // A reference follows a neighbour's cut of the batch only where every
  // output has the batch as its dimension 0.
  const int64_t rows = batch_rows(c);
  m_reference_cuts = m_reference_of.count("original") > 0 && rows > 0 && !res.report.runs.empty() &&
                     !res.report.runs.front().outputs.empty();
  for (const auto& o : res.report.runs.empty() ? std::vector<TensorStats>{} : res.report.runs.front().outputs) {
    m_reference_cuts = m_reference_cuts && !o.shape.empty() && o.shape[0] == rows;
  }
  c.exit_code = static_cast<int>(res.exit);
  c.seconds = res.report.total_seconds;
  c.report = "cases/original/report.md";
  auto before = m_before.find("original");
  judge_case(c, res.report, before == m_before.end() ? nullptr : &before->second, m_sum.earlier, batch_rows(c));
  return c.status != "could_not_test" && res.report.verdict != Verdict::could_not_test &&
         res.report.verdict != Verdict::internal_error &&
         res.report.verdict != Verdict::interrupted && !m_runner.empty();
}

// The other --inputs files, each a case of its own, as given.
void Verify::add_given() {
  for (size_t i = 1; i < m_o.inputs.size(); ++i) {
    VerifyCase c;
    std::string stem = fs::path(m_o.inputs[i]).stem().string();
    c.name = fmt::format("inputs-{}", i + 1);
    c.what = fmt::format("--inputs {}", display_path(m_o.inputs[i]));
    m_inputs_of[c.name] = m_o.inputs[i];
    m_sum.cases.push_back(std::move(c));
  }
}

// What the fixed package says of its inputs: the plan's facts, and the
// batch whose dropped rows are samples.
void Verify::read_facts() {
  PackageFacts fixed = package_facts(m_o.fixed, m_o.run.model);
  m_nf.batch = batch_dimension(fixed.wrapper, fixed.wrapper_source);
  m_nf.dims = dynamic_dimensions(fixed.wrapper, fixed.wrapper_source);
  m_nf.bounds = fixed.bounds;
}

void Verify::plan() {
  if (!m_base.failing_package.empty()) {
    m_nf.bounds = merged_bounds(m_nf.bounds, package_facts(m_base.failing_package, m_o.run.model).bounds);
  }
  m_nf.failing_samples = m_base.samples;
  m_nf.minimal_file = !m_base.minimal.empty();
  NeighbourPlan p = plan_neighbours(m_nf);
  m_plan = std::move(p.cases);
  m_sum.notes.insert(m_sum.notes.end(), p.notes.begin(), p.notes.end());
  for (size_t k = 1; k < m_plan.size(); ++k) {
    VerifyCase c;
    c.name = m_plan[k].name;
    c.what = m_plan[k].what;
    c.note = m_plan[k].note;
    m_sum.cases.push_back(std::move(c));
  }
}

// One runner call makes every neighbour's file.
void Verify::make_inputs() {
  MakeInputsRequest req;
  req.model_facts = fs::absolute(m_facts);
  req.result = fs::absolute(m_o.out_dir / "cases" / "made-inputs.json");
  const fs::path base = m_base.failing_batch;
  for (size_t k = 1; k < m_plan.size(); ++k) {
    const Neighbour& n = m_plan[k];
    std::error_code ec;
    fs::create_directories(case_dir(n.name), ec);
    MakeInputsRequest::Case one{n.name, fs::absolute(n.base == Neighbour::Base::minimal ? m_base.minimal : base),
                                fs::absolute(case_dir(n.name) / "inputs.pt"), n.cut, {}, {}};
    const fs::path ref = n.base == Neighbour::Base::minimal ? m_base.minimal_reference
                         : m_reference_cuts                 ? m_reference_of["original"]
                                                            : fs::path();
    if (!ref.empty()) {
      one.reference = fs::absolute(ref);
      one.reference_out = fs::absolute(case_dir(n.name) / "reference.pt");
    }
    req.cases.push_back(std::move(one));
  }
  std::string error = call_runner(m_runner, "--make-inputs", to_json(req), m_o.out_dir / "cases", "make-inputs");
  std::map<std::string, MadeInputs> made;
  if (error.empty()) {
    for (auto& m : made_inputs_from_json(nlohmann::json::parse(read_file(req.result, "made inputs")))) {
      made[m.name] = m;
    }
  }
  for (size_t k = 1; k < m_sum.cases.size(); ++k) {
    VerifyCase& c = m_sum.cases[k];
    auto it = made.find(c.name);
    if (it == made.end() || !it->second.error.empty()) {
      c.status = "could_not_test";
      c.error = it == made.end() ? error : "its inputs could not be made: " + it->second.error;
      c.why = c.error;
    } else {
      c.input_shapes = it->second.shapes;
      m_inputs_of[c.name] = case_dir(c.name) / "inputs.pt";
      if (it->second.reference_made) {
        m_reference_of[c.name] = case_dir(c.name) / "reference.pt";
      }
    }
    if (m_reference_of.count("original") > 0 && m_reference_of.count(c.name) == 0) {
      const std::string why = it != made.end() && !it->second.reference_note.empty() ? it->second.reference_note
                              : !m_reference_cuts ? "not every output has the batch as its dimension 0"
                                                  : "the reference cannot follow this cut";
      c.note += (c.note.empty() ? "" : "; ") + std::string("run without a reference: ") + why;
    }
  }
}

// The failing package on every neighbour first: one fork server holds its
// model while they run.
void Verify::run_before() {
  if (m_base.failing_package.empty()) {
    return;
  }
  for (size_t k = 1; k < m_sum.cases.size() && !interrupt_requested(); ++k) {
    const VerifyCase& c = m_sum.cases[k];
    if (c.status != "not_run") {
      continue;
    }
    SilentJob quiet;
    RunOptions r = job_options(c.name, m_base.failing_package, {m_inputs_of.at(c.name).string()},
                               case_dir(c.name) / "before", m_o.out_dir / ".work-failing");
    r.no_matrix = r.no_bisect = true;
    m_before[c.name] = run_job(r, quiet).report;
  }
}

void Verify::run_fixed(VerifyCase& c, size_t k) {
  if (c.status == "not_run") {
    SilentJob quiet;
    RunOptions r = job_options(c.name, m_o.fixed, {m_inputs_of.at(c.name).string()}, case_dir(c.name),
                               m_o.out_dir / ".work-fixed");
    r.no_matrix = true;
    r.check_masked = true;
    JobResult res = run_job(r, quiet);
    auto before = m_before.find(c.name);
    c.exit_code = static_cast<int>(res.exit);
    c.seconds = res.report.total_seconds;
    c.report = fmt::format("cases/{}/report.md", c.name);
    judge_case(c, res.report, before == m_before.end() ? nullptr : &before->second, m_sum.earlier, batch_rows(c));
  }
  m_progress(fmt::format("[{}/{}] {}: {}{}", k + 1, m_sum.cases.size(), c.name, c.status,
                         c.why.empty() ? "" : " (" + c.why + ")"));
}

void Verify::compare() {
  CompareOutputsRequest req;
  Profile profile = builtin_profile("cpu");
  ToleranceTable tol = profile.tolerances;
  tol.set_all(m_o.run.atol, m_o.run.rtol);
  req.tolerances = to_json(tol);
  req.result = fs::absolute(m_o.out_dir / "cases" / "compared.json");
  for (const auto& c : m_sum.cases) {
    const fs::path now = case_dir(c.name) / "runs" / "baseline" / "outputs.pt";
    const fs::path then = case_dir(c.name) / "before" / "runs" / "baseline" / "outputs.pt";
    std::error_code ec;
    if (fs::exists(now, ec) && fs::exists(then, ec)) {
      req.pairs.push_back({c.name, fs::absolute(now), fs::absolute(then)});
    }
  }
  if (req.pairs.empty() || m_runner.empty() ||
      !call_runner(m_runner, "--compare-outputs", to_json(req), m_o.out_dir / "cases", "compare-outputs").empty()) {
    return;
  }
  std::map<std::string, OutputsApart> apart;
  for (auto& a : outputs_apart_from_json(nlohmann::json::parse(read_file(req.result, "compared outputs")))) {
    apart[a.name] = a;
  }
  for (auto& c : m_sum.cases) {
    auto it = apart.find(c.name);
    if (it != apart.end()) {
      c.apart = it->second;
    }
  }
}

void Verify::finish() {
  forkserver_stop_all();
  std::error_code ec;
  fs::remove_all(m_o.out_dir / ".work-fixed", ec);
  fs::remove_all(m_o.out_dir / ".work-failing", ec);
  m_sum.interrupted = interrupt_requested();
  m_sum.exit_code = verify_exit_code(m_sum);
  write_file_atomic(m_o.out_dir / "summary.json", verify_summary_json(m_sum));
  write_file_atomic(m_o.out_dir / "summary.md", verify_summary_markdown(m_sum));
  write_file_atomic(m_o.out_dir / "junit.xml", verify_summary_junit(m_sum));
}

VerifySummary Verify::run() {
  const auto start = std::chrono::steady_clock::now();
  prepare();
  m_sum.cases.push_back(VerifyCase{});
  m_sum.cases[0].name = "original";
  m_sum.cases[0].what = "the inputs as given";
  read_facts();
  const bool ran = run_original(m_sum.cases[0]);
  if (ran && m_o.neighbours) {
    plan();
    if (m_sum.cases.size() > 1) {
      m_progress(fmt::format("{} neighbours: {}", m_sum.cases.size() - 1, [&] {
        std::vector<std::string> names;
        for (size_t k = 1; k < m_sum.cases.size(); ++k) {
          names.push_back(m_sum.cases[k].name);
        }
        return join(names, ", ");
      }()));
      make_inputs();
    }
  } else if (!ran) {
    m_sum.notes.push_back("nothing more was run: the fixed package could not be tested on the original inputs");
  }
  if (ran) {
    add_given();
    run_before();
  }
  for (size_t k = 0; k < m_sum.cases.size(); ++k) {
    if (k > 0 && interrupt_requested()) {
      break;
    }
    run_fixed(m_sum.cases[k], k);
  }
  compare();
  m_sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  finish();
  return m_sum;
}

}  // namespace

VerifySummary run_verify(const VerifyOptions& options, const VerifyProgress& progress) {
  return Verify(options, progress).run();
}

}  // namespace aoti_bisect
