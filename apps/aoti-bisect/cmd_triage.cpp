// `aoti-bisect triage MANIFEST` and `aoti-bisect verify`: many runs, one
// summary (lib/triage).

#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>

#include "commands.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "triage/triage.hpp"

namespace aoti_bisect::cli {
namespace fs = std::filesystem;

namespace {

void print_progress(const std::string& line) { std::fprintf(stderr, "aoti-bisect: %s\n", redact_paths(line).c_str()); }

void print_outputs(const fs::path& dir) {
  std::printf("summary: %s, %s, %s\n", display_path(dir / "summary.md").c_str(),
              display_path(dir / "summary.json").c_str(), display_path(dir / "junit.xml").c_str());
}

std::string culprit_text(const std::optional<int>& call_index, const std::string& kernel) {
  if (kernel.empty()) {
    return "not isolated";
  }
  return call_index ? fmt::format("call site {} {}", *call_index, kernel) : kernel;
}

// Options triage and verify share.
struct Common {
  std::string out = "aoti-bisect-triage";
  int jobs = 1;
  std::string cache_dir;
  std::string baseline;
  double case_timeout = 0;
};

void add_common(CLI::App* cmd, Common& c) {
  cmd->add_option("--out", c.out, "folder for summary.json, summary.md, junit.xml and cases/<name>/")
      ->capture_default_str();
  cmd->add_option("--jobs", c.jobs, "cases run at once (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--cache-dir", c.cache_dir, "build cache every case shares (default ~/.cache/aoti-bisect/builds)");
  cmd->add_option("--case-timeout", c.case_timeout, "seconds one case may take in all (default: no limit)")
      ->check(CLI::PositiveNumber);
}

TriageOptions options_of(const Common& c, const std::string& command) {
  TriageOptions o;
  o.command = command;
  o.out_dir = c.out;
  o.jobs = c.jobs;
  o.cache_dir = c.cache_dir;
  o.case_timeout_s = c.case_timeout;
  if (!c.baseline.empty()) {
    o.baseline = load_baseline(c.baseline);
    o.baseline_source = display_path(c.baseline);
  }
  return o;
}

}  // namespace

Action add_triage_command(CLI::App& app) {
  struct Opts {
    Common common;
    std::string manifest;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "triage", "Run every case of a YAML manifest (one `run` each, in its own process), group the failures by "
                "signature, and write DIR/summary.json, summary.md and junit.xml");
  cmd->add_option("manifest", o->manifest, "YAML: cases: [{name, package, inputs, reference?, exported_program?, "
                                           "config?, against_eager?, model?}]")->required();
  add_common(cmd, o->common);
  cmd->add_option("--baseline", o->common.baseline,
                  "an earlier night's summary.json: marks each failure group new, known or fixed");
  return [o]() {
    Manifest m = load_manifest(o->manifest);
    TriageOptions opt = options_of(o->common, "triage");
    opt.cases = m.cases;
    opt.manifest = display_path(o->manifest);
    Summary s = run_triage(opt, print_progress);
    for (const auto& g : s.groups) {
      std::printf("%-9s %s: %zu case%s (%s), %s\n", g.status.empty() ? "failure" : g.status.c_str(),
                  g.signature.c_str(), g.cases.size(), g.cases.size() == 1 ? "" : "s",
                  join(g.cases, ", ").c_str(), culprit_text(g.culprit_call_index, g.culprit_kernel).c_str());
    }
    std::map<std::string, int> states;
    for (const auto& c : s.cases) {
      states[std::string(case_state_name(case_state(c)))]++;
    }
    std::string counts;
    for (const auto& [name, count] : states) {
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count, name);
    }
    std::printf("%zu case%s: %s%s\n", s.cases.size(), s.cases.size() == 1 ? "" : "s", counts.c_str(),
                s.interrupted ? " (interrupted: the summary is partial)" : "");
    print_outputs(opt.out_dir);
    return s.exit_code;
  };
}

Action add_verify_command(CLI::App& app) {
  struct Opts {
    Common common;
    std::string package, manifest, exported_program, config, model;
    std::vector<std::string> inputs, references, signatures;
    bool against_eager = false;
  };
  auto o = std::make_shared<Opts>();
  o->common.out = "aoti-bisect-verify";
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a fix: run the package on the failing inputs and on neighbouring input sets under the same "
                "flag matrix; say per input whether an earlier failure still reproduces (exit 0 only when none "
                "fails)");
  cmd->add_option("package", o->package, "the fixed .pt2 package (or give --manifest)");
  cmd->add_option("--inputs", o->inputs, "an inputs file (repeatable): the failing one and its neighbours")
      ->allow_extra_args(false);
  cmd->add_option("--reference", o->references,
                  "expected outputs: one for every --inputs, in the same order (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--against-eager", o->against_eager, "compare with the exported program run eagerly");
  cmd->add_option("--exported-program", o->exported_program, "the model's exported program");
  cmd->add_option("--config", o->config, "YAML config, as for run");
  cmd->add_option("--model", o->model, "model name inside the package");
  cmd->add_option("--manifest", o->manifest, "cases from a triage manifest instead of PACKAGE and --inputs");
  cmd->add_option("--signature", o->signatures, "an earlier failure's signature (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--baseline", o->common.baseline,
                  "the earlier failures: a triage summary.json or the failing run's report.json");
  add_common(cmd, o->common);
  return [o]() {
    if (o->manifest.empty() == o->package.empty()) {
      throw Error(ErrorKind::usage, "verify needs a PACKAGE with --inputs, or --manifest FILE (not both)");
    }
    TriageOptions opt = options_of(o->common, "verify");
    if (!o->manifest.empty()) {
      if (!o->inputs.empty() || !o->references.empty()) {
        throw Error(ErrorKind::usage, "--inputs and --reference go with a PACKAGE, not with --manifest");
      }
      Manifest m = load_manifest(o->manifest);
      opt.cases = m.cases;
      opt.manifest = display_path(o->manifest);
    } else {
      if (o->inputs.empty()) {
        throw Error(ErrorKind::usage, "verify PACKAGE needs --inputs (the failing inputs and their neighbours)");
      }
      if (!o->references.empty() && o->references.size() != o->inputs.size()) {
        throw Error(ErrorKind::usage,
                    fmt::format("give one --reference per --inputs, in the same order ({} inputs, {} references)",
                                o->inputs.size(), o->references.size()));
      }
      if (!o->references.empty() && o->against_eager) {
        throw Error(ErrorKind::usage, "give --reference or --against-eager, not both");
      }
      std::set<std::string> names;
      for (size_t i = 0; i < o->inputs.size(); ++i) {
        ManifestCase c;
        std::string stem = fs::path(o->inputs[i]).stem().string();
        c.name = valid_case_name(stem) ? stem : fmt::format("inputs-{}", i + 1);
        for (int k = 2; !names.insert(c.name).second; ++k) {
          c.name = fmt::format("{}-{}", valid_case_name(stem) ? stem : "inputs", k);
        }
        c.package = o->package;
        c.inputs = o->inputs[i];
        c.reference = o->references.empty() ? fs::path() : fs::path(o->references[i]);
        c.exported_program = o->exported_program;
        c.config = o->config;
        c.model = o->model;
        c.against_eager = o->against_eager;
        opt.cases.push_back(std::move(c));
      }
    }
    std::vector<EarlierFailure> earlier = opt.baseline.value_or(std::vector<EarlierFailure>{});
    for (const auto& sig : o->signatures) {
      earlier.push_back(EarlierFailure{sig, "", std::nullopt, "", {}, ""});
    }
    if (!o->signatures.empty()) {
      opt.baseline = earlier;
      opt.baseline_source = opt.baseline_source.empty() ? "--signature" : opt.baseline_source + ", --signature";
    }
    std::map<std::string, std::string> inputs_of;
    for (const auto& c : opt.cases) {
      inputs_of[c.name] = display_path(c.inputs);
    }
    Summary s = run_triage(opt, print_progress, [&](Summary& sum) { judge_verify(sum, earlier); });
    for (const auto& c : s.cases) {
      std::string detail = c.signature.empty() ? (c.error.empty() ? c.verdict : c.verdict + ": " + c.error)
                                               : c.signature + ", " + culprit_text(c.culprit_call_index, c.culprit_kernel);
      std::printf("%-15s %s (%s)\n", c.verify.c_str(), redact_paths(inputs_of[c.name]).c_str(), detail.c_str());
    }
    print_outputs(opt.out_dir);
    return s.exit_code;
  };
}

}  // namespace aoti_bisect::cli
