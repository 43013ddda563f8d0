#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "bisect/bisect.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "config/config.hpp"
#include "inductor/build.hpp"
#include "job/job.hpp"
#include "report/sinks.hpp"
#include "stderr_progress.hpp"

namespace aoti_bisect::cli {

bool stdout_color() {
  return ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
}

namespace {

struct Opts {
  RunOptions run;
  std::vector<std::string> inductor_configs, env;
  std::string exit_codes = "default";
};

// The strategies' table: the source of --strategy's help and validation.
std::map<std::string, Strategy> strategy_names() {
  std::map<std::string, Strategy> names;
  for (Strategy st : all_strategies()) {
    names[std::string(strategy_name(st))] = st;
  }
  return names;
}

// The probe sources' table: the source of --source's help and validation.
std::map<std::string, ProbeSource> source_names() {
  std::map<std::string, ProbeSource> names;
  for (const auto& info : probe_source_table()) {
    names[std::string(info.name)] = info.source;
  }
  return names;
}

std::string source_help() {
  std::string s = "where the probes come from:";
  for (const auto& info : probe_source_table()) {
    s += fmt::format(" {} ({});", info.name, info.help);
  }
  s.pop_back();
  for (const auto& info : probe_source_table()) {
    if (info.source == RunOptions{}.source) {
      s += fmt::format("; default {}", info.name);
    }
  }
  return s;
}

std::string strategy_help() {
  std::string s = "search strategy:";
  for (Strategy st : all_strategies()) {
    s += fmt::format(" {} ({});", strategy_name(st), aoti_bisect::strategy_help(st));
  }
  s.pop_back();
  return s + "; default " + std::string(strategy_name(RunOptions{}.strategy));
}

// One of a table's names, any case; anything else (a number CLI11 would
// take for the enum's value too) is refused with the names listed.
template <typename T>
CLI::Validator one_of_names(const std::map<std::string, T>& names, const std::string& what) {
  std::string list;
  for (const auto& [name, value] : names) {
    list += (list.empty() ? "" : ", ") + name;
  }
  return CLI::Validator(
      [names, what, list](std::string& text) -> std::string {
        std::string lower = text;
        for (auto& c : lower) {
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        auto it = names.find(lower);
        if (it == names.end()) {
          return "'" + text + "' is not a " + what + "; one of: " + list;
        }
        text = std::to_string(static_cast<int>(it->second));
        return "";
      },
      "NAME");
}

std::vector<std::string> backend_names() {
  return builtin_backends();
}

// A finite number, > 0 (`positive`) or >= 0; "nan", "inf" and 0 for a
// timeout are refused with the value named, never replaced by a default.
CLI::Validator finite_number(bool positive) {
  return CLI::Validator(
      [positive](std::string& text) -> std::string {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) {
            return "'" + text + "' is not a number";
          }
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        if (!std::isfinite(v)) {
          return "'" + text + "' is not a finite number";
        }
        if (positive ? v <= 0 : v < 0) {
          return fmt::format("must be {}, got {}", positive ? "greater than 0" : "0 or more", text);
        }
        return "";
      },
      positive ? "POSITIVE" : "NON-NEGATIVE");
}

// Options `run` and `bisect` share; CLI11 binds straight into RunOptions.
void add_common_options(CLI::App* cmd, Opts& o) {
  RunOptions& r = o.run;
  cmd->add_option("package", r.package, "the .pt2 package (aoti_compile_and_package)")->required();
  cmd->add_flag("--no-judge", r.no_judge,
                "with an exported program, do not judge whose bug the culprit is (eager and float64 runs) nor write "
                "repro/upstream/ (the culprit's graph nodes compiled alone)");
  cmd->add_option("--inputs", r.inputs_given,
                  "inputs saved with torch.save (zip or legacy format) or safetensors: a tuple in input order, a "
                  "dict of keyword arguments (a tokenizer's BatchEncoding too), or (args, kwargs); bound by the "
                  "package's call spec. Repeatable, and a folder (its .pt files) or a glob: the batches of a loop, "
                  "run in order in one process; the first that fails is searched. Default: the package's own "
                  "sample inputs (data/sample_inputs/), where it has them")
      ->allow_extra_args(false);
  cmd->add_option("--calls", r.calls, "run the one --inputs N times in one process; report the failing call")
      ->check(CLI::Range(1, 1000000));
  cmd->add_flag("--all-batches", r.all_batches,
                "with several batches: go on past the first failing batch and group every failing batch by "
                "signature (the first is still the one searched)");
  cmd->add_flag("--contiguous-inputs", r.contiguous_inputs,
                "run the package on copies of inputs whose strides it was not compiled for (default: refuse them, "
                "exit 4); the report says the inputs were changed");
  cmd->add_option("--load-library", r.load_libraries,
                  "a shared library that registers the model's custom operators (TORCH_LIBRARY), loaded before "
                  "the package in every run and in the eager run (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--python", r.python,
                  "a Python whose torch runs the package (and builds and runs its exported program); default: "
                  "$AOTI_BISECT_PYTHON, else the package's own torch where it is still installed, else python3's. "
                  "A runner against a torch other than this build's is built once and cached");
  cmd->add_option("--reference", r.reference, "expected outputs saved with torch.save; enables the mismatch check");
  CLI::Option* against_eager =
      cmd->add_flag("--against-eager", r.against_eager,
                    "without --reference: compare with the exported program run eagerly on the same inputs");
  cmd->add_option("--eager-device", r.eager_device,
                  "where --against-eager runs eager: cpu moves the exported program and the inputs to the CPU (for "
                  "a CUDA package whose device is unusable or suspect; a CPU match is a hint, not a CUDA "
                  "validation); default: where the program is")
      ->check(CLI::IsMember({"cpu"}))
      ->needs(against_eager);
  cmd->add_option("--model", r.model, "model name inside the package (default: the only one)");
  cmd->add_option("--out", r.out_dir, "directory for report.json, report.md and the runs' files")
      ->capture_default_str();
  cmd->add_option("--config", r.config,
                  "YAML config: variants, environment, repeats, timeout, tolerance, inductor_configs");
  cmd->add_option("--backend", r.backend, "flag-matrix profile (default: from the package's device key)")
      ->check(CLI::IsMember(backend_names()));
  cmd->add_option("--timeout", r.timeout_s,
                  fmt::format("seconds each call of the model may take, after the load; the run stops there "
                              "(default: from the profile, {:g})",
                              builtin_profile("cpu").timeout_s))
      ->check(finite_number(true));
  cmd->add_option("--memory-limit", r.memory_limit_bytes,
                  "address space a child run may use, e.g. 8G, 512M, none (default: the machine's RAM for CPU "
                  "packages, none for GPU packages)")
      ->transform(CLI::Validator(
          [](std::string& text) -> std::string {
            auto bytes = parse_size(text);
            if (!bytes) {
              return "'" + text + "' is not a size (say 8G, 512M or none)";
            }
            text = std::to_string(*bytes);
            return "";
          },
          "SIZE"));
  cmd->add_option("--atol", r.atol, "absolute tolerance for every dtype (default: per dtype, from the profile)")
      ->check(finite_number(false));
  cmd->add_option("--rtol", r.rtol, "relative tolerance (of the tensor's largest |reference|) for every dtype")
      ->check(finite_number(false));
  cmd->add_option("--exported-program", r.exported_program,
                  "the model's exported program (torch.export.save), for the instrumented build");
  cmd->add_option("--inductor-config", o.inductor_configs,
                  "an Inductor config the package was built with, key=value (repeatable), for the instrumented build")
      ->allow_extra_args(false);
  cmd->add_option("--cache-dir", r.cache_dir,
                  "where instrumented builds are cached (default ~/.cache/aoti-bisect/builds)");
  cmd->add_option("--build-timeout", r.build_timeout_s, "seconds the instrumented build may take")
      ->check(finite_number(true))
      ->capture_default_str();
  cmd->add_option("--strategy", r.strategy, strategy_help())->transform(one_of_names(strategy_names(), "strategy"));
  cmd->add_option("--bisect-repeats", r.bisect_repeats,
                  "runs per search step (default 1 when the failure is deterministic, else 3)")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--rebuild-per-step", r.rebuild_per_step,
                "guide mode: a build printing the tested call sites' tensors (level 2) at every search step: the "
                "package's wrapper with print calls, recompiled, else the exported program rebuilt by Inductor "
                "(slow; for NaN/Inf and faults where run-time probes cannot work)");
  cmd->add_option("--source", r.source, source_help())->transform(one_of_names(source_names(), "probe source"));
  cmd->add_flag("--junit", r.junit, "also write junit.xml");
  cmd->add_option("--exit-codes", o.exit_codes,
                  "exit-code convention: default (0 clean, 1 isolated, 2 usage, 3 not isolated, 4 could not test, "
                  "5 internal, 130 interrupted), or git-bisect (0 good, 1 bad: isolated or not, 125 skip: could not "
                  "test, 128 usage and internal errors: aborts the bisection, 130 interrupted)")
      ->check(CLI::IsMember({"default", "git-bisect"}));
}

int run_with(Opts& o, const std::vector<std::string>& argv) {
  RunOptions& r = o.run;
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
      "run",
      "Run the package in fresh child processes under the flag matrix; when the failure reproduces, bisect "
      "the kernel call sites and name the first bad one");
  add_common_options(cmd, *o);
  cmd->add_option("--repeats", o->run.repeats,
                  fmt::format("runs of every matrix variant, over each one's own count (default: from the profile: "
                              "{} for the repeat variant, 1 for most others); one_thread still runs once after a "
                              "steady failure",
                              builtin_profile("cpu").repeats))
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--jobs", o->run.jobs, "matrix runs in parallel (default 1)")->check(CLI::Range(1, 256));
  cmd->add_flag("--no-matrix", o->run.no_matrix,
                "no flag matrix: the baseline, then the search in its environment (with --no-bisect: the baseline "
                "alone)");
  cmd->add_flag("--no-bisect", o->run.no_bisect, "stop after the flag matrix");
  cmd->add_flag("--no-shrink", o->run.no_shrink,
                "keep the failing batch whole: no runs of its samples to find the smallest set that still fails");
  cmd->add_flag("--check-masked", o->run.check_masked,
                "after a clean run, one more run probing every call site: report call sites that make NaN/Inf a "
                "later one cleans (report.json masked[]); the verdict stays clean");
  cmd->add_flag("--matrix-first", o->run.matrix_first,
                "run the whole flag matrix before the kernel search (default: a NaN/Inf or wrong-values failure is "
                "searched right after the baseline, and the matrix runs after the answer)");
  return [o, argv]() { return run_with(*o, argv); };
}

Action add_bisect_command(CLI::App& app, const std::vector<std::string>& argv) {
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "bisect", "Only the kernel bisection: one baseline run under the given flags (no matrix), then the search");
  add_common_options(cmd, *o);
  cmd->add_option("--env", o->env,
                  "an environment variable for every run, NAME=VALUE (repeatable), e.g. "
                  "CUDA_LAUNCH_BLOCKING=1")
      ->allow_extra_args(false);
  o->run.bisect_only = true;
  return [o, argv]() { return run_with(*o, argv); };
}

}  // namespace aoti_bisect::cli
