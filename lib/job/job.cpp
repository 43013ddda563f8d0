// `aoti-bisect run`: the Job that calls the phases in order and ends at the first Stop, the failure's
// signature, and the exit code of each verdict (and git bisect's).

#include "job/job.hpp"

#include <unistd.h>

#include <algorithm>
#include <future>
#include <optional>

#include <fmt/format.h>

#include "classify/signature.hpp"
#include "common/files.hpp"
#include "common/scratch_dir.hpp"
#include "common/text.hpp"
#include "job/batches.hpp"
#include "job/environment.hpp"
#include "job/gpu_coredump_run.hpp"
#include "job/inspect.hpp"
#include "job/matrix_phase.hpp"
#include "job/out_dir.hpp"
#include "job/reference.hpp"
#include "job/runner_phase.hpp"
#include "job/search_phase.hpp"
#include "job/shrink.hpp"
#include "job/step.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// failure.signature (classify/signature.hpp): the culprit's source comes from
// the package's own kernel.cpp, when the culprit is one of its call sites.
std::string signature_of(const Report& r, Verdict verdict, const Inspected* in) {
  SignatureInput sig;
  sig.kind = std::string(outcome_name(r.failure->kind));
  sig.first_line = r.failure->first_line;
  for (const auto& v : r.matrix) {
    if (v.name == r.failure->reproducing_variant) {
      sig.flags = v.env;
    }
  }
  if (verdict == Verdict::isolated && r.culprit) {
    sig.kernel = r.culprit->kernel;
    bool in_package = in != nullptr && in->model != nullptr &&
                      std::any_of(in->wrapper.call_sites.begin(), in->wrapper.call_sites.end(),
                                  [&](const CallSite& c) { return c.kernel == sig.kernel; });
    if (in_package && !in->model->kernel_cpp.empty()) {
      try {
        sig.kernel_source = kernel_definition(in->pkg->read_entry(in->model->kernel_cpp), sig.kernel);
      } catch (const Error&) {
        // unreadable: the signature goes without the source's hash
      }
    }
  }
  return failure_signature(sig);
}

// What every run of the job shares: the runner, the model's inputs and
// reference, the limits, the libraries loaded before the model.
ChildSetup child_setup(const Settings& s, const Inspected& in, const fs::path& reference, Recorder& rec) {
  ChildSetup setup{.runner = s.runner,
                   .out_dir = s.out_dir,
                   .model = in.model->name,
                   .device_key = in.model->device_key(),
                   .inputs = s.inputs,
                   .reference = reference,
                   .tolerances = s.tolerances,
                   .timeout_s = s.timeout_s,
                   .memory_limit_bytes = s.memory_limit_bytes,
                   .contiguous_inputs = s.contiguous_inputs};
  if (!s.python_library.empty()) {
    setup.load_libraries.push_back(s.python_library);
  }
  setup.load_libraries.insert(setup.load_libraries.end(), s.load_libraries.begin(), s.load_libraries.end());
  setup.on_batch = [&rec](const std::string& id, int index, int of, const std::string& file) {
    rec.progress().batch(id, index, of, display_path(file));
  };
  return setup;
}

class Job {
 public:
  Job(const RunOptions& opt, Progress& progress, const JobSeams& seams)
      : m_opt(opt), m_rec(opt.out_dir, opt.junit, progress), m_seams(seams) {}

  JobResult run();
  // What it ran with, once it knows (JobResult).
  const fs::path& runner() const { return m_runner_path; }
  const fs::path& model_facts() const { return m_runner.model_facts(); }

 private:
  fs::path m_runner_path;
  JobResult finish(Verdict verdict, const std::string& reason) {
    settle_host();
    if (verdict == Verdict::isolated && m_explain_later && !m_opt.no_replay && !interrupt_requested()) {
      // The culprit's replay, once the runs are done: with the fork servers
      // and the model they hold stopped, its process never runs beside them.
      forkserver_stop_all();
      auto explain = std::move(m_explain_later);
      m_explain_later = nullptr;
      explain();
    }
    settle_package_hash();
    read_coredump();
    stamp_signature(verdict);
    m_rec.finish(verdict, reason);
    return {m_rec.report(), exit_code_for(verdict)};
  }
  // How a step ends the job (job/matrix_phase.hpp Stop).
  JobResult end(const Stop& stop) {
    settle_host();
    if (auto damaged = m_runner.settle_copies(); damaged.stopped()) {
      return end(damaged.stop());  // the package's damage, not what a run or a step made of it
    }
    if (stop.how == Stop::How::finish) {
      return finish(stop.verdict, stop.message);
    }
    if (stop.how == Stop::How::interrupted) {
      return interrupted(stop.message);
    }
    if (interrupt_requested()) {
      // Whatever failed, it failed because its helper or child was stopped.
      return interrupted(fmt::format("during the {} phase", m_rec.phase()));
    }
    settle_package_hash();
    read_coredump();
    std::string message = redact_paths(stop.message);
    stamp_signature(stop.verdict);
    m_rec.finish(stop.verdict, message, message);
    return {m_rec.report(), exit_code_for(stop.verdict)};
  }
  // The interrupted verdict (exit 130 under every exit-code convention),
  // naming the signal and where it came.
  JobResult interrupted(const std::string& where) {
    return finish(Verdict::interrupted, fmt::format("interrupted by {} {}; the report holds what was done so far",
                                                    signal_name(interrupt_signal()), where));
  }
  // The coredump variant's core dump, read once the runs are done (job/gpu_coredump_run.hpp).
  void read_coredump() {
    if (!m_in || m_rec.report().coredump) {
      return;
    }
    auto d = read_gpu_coredump(m_opt.out_dir / "runs", m_rec.report(), m_in->wrapper.call_sites);
    if (!d) {
      return;
    }
    m_rec.coredump(*d);
    if (d->agrees == false) {
      const Culprit& c = *m_rec.report().culprit;
      m_rec.note(
          fmt::format("the GPU core dump ({}) names {} as the kernel at the device exception, the search "
                      "names call site {} {}: the core dump is the device's own record of where it stopped, "
                      "and an asynchronous error report can mislead the search",
                      d->run, d->kernel, c.call_index, c.kernel));
    }
  }
  void stamp_signature(Verdict verdict) {
    if (m_rec.report().failure) {
      m_rec.signature(signature_of(m_rec.report(), verdict, m_in ? &*m_in : nullptr));
    }
  }
  std::unique_ptr<ChildRunner> make_children(const ChildSetup& setup) const {
    return m_seams.children ? m_seams.children(setup) : std::make_unique<ProcessChildren>(setup);
  }
  JobResult phases(const UserConfig& user);
  // The settings phase: the profile from the package's device key, the
  // user's config and the command line resolved once (harness/settings.hpp).
  Settings settings(const UserConfig& user, const Inspected& in) {
    PhaseFindings found = in.found;
    found.runner = m_runner.runner_built();
    Settings s =
        resolve_settings(m_opt, user, choose_profile(m_opt, in.model->device_key(), found), m_batches, found);
    s.runner_torch_dir = m_runner.torch_dir();
    s.python = m_runner.python();
    for (const auto& why : s.unavailable_variants) {
      m_rec.note("variant " + why + ": left out of the flag matrix");
    }
    m_runner_path = s.runner;
    return s;
  }
  // The job's own OUT/.work-<pid>, removed when the job ends; verify's jobs
  // share one extraction (and the fork server holding it).
  std::filesystem::path work_dir(const Settings& s) {
    if (!m_opt.shared_work.empty()) {
      return m_opt.shared_work;
    }
    if (!m_own_work) {
      m_own_work.emplace(s.out_dir / fmt::format(".work-{}", ::getpid()));
    }
    return m_own_work->path();
  }
  // Options that do not go with several batches: Error(usage).
  void check_batch_options() const {
    bool several = m_batches.size() > 1 || m_opt.calls > 1;
    if (m_batches.size() > 1 && m_opt.calls > 1) {
      throw Error(ErrorKind::usage, "--calls N runs one inputs file N times: give one --inputs with it");
    }
    if (several && (!m_opt.reference.empty() || m_opt.against_eager)) {
      throw Error(ErrorKind::usage, "--reference and --against-eager compare one batch: give one --inputs with them");
    }
  }
  RunOptions m_opt;                 // inputs set to the first batch once --inputs is expanded
  std::vector<fs::path> m_batches;  // every --inputs, expanded (job/batches.hpp); empty: m_opt.inputs
  std::optional<OutDir> m_out;      // declared before m_rec: held until the last report is written
  Recorder m_rec;
  const JobSeams& m_seams;
  RunnerPhase m_runner{m_opt, m_rec};
  std::optional<Inspected> m_in;          // what the inspect phase found, once it did
  std::function<void()> m_explain_later;  // the search's (BisectOutcome::explain_later), run by finish
  std::future<Environment> m_host;        // the host's description (probe_host)
  bool m_host_settled = false;            // in the report (settle_host)
  std::optional<ScratchDir> m_own_work;   // work_dir's, unless shared

  // The host's description (python3 --version, git, the OS): started once,
  // as its own thread (`how`), or, where it was not started, made when
  // settled. Behind a version manager's shim, python3 --version alone is
  // about 30 processes: a job that searches starts them after its first run
  // and answer (on 2 cores, beside the first run, they delayed the answer by
  // a few hundredths of a second, even at nice +10), one that does not at
  // its start.
  void probe_host(std::launch how) {
    if (!m_host.valid()) {
      m_host = std::async(how, [] {
        Environment host;
        probe_host_environment(host);
        return host;
      });
    }
  }
  // Into the reports from here on, where the probe is done; otherwise when
  // the job ends.
  void settle_host_if_done() {
    if (m_host.valid() && m_host.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      settle_host();
    }
  }
  // The host's description into the report. What the baseline's runner
  // said of the device stays.
  void settle_host() {
    if (!m_in || m_host_settled) {
      return;
    }
    m_host_settled = true;
    probe_host(std::launch::deferred);
    const std::string device_key = m_in->model->device_key();
    Environment host;
    try {
      host = m_host.get();
    } catch (const std::exception&) {
      return;  // best effort, as each of its probes
    }
    Environment env = m_rec.report().environment;
    env.device = device_key;
    env.os = host.os;
    env.python_version = host.python_version;
    env.git_revision = host.git_revision;
    if (env.device_name.empty() && (device_key.empty() || device_key == "cpu")) {
      env.device_name = host.device_name;  // the CPU's model: the package's device
    }
    m_rec.environment(env);
  }

  // The package's hash into the report, once its thread is done.
  void settle_package_hash() {
    if (!m_in || !m_in->package_sha256.valid() || !m_rec.report().package.sha256.empty()) {
      return;
    }
    try {
      m_rec.package_sha256(m_in->package_sha256.get());
    } catch (const std::exception&) {
      // unreadable now: the report goes without it
    }
  }
};

JobResult Job::run() {
  UserConfig user = load_config(m_opt);
  std::vector<std::string> command_line;
  for (const auto& a : m_opt.command_line) {
    command_line.push_back(redact_paths(a));
  }
  // Before the first report is written: the lock, and an earlier run's
  // files moved apart. A busy or unwritable folder gets no report.
  m_out.emplace(m_opt.out_dir);
  std::optional<Stop> unexpanded;
  if (!m_opt.inputs_given.empty()) {
    try {
      m_batches = expand_inputs(m_opt.inputs_given);
      m_opt.inputs = m_batches.front();
    } catch (const Error& e) {
      unexpanded = stop_of(e);
      m_opt.inputs = m_opt.inputs_given.front();
    }
  }
  m_rec.start(command_line, display_path(m_opt.inputs), m_opt.reference.empty() ? "" : display_path(m_opt.reference));
  for (const auto& note : m_out->notes()) {
    m_rec.note(note);
  }

  install_interrupt_handlers();
  if (m_opt.no_bisect) {
    probe_host(std::launch::async);  // no answer to come first
  }
  try {
    check_batch_options();
    if (unexpanded) {
      return end(*unexpanded);
    }
    return phases(user);
  } catch (const Error& e) {
    // Whatever stops the job after the report started ends it too, never
    // left at `running`: a usage error found late (no --model for a package
    // of several, --against-eager without a program), an input the tool
    // cannot use, a write that fails (a full disk). The exit code stays the
    // error's. Where even that report cannot be written, the recorder has
    // removed the reports, and the error line says so.
    if (m_rec.reports_removed()) {
      throw;  // a report could not be written, and none is left: the error line says so
    }
    if (dynamic_cast<const ConfigError*>(&e) != nullptr) {
      m_rec.discard();  // a config file's error, located (FILE:LINE:COL): like every config error, no report
      throw;
    }
    settle_host();
    std::string message = redact_paths(e.what());
    const Verdict verdict = stop_of(e).verdict;
    try {
      m_rec.finish(verdict, message, message);
    } catch (const Error& unwritten) {
      throw Error(e.kind(), fmt::format("{}; {}", e.what(), unwritten.what()));
    }
    throw;
  } catch (const std::exception& e) {
    std::string message = "internal error: " + redact_paths(e.what());
    settle_host();
    if (m_rec.reports_removed()) {
      throw;
    }
    try {
      m_rec.finish(Verdict::internal_error, message, message);
    } catch (const Error&) {
      // the reports are removed: the caller's line says the rest
    }
    throw;
  }
}

// A step's Stop ends the job there (ccache's TRY): `step_` is a Step<T>.
#define AOTI_BISECT_TRY(step_)                 \
  do {                                         \
    if (auto&& s_ = (step_); s_.stopped()) {   \
      return end(s_.stop());                   \
    }                                          \
  } while (false)

// The job's phases, in the order docs/architecture.md ("The data flow of a
// run") lists them: each returns a Step, and the first Stop ends the job.
JobResult Job::phases(const UserConfig& user) {
  auto inspected = inspect(m_opt, m_batches, m_rec);
  AOTI_BISECT_TRY(inspected);
  Inspected& in = m_in.emplace(std::move(*inspected));
  AOTI_BISECT_TRY(m_runner.choose(in));
  const Settings s = settings(user, in);
  m_runner.serve(s, in.model->device_key());
  auto model = m_runner.extract(in, work_dir(s), s);
  AOTI_BISECT_TRY(model);
  auto reference = reference_phase(s, in, work_dir(s), m_rec);
  AOTI_BISECT_TRY(reference);
  auto children = make_children(child_setup(s, in, *reference, m_rec));
  Runs runs(*children, m_rec);
  JobContext job{s, m_rec, runs, in.model->device_key(), work_dir(s)};
  MatrixPhase matrix(job, *model, in.model->name);
  SearchPhase search(job, in, *model, m_seams.source);
  AOTI_BISECT_TRY(matrix.run_baseline(search.first_run_probes()));  // probed: the search's trace
  AOTI_BISECT_TRY(m_runner.settle_copies());
  AOTI_BISECT_TRY(m_runner.fits(matrix.baseline()));
  AOTI_BISECT_TRY(matrix.refuse_inputs());
  if (matrix.answers_first()) {
    AOTI_BISECT_TRY(search.first(matrix));
  }
  probe_host(std::launch::async);  // after the first answer, which never waits for python3 --version
  settle_host_if_done();
  in.hash_package();  // after the first answer: its thread no longer shares a core with the first run
  AOTI_BISECT_TRY(matrix.run_stages());
  AOTI_BISECT_TRY(matrix.read());
  if (auto clean = matrix.without_failure(); clean.stopped()) {
    return end(search.masks(matrix, clean.stop()));
  }
  shrink_trigger(job, *model, matrix, search.batch_dimension());
  auto answer = search.failure(matrix);
  AOTI_BISECT_TRY(answer);
  m_explain_later = answer->explain_later;
  return finish(answer->verdict, answer->reason);
}

#undef AOTI_BISECT_TRY
}  // namespace

ExitCode exit_code_for(Verdict verdict) {
  switch (verdict) {
    case Verdict::clean: return ExitCode::clean;
    case Verdict::isolated: return ExitCode::isolated;
    case Verdict::not_isolated:
    case Verdict::inconclusive:
    case Verdict::suppressed_by_instrumentation: return ExitCode::not_isolated;
    case Verdict::could_not_test: return ExitCode::cannot_test;
    case Verdict::interrupted: return ExitCode::interrupted;
    case Verdict::running:
    case Verdict::internal_error: return ExitCode::internal;
  }
  return ExitCode::internal;
}

int git_bisect_exit_code(ExitCode code) {
  switch (code) {
    case ExitCode::clean: return 0;
    case ExitCode::isolated:
    case ExitCode::not_isolated: return 1;
    case ExitCode::cannot_test: return 125;
    case ExitCode::interrupted: return 130;
    case ExitCode::usage:
    case ExitCode::internal: return 128;
  }
  return 128;
}

JobResult run_job(const RunOptions& options, Progress& progress, const JobSeams& seams) {
  Job job(options, progress, seams);
  JobResult result = job.run();
  result.runner = job.runner();
  result.model_facts = job.model_facts();
  return result;
}

}  // namespace aoti_bisect
