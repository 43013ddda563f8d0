#include "job/job.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <unistd.h>

#include <fmt/format.h>

#include "classify/classify.hpp"
#include "common/events.hpp"
#include "common/files.hpp"
#include "config/config.hpp"
#include "job/environment.hpp"
#include "job/runner_protocol.hpp"
#include "matrix/matrix.hpp"
#include "package/package.hpp"
#include "process/process.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Removes a directory tree when it goes out of scope (the extracted package).
class ScopedDir {
 public:
  explicit ScopedDir(fs::path p) : m_path(std::move(p)) {}
  ~ScopedDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  const fs::path& path() const { return m_path; }

 private:
  fs::path m_path;
};

struct Context {
  const RunOptions& opt;
  Progress& progress;
  Report report;
  fs::path out_dir;
  double start = now_s();
  double phase_start = now_s();
  std::string phase;

  void begin_phase(const std::string& name, const std::string& detail) {
    end_phase();
    phase = name;
    phase_start = now_s();
    progress.phase(name, detail);
  }
  void end_phase() {
    if (!phase.empty()) {
      report.phases.push_back({phase, now_s() - phase_start});
      phase.clear();
    }
  }
  void save() {
    report.total_seconds = now_s() - start;
    write_reports(report, out_dir, opt.junit);
  }
};

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+~") ==
                        std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

fs::path runner_path(const RunOptions& opt) {
  if (!opt.runner.empty()) {
    return opt.runner;
  }
  if (const char* env = std::getenv("AOTI_BISECT_RUNNER"); env && *env) {
    return env;
  }
  return self_executable().parent_path() / "aoti-bisect-runner";
}

void fill_package(Context& ctx, const Package& pkg, const ModelFiles& model, const WrapperInfo& wrapper) {
  PackageSummary& p = ctx.report.package;
  p.path = display_path(pkg.path());
  p.sha256 = sha256_file(pkg.path());
  p.models = pkg.model_names();
  p.model = model.name;
  p.device_key = model.device_key();
  p.metadata = model.metadata;
  p.torch_version = pkg.torch_version();
  p.call_sites = static_cast<int>(wrapper.call_sites.size());
  p.instrumented = wrapper.instrumented;
  p.has_exported_program = !pkg.exported_programs().empty();
}

Profile choose_profile(const RunOptions& opt, const std::string& device_key) {
  std::string backend = opt.backend;
  if (backend.empty()) {
    backend = device_key == "cuda" ? "cuda" : device_key == "cpu" ? "cpu" : device_key;
  }
  return builtin_profile(backend);
}

struct ChildResult {
  ExitStatus status;
  Classification cls;
  bool finished = false;
};

SpawnSpec child_spec(const Context& ctx, const PlannedRun& run, const fs::path& pkg_dir, const std::string& model,
                     const std::string& device_key, const Tolerance& tol, double timeout_s) {
  fs::path dir = ctx.out_dir / "runs" / run.id;
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  SpawnSpec spec;
  spec.argv = {runner_path(ctx.opt).string(),
               "--package-dir", fs::absolute(pkg_dir).string(),
               "--model", model,
               "--device-key", device_key,
               "--inputs", fs::absolute(ctx.opt.inputs).string(),
               "--events", fs::absolute(dir / "events.jsonl").string(),
               "--outputs", fs::absolute(dir / "outputs.pt").string()};
  if (!ctx.opt.reference.empty()) {
    spec.argv.insert(spec.argv.end(), {"--reference", fs::absolute(ctx.opt.reference).string(), "--atol",
                                       fmt::format("{:g}", tol.atol), "--rtol", fmt::format("{:g}", tol.rtol)});
  }
  spec.env = current_environment();
  for (const auto& [k, v] : run.env) {
    spec.env[k] = v;
  }
  spec.cwd = fs::absolute(dir);
  spec.stdout_path = fs::absolute(dir / "stdout.txt");
  spec.stderr_path = fs::absolute(dir / "stderr.txt");
  spec.timeout_s = timeout_s;
  return spec;
}

RunRecord make_record(const PlannedRun& run, const ChildResult& r) {
  RunRecord rec;
  rec.id = run.id;
  rec.variant = run.variant;
  rec.repeat = run.repeat;
  rec.env = run.env;
  rec.outcome = r.cls.kind;
  rec.exit = r.status.describe();
  if (r.status.how == ExitStatus::How::exited) {
    rec.exit_code = r.status.exit_code;
  }
  if (r.status.how == ExitStatus::How::signaled || r.status.how == ExitStatus::How::timed_out) {
    rec.signal = r.status.signal;
  }
  rec.core_dumped = r.status.core_dumped;
  rec.seconds = r.status.seconds;
  rec.first_error_line = redact_paths(r.cls.first_line);
  rec.outputs = r.cls.outputs;
  rec.comparison = r.cls.comparison;
  return rec;
}

std::string reproduce_command(const RunOptions& opt, const std::map<std::string, std::string>& env) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : env) {
    parts.push_back(k + "=" + shell_quote(v));
  }
  parts.push_back("aoti-bisect run");
  parts.push_back(shell_quote(display_path(opt.package)));
  if (!opt.model.empty()) {
    parts.push_back("--model " + shell_quote(opt.model));
  }
  parts.push_back("--inputs " + shell_quote(display_path(opt.inputs)));
  if (!opt.reference.empty()) {
    parts.push_back("--reference " + shell_quote(display_path(opt.reference)));
  }
  parts.push_back("--no-matrix");
  return fmt::format("{}", fmt::join(parts, " "));
}

void apply_environment(Report& report, const Classification& cls) {
  auto get = [&](const char* k) {
    auto it = cls.environment.find(k);
    return it == cls.environment.end() ? std::string() : it->second;
  };
  Environment& e = report.environment;
  e.torch_version = get("torch");
  e.cuda_version = get("cuda");
  e.hip_version = get("hip");
  if (!get("device_name").empty()) {
    e.device_name = get("device_name");
  }
  e.driver_version = get("driver");
}

JobResult finish(Context& ctx, Verdict verdict, const std::string& reason = "") {
  ctx.end_phase();
  ctx.report.verdict = verdict;
  if (!reason.empty()) {
    ctx.report.verdict_reason = reason;
  }
  try {
    ctx.save();
  } catch (const Error& e) {
    ctx.progress.note(fmt::format("cannot write the report to '{}': {}", ctx.out_dir.string(), e.what()));
  }
  return {ctx.report, exit_code_for(verdict)};
}

JobResult fail(Context& ctx, Verdict verdict, const std::string& message) {
  ctx.report.error = redact_paths(message);
  return finish(ctx, verdict, ctx.report.error);
}

// Runs `plan` with up to `jobs` children at once; records each run and saves
// the report after it. Returns false when interrupted.
bool run_children(Context& ctx, const std::vector<PlannedRun>& plan, size_t first, size_t last, int jobs,
                  const std::function<SpawnSpec(const PlannedRun&)>& spec_of,
                  std::vector<ChildResult>& results, int& done, int total) {
  ProcessSet set;
  std::map<int, size_t> running;
  size_t next = first;
  while (next < last || !running.empty()) {
    while (next < last && running.size() < static_cast<size_t>(std::max(1, jobs)) && !interrupt_requested()) {
      ctx.progress.run_started(plan[next].id, done, total);
      running[set.start(spec_of(plan[next]))] = next;
      ++next;
    }
    if (running.empty()) {
      return false;
    }
    auto [token, status] = set.wait_any();
    size_t idx = running.at(token);
    running.erase(token);
    if (status.how == ExitStatus::How::interrupted) {
      return false;
    }
    fs::path events = ctx.out_dir / "runs" / plan[idx].id / "events.jsonl";
    ChildResult r{status, classify_run(status, read_events(events)), true};
    results[idx] = r;
    ++done;
    ctx.report.runs.push_back(make_record(plan[idx], r));
    ctx.progress.run_finished(plan[idx].id, r.cls.kind, status.describe(), status.seconds, done, total);
    ctx.save();
    if (r.cls.internal || r.cls.cannot_test) {
      set.kill_all();
      return true;
    }
  }
  return !interrupt_requested();
}

void summarize(Context& ctx, const std::vector<PlannedRun>& plan, const std::vector<ChildResult>& results) {
  std::vector<RunOutcome> outcomes;
  for (size_t i = 0; i < results.size() && i < plan.size(); ++i) {
    if (!results[i].finished) {
      continue;
    }
    outcomes.push_back({plan[i].variant, plan[i].env, results[i].cls.kind});
  }
  MatrixSummary m = summarize_matrix(outcomes);
  ctx.report.matrix.clear();
  for (const auto& v : m.variants) {
    ctx.report.matrix.push_back({v.variant, v.env, v.runs, v.reproduced, v.deterministic()});
  }
  if (!m.failure) {
    ctx.report.failure.reset();
    return;
  }
  Failure f;
  f.kind = *m.failure;
  f.first_check = std::string(outcome_info(f.kind).first_check);
  f.reproduced = m.total_reproduced;
  f.runs = m.total_runs;
  f.deterministic = m.deterministic;
  f.reproducing_variant = m.chosen.value_or("");
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].finished && results[i].cls.kind == f.kind) {
      f.first_line = redact_paths(results[i].cls.first_line);
      f.signal = results[i].cls.signal;
      break;
    }
  }
  ctx.report.failure = f;
  std::map<std::string, std::string> env;
  for (const auto& v : m.variants) {
    if (m.chosen && v.variant == *m.chosen) {
      env = v.env;
    }
  }
  ctx.report.reproduce_command = reproduce_command(ctx.opt, env);
}

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

JobResult run_job(const RunOptions& opt, Progress& progress) {
  // Configuration problems are usage errors: found before anything runs.
  UserConfig user;
  if (!opt.config.empty()) {
    user = load_user_config(opt.config.string());
  }
  if (opt.jobs && *opt.jobs < 1) {
    throw Error(ErrorKind::usage, "--jobs must be at least 1");
  }

  Context ctx{opt, progress, {}, opt.out_dir};
  ctx.report.tool_version = AOTI_BISECT_VERSION;
  for (const auto& a : opt.command_line) {
    ctx.report.command_line.push_back(redact_paths(a));
  }
  ctx.report.inputs_path = display_path(opt.inputs);
  ctx.report.reference_path = opt.reference.empty() ? "" : display_path(opt.reference);
  ctx.report.environment.tool_version = AOTI_BISECT_VERSION;
  try {
    fs::create_directories(ctx.out_dir);
  } catch (const std::exception&) {
    throw Error(ErrorKind::usage, fmt::format("output directory '{}' cannot be created", ctx.out_dir.string()));
  }
  install_interrupt_handlers();

  ctx.begin_phase("inspect", display_path(opt.package));
  std::optional<Package> pkg;
  const ModelFiles* model = nullptr;
  WrapperInfo wrapper;
  try {
    pkg = Package::open(opt.package);
    model = &pkg->select_model(opt.model);
    wrapper = pkg->wrapper_info(*model);
    fill_package(ctx, *pkg, *model, wrapper);
    require_file(opt.inputs, "inputs file");
    ctx.report.inputs_sha256 = sha256_file(opt.inputs);
    if (!opt.reference.empty()) {
      require_file(opt.reference, "reference file");
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::usage) {
      throw;
    }
    return fail(ctx, e.kind() == ErrorKind::internal ? Verdict::internal_error : Verdict::could_not_test, e.what());
  }
  const std::string device_key = model->device_key();
  ctx.report.environment.device = device_key;
  probe_host_environment(ctx.report.environment);
  if (device_key.empty()) {
    return fail(ctx, Verdict::could_not_test,
                fmt::format("package '{}': model '{}' has no AOTI_DEVICE_KEY in its metadata; rebuild it with "
                            "aoti_compile_and_package",
                            opt.package.string(), model->name));
  }
  Profile profile = choose_profile(opt, device_key);
  Tolerance tol = user.tolerance.value_or(Tolerance{});
  if (opt.atol) {
    tol.atol = *opt.atol;
  }
  if (opt.rtol) {
    tol.rtol = *opt.rtol;
  }
  double timeout = opt.timeout_s.value_or(user.timeout_s.value_or(profile.timeout_s));
  int jobs = opt.jobs.value_or(user.jobs.value_or(1));

  ScopedDir work(ctx.out_dir / fmt::format(".work-{}", ::getpid()));
  fs::path pkg_dir;
  try {
    pkg_dir = pkg->extract(work.path() / "package");
  } catch (const Error& e) {
    return fail(ctx, e.kind() == ErrorKind::cannot_test ? Verdict::could_not_test : Verdict::internal_error,
                e.what());
  }

  std::vector<PlannedRun> plan = plan_matrix(profile, user, opt.repeats);
  if (opt.no_matrix) {
    plan.resize(1);
  }
  std::vector<ChildResult> results(plan.size());
  int done = 0;
  int total = static_cast<int>(plan.size());
  auto spec_of = [&](const PlannedRun& run) {
    return child_spec(ctx, run, pkg_dir, model->name, device_key, tol, timeout);
  };

  ctx.begin_phase("baseline", "one run in a fresh child");
  if (!run_children(ctx, plan, 0, 1, 1, spec_of, results, done, total) && interrupt_requested()) {
    return finish(ctx, Verdict::interrupted, "interrupted during the baseline run");
  }
  const Classification& base = results[0].cls;
  apply_environment(ctx.report, base);
  ctx.report.inputs = base.inputs;
  if (base.internal) {
    return fail(ctx, Verdict::internal_error, *base.internal);
  }
  if (base.cannot_test) {
    return fail(ctx, Verdict::could_not_test, *base.cannot_test);
  }
  if (base.kind == OutcomeKind::input_mismatch) {
    return fail(ctx, Verdict::could_not_test,
                fmt::format("inputs file '{}' does not fit model '{}': {}", display_path(opt.inputs), model->name,
                            base.first_line));
  }

  if (plan.size() > 1) {
    ctx.begin_phase("matrix", fmt::format("{} runs over {} variants, {} at a time", plan.size() - 1,
                                          profile.variants.size() + user.variants.size(), jobs));
    if (!run_children(ctx, plan, 1, plan.size(), jobs, spec_of, results, done, total) && interrupt_requested()) {
      summarize(ctx, plan, results);
      return finish(ctx, Verdict::interrupted, "interrupted during the flag matrix; the report holds the runs so far");
    }
    for (const auto& r : results) {
      if (r.cls.internal) {
        return fail(ctx, Verdict::internal_error, *r.cls.internal);
      }
      if (r.cls.cannot_test) {
        return fail(ctx, Verdict::could_not_test, *r.cls.cannot_test);
      }
    }
  }
  ctx.begin_phase("report", "");
  summarize(ctx, plan, results);
  if (!ctx.report.failure) {
    return finish(ctx, Verdict::clean,
                  fmt::format("no failure in {} run{}", ctx.report.runs.size(), ctx.report.runs.size() == 1 ? "" : "s"));
  }
  const Failure& f = *ctx.report.failure;
  return finish(ctx, Verdict::not_isolated,
                fmt::format("{} reproduced in {} of {} runs; naming the kernel needs kernel bisection, which this "
                            "version does not do yet",
                            outcome_name(f.kind), f.reproduced, f.runs));
}

}  // namespace aoti_bisect
