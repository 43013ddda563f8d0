// `aoti-bisect triage MANIFEST` and `aoti-bisect verify`: many runs, one
// summary (lib/triage).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "commands.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "triage/merge.hpp"
#include "triage/shard.hpp"
#include "triage/triage.hpp"
#include "verify/verify.hpp"

namespace aoti_bisect::cli {
namespace fs = std::filesystem;

namespace {

void print_progress(const std::string& line) {
  std::fprintf(stderr, "aoti-bisect: %s\n", redact_paths(line).c_str());
}

void print_outputs(const fs::path& dir) {
  std::printf("summary: %s, %s, %s\n", display_path(dir / "summary.md").c_str(),
              display_path(dir / "summary.json").c_str(), display_path(dir / "junit.xml").c_str());
}

// "call site 3 cpp_fused_div_1" (triage/summary.hpp), or "not isolated".
std::string culprit_or_none(const std::optional<int>& call_index, const std::string& kernel) {
  std::string text = culprit_text(call_index, kernel);
  return text.empty() ? "not isolated" : text;
}

// Options triage and verify share.
struct Common {
  std::string out = "aoti-bisect-triage";
  int jobs = 1;
  std::string cache_dir;
  std::string baseline;
  double case_timeout = 0;
  std::string python;
};

void add_common(CLI::App* cmd, Common& c) {
  cmd->add_option("--out", c.out, "folder for summary.json, summary.md, junit.xml and cases/<name>/")
      ->capture_default_str();
  cmd->add_option("--jobs", c.jobs, "cases run at once (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--cache-dir", c.cache_dir, "build cache every case shares (default ~/.cache/aoti-bisect/builds)");
  cmd->add_option("--case-timeout", c.case_timeout, "seconds one case may take in all (default: no limit)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--python", c.python,
                  "a Python whose torch runs every case (default: each package's own torch where it is still "
                  "installed, else python3's); a runner against it is built once");
}

TriageOptions options_of(const Common& c, const std::string& command) {
  TriageOptions o;
  o.command = command;
  o.out_dir = c.out;
  o.jobs = c.jobs;
  o.cache_dir = c.cache_dir;
  o.case_timeout_s = c.case_timeout;
  o.python = c.python;  // every case's `aoti-bisect run --python`
  if (!c.baseline.empty()) {
    o.baseline = load_baseline(c.baseline);
    o.baseline_source = display_path(c.baseline);
  }
  return o;
}

// A manifest case's `options` must parse as options of `aoti-bisect run`
// (the run command's own table, with a stand-in package and inputs).
std::optional<std::string> check_run_options(const std::vector<std::string>& options) {
  CLI::App app;
  add_run_command(app, {});
  std::vector<std::string> args = {"run", "PACKAGE", "--inputs", "INPUTS"};
  args.insert(args.end(), options.begin(), options.end());
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector last argument first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return fmt::format("not options of `aoti-bisect run`: {}", msg);
  }
  return std::nullopt;
}

// Prints each failure group and the case counts of a (merged) summary.
void print_groups_and_counts(const Summary& s) {
  for (const auto& g : s.groups) {
    std::printf("%-9s %s: %zu case%s (%s), %s\n", g.status.empty() ? "failure" : g.status.c_str(), g.signature.c_str(),
                g.cases.size(), g.cases.size() == 1 ? "" : "s", join(g.cases, ", ").c_str(),
                culprit_or_none(g.culprit_call_index, g.culprit_kernel).c_str());
  }
  std::map<std::string, int> states;
  for (const auto& c : s.cases) {
    states[std::string(case_state_name(case_state(c)))]++;
  }
  std::string counts;
  for (const auto& [name, count] : states) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count, name);
  }
  std::printf("%zu case%s: %s%s\n", s.cases.size(), s.cases.size() == 1 ? "" : "s",
              counts.empty() ? "none in this shard" : counts.c_str(),
              s.interrupted ? " (interrupted: the summary is partial)" : "");
}

// A triage summary.json (its groups' signatures), not a run's report.json.
bool is_triage_summary(const std::string& path) {
  if (path.empty()) {
    return false;
  }
  try {
    nlohmann::json doc = nlohmann::json::parse(read_file(path, "--baseline"));
    return doc.is_object() && doc.contains("groups") && doc.contains("cases");
  } catch (const std::exception&) {
    return false;  // verify's own reading says what is wrong with it
  }
}

// `verify PACKAGE --baseline OUT/report.json` (or --inputs): the cases and
// their neighbours in this process (verify/verify.hpp).
template <class Opts>
int verify_neighbours(const Opts& o) {
  if (!o.signatures.empty() && o.common.baseline.empty() && o.inputs.empty()) {
    throw Error(ErrorKind::usage, "--signature needs the failing inputs: give --baseline OUT/report.json or --inputs");
  }
  VerifyOptions v;
  v.fixed = o.package;
  v.baseline = o.common.baseline;
  v.inputs = o.inputs;
  v.out_dir = o.common.out;
  v.run.model = o.model;
  v.run.config = o.config;
  v.run.exported_program = o.exported_program;
  v.run.against_eager = o.against_eager;
  if (!o.references.empty()) {
    if (o.against_eager) {
      throw Error(ErrorKind::usage, "give --reference or --against-eager, not both");
    }
    v.run.reference = o.references.front();
  }
  v.run.load_libraries.assign(o.libraries.begin(), o.libraries.end());
  v.run.cache_dir = o.common.cache_dir;
  v.run.python = o.common.python;
  v.run.atol = o.atol;
  v.run.contiguous_inputs = o.contiguous_inputs;
  v.run.rtol = o.rtol;
  v.run.junit = false;
  if (o.common.case_timeout > 0) {
    v.run.timeout_s = o.common.case_timeout;
  }
  v.signatures = o.signatures;
  VerifySummary s = run_verify(v, print_progress);
  for (const auto& c : s.cases) {
    std::printf("%-15s %-16s %s\n", c.status.c_str(), c.name.c_str(),
                redact_paths(c.why.empty() ? c.what : c.why).c_str());
  }
  const std::string first = first_failing_sentence(s);
  if (!first.empty()) {
    std::printf("first failing case: %s\n", redact_paths(first).c_str());
  }
  for (const auto& n : s.notes) {
    std::printf("note: %s\n", redact_paths(n).c_str());
  }
  print_outputs(o.common.out);
  if (!s.cases.empty() && s.cases[0].status == "could_not_test") {
    std::fprintf(stderr, "aoti-bisect: error: %s\n", redact_paths(s.cases[0].error).c_str());
  }
  return s.exit_code;
}

}  // namespace

Action add_triage_command(CLI::App& app) {
  struct Opts {
    Common common;
    std::string manifest;
    std::string shard;
    bool shard_from_env = false;
    std::optional<int> shard_count;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "triage",
      "Run every case of a YAML manifest (one `run` each, in its own process), group the failures by "
      "signature, and write DIR/summary.json, summary.md and junit.xml");
  cmd->add_option("manifest", o->manifest,
                  "YAML: cases: [{name, package, inputs, reference?, exported_program?, "
                  "config?, against_eager?, model?}]")
      ->required();
  add_common(cmd, o->common);
  cmd->add_option("--baseline", o->common.baseline,
                  "an earlier night's summary.json: marks each failure group new, known or fixed");
  cmd->add_option(
      "--shard", o->shard,
      "run only shard K of N (0-based, e.g. 2/16): the cases whose name hash mod N is K (docs/triage.md: Shards); "
      "merge the shards' folders with triage-merge");
  cmd->add_flag("--shard-from-env", o->shard_from_env,
                "take K and N from the scheduler: SLURM_ARRAY_TASK_ID/_COUNT (Slurm), JOB_COMPLETION_INDEX with "
                "--shard-count (Kubernetes Indexed Job), else AOTI_BISECT_SHARD_INDEX/_COUNT (e.g. a CI matrix)");
  cmd->add_option("--shard-count", o->shard_count, "N for --shard-from-env where the scheduler does not say it")
      ->check(CLI::Range(1, 1000000));
  return [o]() {
    if (!o->shard.empty() && o->shard_from_env) {
      throw Error(ErrorKind::usage, "give --shard K/N or --shard-from-env, not both");
    }
    if (o->shard_count && !o->shard_from_env) {
      throw Error(ErrorKind::usage, "--shard-count goes with --shard-from-env");
    }
    std::optional<Shard> shard;
    if (!o->shard.empty()) {
      shard = parse_shard(o->shard);
    } else if (o->shard_from_env) {
      shard = shard_from_env(process_env(), o->shard_count);
    }
    Manifest m = load_manifest(o->manifest, check_run_options);
    TriageOptions opt = options_of(o->common, "triage");
    opt.manifest = display_path(o->manifest);
    opt.manifest_sha256 = sha256_file(o->manifest);
    opt.manifest_cases = static_cast<int>(m.cases.size());
    opt.cases = shard ? cases_of_shard(m.cases, *shard) : m.cases;
    if (shard) {
      opt.shard = shard->text();
      print_progress(
          fmt::format("shard {}: {} of the manifest's {} cases", opt.shard, opt.cases.size(), m.cases.size()));
    }
    Summary s = run_triage(opt, print_progress);
    print_groups_and_counts(s);
    print_outputs(opt.out_dir);
    return s.exit_code;
  };
}

Action add_triage_merge_command(CLI::App& app) {
  struct Opts {
    std::vector<std::string> dirs;
    std::string out = "aoti-bisect-triage";
    std::string baseline;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("triage-merge",
                         "Merge the summaries of the shards of one manifest (each `triage --shard K/N` folder) into "
                         "one summary.json, summary.md and junit.xml; the exit code follows triage's");
  cmd->add_option("dirs", o->dirs, "each shard's --out folder")->required();
  cmd->add_option("--out", o->out, "folder for the merged summary.json, summary.md and junit.xml")
      ->capture_default_str();
  cmd->add_option("--baseline", o->baseline,
                  "an earlier night's summary.json: marks each failure group new, known or fixed");
  return [o]() {
    std::vector<ShardInput> shards;
    for (const auto& d : o->dirs) {
      shards.push_back(read_shard(d));
    }
    std::optional<std::vector<EarlierFailure>> baseline;
    if (!o->baseline.empty()) {
      baseline = load_baseline(o->baseline);
    }
    std::error_code ec;
    fs::create_directories(o->out, ec);
    if (ec) {
      throw Error(ErrorKind::usage, fmt::format("--out '{}' cannot be created: {}", o->out, ec.message()));
    }
    Summary s = merge_shards(shards, o->out, baseline, display_path(o->baseline));
    write_summaries(s, o->out);
    print_groups_and_counts(s);
    print_outputs(o->out);
    return s.exit_code;
  };
}

// `verify PACKAGE --no-neighbours --inputs ...`: a case per inputs file,
// named by its stem (made unique), with its own --reference.
template <class Opts>
std::vector<ManifestCase> cases_of_inputs(const Opts& o) {
  std::vector<ManifestCase> cases;
  if (o.inputs.empty()) {
    throw Error(ErrorKind::usage, "verify PACKAGE --no-neighbours needs --inputs (the failing inputs)");
  }
  if (!o.references.empty() && o.references.size() != o.inputs.size()) {
    throw Error(ErrorKind::usage,
                fmt::format("give one --reference per --inputs, in the same order ({} inputs, {} references)",
                            o.inputs.size(), o.references.size()));
  }
  if (!o.references.empty() && o.against_eager) {
    throw Error(ErrorKind::usage, "give --reference or --against-eager, not both");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    ManifestCase c;
    std::string stem = fs::path(o.inputs[i]).stem().string();
    c.name = valid_case_name(stem) ? stem : fmt::format("inputs-{}", i + 1);
    for (int k = 2; !names.insert(c.name).second; ++k) {
      c.name = fmt::format("{}-{}", valid_case_name(stem) ? stem : "inputs", k);
    }
    c.index = static_cast<int>(i);
    c.package = o.package;
    c.inputs = {o.inputs[i]};  // one value: a file, or a folder or glob of batches
    c.reference = o.references.empty() ? fs::path() : fs::path(o.references[i]);
    c.exported_program = o.exported_program;
    c.config = o.config;
    c.model = o.model;
    c.against_eager = o.against_eager;
    c.load_libraries.assign(o.libraries.begin(), o.libraries.end());
    cases.push_back(std::move(c));
  }
  return cases;
}

Action add_verify_command(CLI::App& app) {
  struct Opts {
    Common common;
    std::string package, manifest, exported_program, config, model;
    std::vector<std::string> inputs, references, signatures, libraries;
    bool against_eager = false;
    bool no_neighbours = false;
    bool contiguous_inputs = false;
    std::optional<double> atol, rtol;
  };
  auto o = std::make_shared<Opts>();
  o->common.out = "aoti-bisect-verify";
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check a fix: run the fixed package on the failing run's inputs (--baseline OUT/report.json) and on "
      "neighbours made from them (the batch of one, one sample fewer, the compiled minimum and maximum of every "
      "dynamic size, the boundary values of checked indices), beside the failing package; say per case whether "
      "the failure still reproduces, is masked, or the outputs' count changed (exit 0 only when every case is "
      "clean)");
  cmd->add_option("package", o->package, "the fixed .pt2 package (or give --manifest)");
  cmd->add_option("--inputs", o->inputs,
                  "an inputs file (repeatable): instead of the baseline's; the neighbours are made from the first")
      ->allow_extra_args(false);
  cmd->add_flag("--no-neighbours", o->no_neighbours,
                "only the --inputs as given, each one `aoti-bisect run` under the flag matrix (no neighbours, no "
                "comparison with the failing package)");
  cmd->add_flag("--contiguous-inputs", o->contiguous_inputs,
                "inputs in another layout than the package's are copied into its layout, as for run (default: as "
                "the failing run did)");
  cmd->add_option("--atol", o->atol, "absolute tolerance when the outputs are compared with the failing package's");
  cmd->add_option("--rtol", o->rtol, "relative tolerance when the outputs are compared with the failing package's");
  cmd->add_option("--reference", o->references,
                  "expected outputs of the failing inputs (default: the baseline run's), cut with the batch for the "
                  "neighbours where every output has it as dimension 0; with --no-neighbours one for every --inputs, "
                  "in the same order (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--against-eager", o->against_eager, "compare with the exported program run eagerly");
  cmd->add_option("--exported-program", o->exported_program, "the model's exported program");
  cmd->add_option("--config", o->config, "YAML config, as for run");
  cmd->add_option("--model", o->model, "model name inside the package");
  cmd->add_option("--load-library", o->libraries,
                  "a shared library that registers the model's custom operators, as for run (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--manifest", o->manifest, "cases from a triage manifest instead of PACKAGE and --inputs");
  cmd->add_option("--signature", o->signatures, "an earlier failure's signature (repeatable)")->allow_extra_args(false);
  cmd->add_option("--baseline", o->common.baseline,
                  "the earlier failures: a triage summary.json or the failing run's report.json");
  add_common(cmd, o->common);
  return [o]() {
    if (o->manifest.empty() == o->package.empty()) {
      throw Error(ErrorKind::usage,
                  "verify needs a PACKAGE with --baseline OUT/report.json or --inputs, or --manifest FILE (not both)");
    }
    // One --reference goes with the original inputs, and is cut with the
    // batch for the neighbours; one per --inputs is the earlier form.
    const bool one_reference = o->references.empty() || (o->references.size() == 1 && o->inputs.size() <= 1);
    if (!o->package.empty() && !o->no_neighbours && one_reference && !is_triage_summary(o->common.baseline)) {
      return verify_neighbours(*o);
    }
    TriageOptions opt = options_of(o->common, "verify");
    if (!o->manifest.empty()) {
      if (!o->inputs.empty() || !o->references.empty() || !o->libraries.empty()) {
        throw Error(ErrorKind::usage,
                    "--inputs, --reference and --load-library go with a PACKAGE, not with --manifest (its cases "
                    "say them)");
      }
      Manifest m = load_manifest(o->manifest, check_run_options);
      opt.cases = m.cases;
      opt.manifest = display_path(o->manifest);
      opt.manifest_sha256 = sha256_file(o->manifest);
    } else {
      opt.cases = cases_of_inputs(*o);
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
      std::vector<std::string> shown;
      for (const auto& in : c.inputs) {
        shown.push_back(display_path(in));
      }
      inputs_of[c.name] = join(shown, " ");
    }
    Summary s = run_triage(opt, print_progress, [&](Summary& sum) { judge_verify(sum, earlier); });
    for (const auto& c : s.cases) {
      std::string detail = c.signature.empty()
                               ? (c.error.empty() ? c.verdict : c.verdict + ": " + c.error)
                               : c.signature + ", " + culprit_or_none(c.culprit_call_index, c.culprit_kernel);
      std::printf("%-15s %s (%s)\n", c.verify.c_str(), redact_paths(inputs_of[c.name]).c_str(), detail.c_str());
    }
    print_outputs(opt.out_dir);
    return s.exit_code;
  };
}

}  // namespace aoti_bisect::cli
