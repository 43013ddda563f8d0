#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "commands.hpp"
#include "common/files.hpp"
#include "job/job.hpp"
#include "progress.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect::cli {

bool stdout_color() { return ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr; }

Action add_run_command(CLI::App& app, const std::vector<std::string>& argv, const bool& git_bisect) {
  struct Opts {
    RunOptions run;
    std::string package, inputs, reference, out = "aoti-bisect-out", config;
    int repeats = 0, jobs = 0;
    double timeout = 0, atol = -1, rtol = -1;
    std::string exit_codes = "default";
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the package on saved inputs in fresh child processes under the flag matrix and report what fails");
  cmd->add_option("package", o->package, "the .pt2 package (aoti_compile_and_package)")->required();
  cmd->add_option("--inputs", o->inputs, "inputs saved with torch.save (a tuple of tensors in input order)")->required();
  cmd->add_option("--reference", o->reference, "expected outputs saved with torch.save; enables the mismatch check");
  cmd->add_option("--model", o->run.model, "model name inside the package (default: the only one)");
  cmd->add_option("--out", o->out, "directory for report.json, report.md and the runs' files")
      ->capture_default_str();
  cmd->add_option("--config", o->config, "YAML config: extra variants, environment, repeats, timeout, tolerance");
  cmd->add_option("--backend", o->run.backend, "flag-matrix profile (default: from the package's device key)")
      ->check(CLI::IsMember({"cpu", "cuda", "rocm"}));
  cmd->add_option("--repeats", o->repeats, "runs per matrix variant (default: from the profile, 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--timeout", o->timeout, "seconds before a child run is killed (default: from the profile, 300)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--jobs", o->jobs, "matrix runs in parallel (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--atol", o->atol, "absolute tolerance against --reference (default 1e-5)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--rtol", o->rtol, "relative tolerance against --reference (default 1.3e-6)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-matrix", o->run.no_matrix, "run the baseline only");
  cmd->add_flag("--junit", o->run.junit, "also write junit.xml");
  cmd->add_option("--exit-codes", o->exit_codes, "exit-code convention: default, or git-bisect (0 good, 1 bad, 125 skip)")
      ->check(CLI::IsMember({"default", "git-bisect"}));
  return [o, argv, &git_bisect]() {
    (void)git_bisect;
    RunOptions& r = o->run;
    r.package = o->package;
    r.inputs = o->inputs;
    r.reference = o->reference;
    r.out_dir = o->out;
    r.config = o->config;
    if (o->repeats > 0) {
      r.repeats = o->repeats;
    }
    if (o->jobs > 0) {
      r.jobs = o->jobs;
    }
    if (o->timeout > 0) {
      r.timeout_s = o->timeout;
    }
    if (o->atol >= 0) {
      r.atol = o->atol;
    }
    if (o->rtol >= 0) {
      r.rtol = o->rtol;
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
  };
}

}  // namespace aoti_bisect::cli
