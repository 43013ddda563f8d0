#include "job/job.hpp"

#include <functional>
#include <map>
#include <unistd.h>

#include <fmt/format.h>

#include "classify/classify.hpp"
#include "protocol/events.hpp"
#include "common/files.hpp"
#include "config/config.hpp"
#include "job/environment.hpp"
#include "bisect/bisect.hpp"
#include "build/build.hpp"
#include "job/bisect_phase.hpp"
#include "job/context.hpp"
#include "protocol/runner.hpp"
#include "matrix/matrix.hpp"
#include "package/package.hpp"
#include "process/process.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

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
  } else if (opt.against_eager) {
    parts.push_back("--against-eager");
    if (!opt.exported_program.empty()) {
      parts.push_back("--exported-program " + shell_quote(display_path(opt.exported_program)));
    }
  }
  parts.push_back("--no-matrix --no-bisect");
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

ChildRequest request_of(const PlannedRun& run, const fs::path& pkg_dir) {
  return ChildRequest{run.id, run.variant, run.repeat, run.env, pkg_dir, std::nullopt, {}};
}

// Runs plan[first, last) with up to `jobs` children at once; records each run
// and saves the report after it. Returns false when interrupted.
bool run_children(Context& ctx, const std::vector<PlannedRun>& plan, size_t first, size_t last, int jobs,
                  const fs::path& pkg_dir, std::vector<ChildResult>& results) {
  ProcessSet set;
  std::map<int, size_t> running;
  size_t next = first;
  while (next < last || !running.empty()) {
    while (next < last && running.size() < static_cast<size_t>(std::max(1, jobs)) && !interrupt_requested()) {
      ctx.progress.run_started(plan[next].id, ctx.runs_done, ctx.runs_planned);
      running[set.start(ctx.child_spec(request_of(plan[next], pkg_dir)))] = next;
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
    results[idx] = ctx.record(request_of(plan[idx], pkg_dir), status);
    if (results[idx].cls.internal || results[idx].cls.cannot_test) {
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
  ctx.chosen_env = env;
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
  nlohmann::json inductor_configs = user.inductor_configs;
  for (auto& [k, v] : opt.inductor_configs.items()) {
    inductor_configs[k] = v;
  }
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
  ctx.model = model->name;
  ctx.device_key = device_key;
  ctx.report.environment.device = device_key;
  probe_host_environment(ctx.report.environment);
  if (device_key.empty()) {
    return fail(ctx, Verdict::could_not_test,
                fmt::format("package '{}': model '{}' has no AOTI_DEVICE_KEY in its metadata; rebuild it with "
                            "aoti_compile_and_package",
                            opt.package.string(), model->name));
  }
  Profile profile = choose_profile(opt, device_key);
  ctx.tolerances = profile.tolerances;
  ctx.tolerances.set_all(user.tolerance_atol, user.tolerance_rtol);
  ctx.tolerances.merge(user.tolerance);
  ctx.tolerances.set_all(opt.atol, opt.rtol);
  ctx.timeout_s = opt.timeout_s.value_or(user.timeout_s.value_or(profile.timeout_s));
  int jobs = opt.jobs.value_or(user.jobs.value_or(1));
  if (!strategy_from_name(opt.strategy)) {
    throw Error(ErrorKind::usage, fmt::format("unknown --strategy '{}' (bisect, linear, all)", opt.strategy));
  }

  ScopedDir work(ctx.out_dir / fmt::format(".work-{}", ::getpid()));
  fs::path pkg_dir;
  try {
    pkg_dir = pkg->extract(work.path() / "package");
  } catch (const Error& e) {
    return fail(ctx, e.kind() == ErrorKind::cannot_test ? Verdict::could_not_test : Verdict::internal_error,
                e.what());
  }

  UserConfig planned = user;
  for (const auto& [k, v] : opt.env) {
    planned.env[k] = v;
  }
  ctx.reference = opt.reference;
  if (opt.against_eager && opt.reference.empty()) {
    std::string ep_model;
    auto ep = find_exported_program(opt, *pkg, *model, ep_model);
    if (!ep) {
      throw Error(ErrorKind::usage, "--against-eager needs the exported program: give --exported-program EP.pt2");
    }
    ctx.begin_phase("reference", "the exported program run eagerly on the inputs");
    EagerRequest req;
    req.exported_program = *ep;
    req.model_name = ep_model;
    req.inputs = opt.inputs;
    req.out = ctx.out_dir / "eager-reference.pt";
    req.cache_dir = opt.cache_dir;
    try {
      compute_eager_reference(req);
    } catch (const Error& e) {
      return fail(ctx, e.kind() == ErrorKind::internal ? Verdict::internal_error : Verdict::could_not_test, e.what());
    }
    ctx.reference = req.out;
    ctx.report.reference_path = display_path(req.out) + " (eager, from the exported program)";
  }
  std::vector<PlannedRun> plan = plan_matrix(profile, planned, opt.repeats);
  if (opt.no_matrix || opt.bisect_only) {
    plan.resize(1);
  }
  std::vector<ChildResult> results(plan.size());
  ctx.runs_planned = static_cast<int>(plan.size());

  ctx.begin_phase("baseline", "one run in a fresh child");
  if (!run_children(ctx, plan, 0, 1, 1, pkg_dir, results) && interrupt_requested()) {
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
    if (!run_children(ctx, plan, 1, plan.size(), jobs, pkg_dir, results) && interrupt_requested()) {
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
  summarize(ctx, plan, results);
  if (!ctx.report.failure) {
    return finish(ctx, Verdict::clean,
                  fmt::format("no failure in {} run{}", ctx.report.runs.size(), ctx.report.runs.size() == 1 ? "" : "s"));
  }
  const Failure f = *ctx.report.failure;
  std::string reproduced = fmt::format("{} reproduced in {} of {} runs", outcome_name(f.kind), f.reproduced, f.runs);
  if (opt.no_bisect) {
    return finish(ctx, Verdict::not_isolated, reproduced + "; kernel bisection was not asked for (--no-bisect)");
  }
  double baseline_seconds = results[0].status.seconds;
  BisectSetup setup{*pkg, *model, wrapper, work.path(), ctx.chosen_env, f.reproducing_variant, f.kind,
                    f.first_line, f.deterministic, baseline_seconds, inductor_configs,
                    ctx.report.environment.torch_version};
  BisectOutcome b = run_bisection(ctx, setup);
  if (b.verdict == Verdict::interrupted) {
    return finish(ctx, Verdict::interrupted, "interrupted during the kernel bisection; the report holds the runs so far");
  }
  return finish(ctx, b.verdict, b.reason.empty() ? reproduced : reproduced + "; " + b.reason);
}

}  // namespace aoti_bisect
