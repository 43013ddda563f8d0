#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "bisect/bisect.hpp"
#include "build/build.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "job/job.hpp"
#include "progress.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect::cli {

bool stdout_color() { return ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr; }

namespace {

struct Opts {
  RunOptions run;
  std::string package, inputs, reference, out = "aoti-bisect-out", config, exported_program, cache_dir;
  std::vector<std::string> inductor_configs, env;
  int repeats = 0, jobs = 0, bisect_repeats = 0;
  double timeout = 0, atol = -1, rtol = -1, build_timeout = 1800;
  std::string exit_codes = "default";
};

std::string strategy_names() {
  std::string s;
  for (Strategy st : all_strategies()) {
    s += (s.empty() ? "" : ", ") + std::string(strategy_name(st));
  }
  return s;
}

// Options `run` and `bisect` share.
void add_common_options(CLI::App* cmd, Opts& o) {
  cmd->add_option("package", o.package, "the .pt2 package (aoti_compile_and_package)")->required();
  cmd->add_option("--inputs", o.inputs, "inputs saved with torch.save (a tuple of tensors in input order)")->required();
  cmd->add_option("--reference", o.reference, "expected outputs saved with torch.save; enables the mismatch check");
  cmd->add_flag("--against-eager", o.run.against_eager,
                "without --reference: compare with the exported program run eagerly on the same inputs");
  cmd->add_option("--model", o.run.model, "model name inside the package (default: the only one)");
  cmd->add_option("--out", o.out, "directory for report.json, report.md and the runs' files")->capture_default_str();
  cmd->add_option("--config", o.config, "YAML config: variants, environment, repeats, timeout, tolerance, inductor_configs");
  cmd->add_option("--backend", o.run.backend, "flag-matrix profile (default: from the package's device key)")
      ->check(CLI::IsMember({"cpu", "cuda", "rocm"}));
  cmd->add_option("--timeout", o.timeout, "seconds before a child run is killed (default: from the profile, 300)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--atol", o.atol, "absolute tolerance for every dtype (default: per dtype, from the profile)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--rtol", o.rtol, "relative tolerance (of the tensor's largest |reference|) for every dtype")->check(CLI::NonNegativeNumber);
  cmd->add_option("--exported-program", o.exported_program,
                  "the model's exported program (torch.export.save), for the instrumented build");
  cmd->add_option("--inductor-config", o.inductor_configs,
                  "an Inductor config the package was built with, key=value (repeatable), for the instrumented build")
      ->allow_extra_args(false);
  cmd->add_option("--cache-dir", o.cache_dir, "where instrumented builds are cached (default ~/.cache/aoti-bisect/builds)");
  cmd->add_option("--build-timeout", o.build_timeout, "seconds the instrumented build may take")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--strategy", o.run.strategy, "search strategy: " + strategy_names())
      ->check(CLI::IsMember({"bisect", "linear", "all"}))->capture_default_str();
  cmd->add_option("--bisect-repeats", o.bisect_repeats,
                  "runs per search step (default 1 when the failure is deterministic, else 3)")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--rebuild-per-step", o.run.rebuild_per_step,
                "guide mode: rebuild with the level-2 printer, filtered to the tested kernels, at every search step "
                "(slow; for NaN/Inf and faults where run-time probes cannot work)");
  cmd->add_flag("--junit", o.run.junit, "also write junit.xml");
  cmd->add_option("--exit-codes", o.exit_codes, "exit-code convention: default, or git-bisect (0 good, 1 bad, 125 skip)")
      ->check(CLI::IsMember({"default", "git-bisect"}));
}

int run_with(Opts& o, const std::vector<std::string>& argv) {
  RunOptions& r = o.run;
  r.package = o.package;
  r.inputs = o.inputs;
  r.reference = o.reference;
  r.out_dir = o.out;
  r.config = o.config;
  r.exported_program = o.exported_program;
  r.cache_dir = o.cache_dir;
  r.build_timeout_s = o.build_timeout;
  for (const auto& kv : o.inductor_configs) {
    add_inductor_config(r.inductor_configs, kv);
  }
  for (const auto& kv : o.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::usage, "--env expects NAME=VALUE, got '" + kv + "'");
    }
    r.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (o.repeats > 0) {
    r.repeats = o.repeats;
  }
  if (o.jobs > 0) {
    r.jobs = o.jobs;
  }
  if (o.bisect_repeats > 0) {
    r.bisect_repeats = o.bisect_repeats;
  }
  if (o.timeout > 0) {
    r.timeout_s = o.timeout;
  }
  if (o.atol >= 0) {
    r.atol = o.atol;
  }
  if (o.rtol >= 0) {
    r.rtol = o.rtol;
  }
  r.command_line = argv;
  if (!r.command_line.empty()) {
    r.command_line[0] = "aoti-bisect";
  }
  StderrProgress progress;
  JobResult result = run_job(r, progress);
  progress.finish();
  std::string text = report_to_console(result.report, stdout_color());
  text += "reports: " + display_path(r.out_dir / "report.md") + ", " + display_path(r.out_dir / "report.json") +
          (r.junit ? ", " + display_path(r.out_dir / "junit.xml") : "") + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!result.report.error.empty()) {
    std::fprintf(stderr, "aoti-bisect: error: %s\n", result.report.error.c_str());
  }
  return static_cast<int>(result.exit);
}

}  // namespace

Action add_run_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the package in fresh child processes under the flag matrix; when the failure reproduces, bisect "
             "the kernel call sites and name the first bad one");
  add_common_options(cmd, *o);
  cmd->add_option("--repeats", o->repeats, "runs per matrix variant (default: from the profile, 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--jobs", o->jobs, "matrix runs in parallel (default 1)")->check(CLI::Range(1, 256));
  cmd->add_flag("--no-matrix", o->run.no_matrix, "run the baseline only, no flag matrix");
  cmd->add_flag("--no-bisect", o->run.no_bisect, "stop after the flag matrix");
  return [o, argv]() { return run_with(*o, argv); };
}

Action add_bisect_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "bisect", "Only the kernel bisection: one baseline run under the given flags (no matrix), then the search");
  add_common_options(cmd, *o);
  cmd->add_option("--env", o->env, "an environment variable for every run, NAME=VALUE (repeatable), e.g. "
                                   "CUDA_LAUNCH_BLOCKING=1")
      ->allow_extra_args(false);
  o->run.bisect_only = true;
  return [o, argv]() { return run_with(*o, argv); };
}

}  // namespace aoti_bisect::cli
