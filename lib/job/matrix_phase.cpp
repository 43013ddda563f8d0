// The flag matrix phase: the baseline run, a refusal of the inputs checked, the matrix's stages run, and
// what the runs showed: the failure to search for, or the verdict without one.

#include "job/matrix_phase.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "classify/classify.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "process/process.hpp"
#include "report/sink_text.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// The runner's versions and device, from the baseline's events.
Environment with_runner(Environment env, const Classification& cls) {
  auto get = [&](const char* k) {
    auto it = cls.environment.find(k);
    return it == cls.environment.end() ? std::string() : it->second;
  };
  env.torch_version = get("torch");
  env.cuda_version = get("cuda");
  env.hip_version = get("hip");
  if (!get("device_name").empty()) {
    env.device_name = get("device_name");
  }
  env.driver_version = get("driver");
  return env;
}

// The variants whose refusal of the inputs a finding rule reads (the
// package's own input check): one run of each.
std::vector<PlannedRun> input_check_runs(const Settings& s) {
  std::vector<PlannedRun> out;
  for (const auto& run : s.plan) {
    bool checks = std::any_of(s.findings.begin(), s.findings.end(), [&](const FindingRule& r) {
      return r.variant == run.variant && r.contrast == "refuses_inputs";
    });
    if (checks && run.repeat == 1) {
      out.push_back(run);
    }
  }
  return out;
}

std::vector<MatrixFinding> report_findings(const std::vector<Finding>& findings) {
  std::vector<MatrixFinding> out;
  for (const auto& f : findings) {
    out.push_back({f.variant, f.contrast, f.sentence});
  }
  return out;
}

std::vector<MatrixRunFacts> facts_of(const std::vector<MatrixRun>& runs) {
  std::vector<MatrixRunFacts> facts;
  for (const auto& [plan, result] : runs) {
    if (!result.finished) {
      continue;
    }
    MatrixRunFacts f{.variant = plan.variant,
                     .env = plan.env,
                     .kind = result.cls.kind,
                     .first_line = redact_paths(result.cls.first_line),
                     .id = plan.id};
    for (const auto& out : result.cls.outputs) {
      f.output_checksums.push_back(out.checksum);
    }
    facts.push_back(std::move(f));
  }
  return facts;
}

// The variants, the failure and the environment the search uses.
MatrixResult summarize_runs(const std::vector<MatrixRun>& runs) {
  std::vector<RunOutcome> outcomes;
  for (const auto& [plan, result] : runs) {
    if (result.finished) {
      outcomes.push_back({plan.variant, plan.env, result.cls.kind, plan.localizes_faults});
    }
  }
  MatrixSummary m = summarize_matrix(outcomes);
  MatrixResult out;
  out.chosen_because = m.chosen_because;
  for (const auto& v : m.variants) {
    out.variants.push_back({v.variant, v.env, v.runs, v.reproduced, v.deterministic()});
    if (m.chosen && v.variant == *m.chosen) {
      out.chosen_env = v.env;
    }
  }
  if (!m.failure) {
    return out;
  }
  Failure f;
  f.kind = *m.failure;
  f.first_check = std::string(outcome_info(f.kind).first_check);
  f.reproduced = m.total_reproduced;
  f.runs = m.total_runs;
  f.deterministic = m.deterministic;
  f.reproducing_variant = m.chosen.value_or("");
  for (const auto& [plan, r] : runs) {
    if (r.finished && r.cls.kind == f.kind) {
      f.first_line = redact_paths(r.cls.first_line);
      f.signal = r.cls.signal;
      if (f.kind == OutcomeKind::nonfinite && !bad_inputs_text(r.cls.input_stats).empty()) {
        f.first_check = "the inputs: they hold NaN/Inf themselves (invalid data before any kernel)";
      }
      break;
    }
  }
  out.failure = f;
  return out;
}

Failure failure_of(OutcomeKind kind, const std::string& first_line, const std::string& variant) {
  Failure f;
  f.kind = kind;
  f.first_check = std::string(outcome_info(kind).first_check);
  f.first_line = first_line;
  f.reproducing_variant = variant;
  return f;
}

}  // namespace

std::optional<Stop> broken_run(const ChildResult& r) {
  if (r.cls.internal) {
    return Stop{Verdict::internal_error, *r.cls.internal};
  }
  if (r.cls.cannot_test) {
    return Stop{Verdict::could_not_test, *r.cls.cannot_test};
  }
  return std::nullopt;
}

MatrixPhase::MatrixPhase(JobContext& job, const ModelDir& model, std::string model_name)
    : m_job(job), m_model(model), m_model_name(std::move(model_name)), m_plan(job.settings.plan) {}

std::vector<ChildRequest> MatrixPhase::requests(const std::vector<PlannedRun>& plan) const {
  std::vector<ChildRequest> reqs;
  for (const auto& run : plan) {
    reqs.push_back(ChildRequest{.id = run.id,
                                .variant = run.variant,
                                .repeat = run.repeat,
                                .env = run.env,
                                .model = m_model,
                                .batches = m_run_list});
  }
  return reqs;
}

std::vector<MatrixRunFacts> MatrixPhase::facts() const {
  return facts_of(m_runs);
}

Step<> MatrixPhase::run_baseline(const std::optional<FirstRunProbes>& probes) {
  const Settings& s = m_job.settings;
  Recorder& rec = m_job.recorder;
  rec.plan_runs(1);  // the baseline; each stage of the matrix adds its runs
  if (s.batches.size() > 1) {
    const size_t n = s.batches.size();
    rec.begin_phase("batches", s.calls ? fmt::format("{} calls of {} in one process", n, display_path(s.inputs))
                                       : fmt::format("{} batches in one process, in the given order", n));
    m_loop = run_batch_loop(s, m_job.runs, rec.progress(), requests(m_plan).front());
    record_batches(rec, m_loop->found);
    if (m_loop->interrupted) {
      m_loop.reset();
      return interrupted_during("during the batch loop");
    }
    m_runs = {{m_plan.front(), m_loop->loop}};
    m_run_list = m_loop->run_list;
    if (!m_loop->failing) {
      m_plan.resize(1);  // a clean list is not repeated batch by batch
    }
  } else if (probes) {
    if (auto stop = run_probed_baseline(*probes); stop.stopped()) {
      return stop;
    }
  } else {
    rec.begin_phase("baseline", "one run in a fresh child");
    std::vector<ChildResult> results;
    if (!m_job.runs.run_all({requests(m_plan).front()}, 1, results) && interrupt_requested()) {
      return interrupted_during("during the baseline run");
    }
    m_runs = {{m_plan.front(), results.front()}};
  }
  const Classification& base = baseline().cls;
  rec.environment(with_runner(rec.report().environment, base));
  rec.inputs(inputs_with_nonfinite_counts(base), inputs_binding_text(base));
  for (const auto& changed : base.inputs_changed) {
    rec.note(changed);
  }
  rec.inputs_outside_range(base.inputs_outside_range);
  return Go{};
}

Step<> MatrixPhase::refuse_inputs() {
  const Settings& s = m_job.settings;
  Recorder& rec = m_job.recorder;
  const ChildResult& base = baseline();
  if (base.cls.kind != OutcomeKind::input_mismatch) {
    return Go{};
  }
  const auto& ran = base.batches;
  std::string which = ran.empty() ? display_path(s.inputs)
                                  : fmt::format("{}' (batch {} of {}", display_path(ran.back().file),
                                                ran.back().index + 1, s.batches.size());
  std::string message = fmt::format("inputs file '{}{} does not fit model '{}': {}", which, ran.empty() ? "'" : ")",
                                    m_model_name, base.cls.first_line);
  // A second opinion from the package itself (its own input check), one run each.
  std::vector<PlannedRun> checks = m_plan.size() > 1 ? input_check_runs(s) : std::vector<PlannedRun>{};
  if (!checks.empty()) {
    rec.begin_phase("matrix", "the package's own input check, as a second opinion");
    std::vector<ChildResult> checked;
    m_job.runs.run_all(requests(checks), s.jobs, checked);
    // A refusal with the baseline's own line is the runner's check again
    // (the count, the binding: kept where the package checks), not the package's.
    auto own = [&](const ChildResult& r) {
      return !r.finished || (r.cls.kind == OutcomeKind::input_mismatch && r.cls.first_line == base.cls.first_line);
    };
    std::vector<MatrixRun> all = {m_runs.front()};
    for (size_t i = 0; i < checks.size() && i < checked.size(); ++i) {
      if (!own(checked[i])) {
        all.push_back({checks[i], checked[i]});
      }
    }
    rec.findings(report_findings(read_matrix(s.findings, facts_of(all), std::nullopt)));
    for (size_t i = 0; i < checks.size() && i < checked.size(); ++i) {
      if (own(checked[i])) {
        continue;
      }
      std::string flags = env_difference(checks[i].env, m_plan[0].env);
      message +=
          checked[i].cls.kind == OutcomeKind::input_mismatch
              ? fmt::format("; the package's own check ({}) agrees: {}", flags, redact_paths(checked[i].cls.first_line))
              : fmt::format("; the package's own check ({}) accepts them ({})", flags,
                            outcome_name(checked[i].cls.kind));
    }
  }
  // The failure kind scripts group by (design.md's outcome table), with
  // the could_not_test verdict: the inputs, not the model, are at fault.
  Failure refused = failure_of(OutcomeKind::input_mismatch, redact_paths(base.cls.first_line), m_plan[0].variant);
  refused.runs = 1;
  refused.reproduced = 1;
  refused.deterministic = true;
  rec.failure(refused);
  return Stop{Verdict::could_not_test, message};
}

bool MatrixPhase::answers_first() const {
  const Settings& s = m_job.settings;
  OutcomeKind kind = baseline().cls.kind;
  return s.answer_first && s.bisect && !m_loop && m_plan.size() > 1 &&
         (kind == OutcomeKind::nonfinite || kind == OutcomeKind::mismatch);
}

namespace {

// A run whose environment a fork server must hold from its start (a
// variable read at the process's start or the model's load, not applied in
// the run: process.hpp's applied_in_the_run): it loads the model again,
// and stops the server that holds the baseline's.
bool loads_again(const PlannedRun& run, const PlannedRun& baseline) {
  auto differs = [](const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
    return std::any_of(a.begin(), a.end(), [&](const auto& kv) {
      auto it = b.find(kv.first);
      return !applied_in_the_run(kv.first) && (it == b.end() || it->second != kv.second);
    });
  };
  return differs(run.env, baseline.env) || differs(baseline.env, run.env);
}

}  // namespace

Step<> MatrixPhase::run_stages() {
  const Settings& s = m_job.settings;
  Recorder& rec = m_job.recorder;
  MatrixStage stage{baseline().cls.kind, s.profile.backend != "cpu", false};
  // The first stage's runs that load the model again run last, after the
  // second stage's: every run before them forks from the baseline's
  // server, its model loaded once. Stage 2 is decided by the baseline
  // environment's runs, which are not among them.
  std::vector<PlannedRun> last;
  for (int stage_no = 1; stage_no <= 3 && m_plan.size() > 1; ++stage_no) {
    if (stage_no == 2) {
      stage.flaky = baseline_env_flaky(facts_of(m_runs));
    }
    std::vector<PlannedRun> now;
    for (size_t i = 1; i < m_plan.size() && stage_no < 3; ++i) {
      if (runs_at_stage(m_plan[i], stage, stage_no)) {
        (stage_no == 1 && loads_again(m_plan[i], m_plan[0]) ? last : now).push_back(m_plan[i]);
      }
    }
    if (stage_no == 3) {
      now = last;
    }
    count_search_runs(now);
    if (now.empty()) {
      continue;
    }
    rec.plan_runs(static_cast<int>(now.size()));
    std::set<std::string> variants;
    for (const auto& p : now) {
      variants.insert(p.variant);
    }
    std::string why_now = stage_no == 3   ? " (variables read at the process's start: the model loaded again)"
                          : stage_no != 2 ? ""
                          : stage.flaky   ? " (the baseline is flaky)"
                                          : " (after a steady failure)";
    rec.begin_phase("matrix",
                    fmt::format("{} run{} over {} variant{}{}, {} at a time", now.size(), now.size() == 1 ? "" : "s",
                                variants.size(), variants.size() == 1 ? "" : "s", why_now, s.jobs));
    std::vector<ChildResult> more;
    bool completed = m_job.runs.run_all(requests(now), s.jobs, more) || !interrupt_requested();
    for (size_t i = 0; i < now.size() && i < more.size(); ++i) {
      m_runs.push_back({now[i], std::move(more[i])});
    }
    if (!completed) {
      MatrixResult partial = summarize_runs(m_runs);
      rec.matrix(partial.variants, partial.failure, reproduce_command(s, partial.chosen_env, m_run_list));
      return interrupted_during("during the flag matrix");
    }
    for (const auto& run : m_runs) {
      if (auto stop = broken_run(run.result)) {
        return *stop;
      }
    }
  }
  return Go{};
}

void MatrixPhase::summarize() {
  for (const auto& [plan, result] : m_runs) {
    if (!result.cls.poison_unreached.empty()) {
      m_job.recorder.note(
          fmt::format("variant {}: the poison reached none of the package's allocations ({}); its "
                      "runs say nothing about memory no kernel wrote",
                      plan.variant, result.cls.poison_unreached));
      break;
    }
  }
  m_result = summarize_runs(m_runs);
  if (m_result.failure) {
    m_result.failure->search_runs = static_cast<int>(
        std::count_if(m_runs.begin(), m_runs.end(), [&](const MatrixRun& r) { return m_counted.count(r.plan.id); }));
  }
  if (m_result.failure && m_loop) {
    m_result.failure->batch = m_loop->batch;
  }
}

void MatrixPhase::record(const std::map<std::string, std::string>* env) const {
  m_job.recorder.matrix(m_result.variants, m_result.failure,
                        reproduce_command(m_job.settings, env ? *env : m_result.chosen_env, m_run_list));
  m_job.recorder.findings(report_findings(m_findings));
}

Step<> MatrixPhase::read() {
  const Settings& s = m_job.settings;
  summarize();
  const std::vector<MatrixRunFacts> runs = facts();
  m_findings = read_matrix(s.findings, runs, m_result.failure ? std::optional(m_result.failure->kind) : std::nullopt);
  // The package's own input check refuses the inputs: it is the inputs,
  // not a kernel; nothing is searched. Unless they are only outside the
  // range it was compiled for, which it runs with its checks off (its
  // default): then they were run as given, and the refusal is a finding.
  bool outside_only = !baseline().cls.inputs_outside_range.empty() && baseline().finished &&
                      baseline().cls.kind != OutcomeKind::input_mismatch;
  for (size_t i = 1; i < m_runs.size() && !outside_only; ++i) {
    const auto& [plan, result] = m_runs[i];
    if (result.finished && result.cls.kind == OutcomeKind::input_mismatch) {
      record(&plan.env);
      return Stop{Verdict::could_not_test,
                  fmt::format("inputs file '{}' does not fit model '{}': under {} ({}) the package refuses them: {}; "
                              "the kernels were not searched (it is the inputs)",
                              display_path(s.inputs), m_model_name, plan.variant,
                              env_difference(plan.env, baseline_run().env), result.cls.first_line)};
    }
  }
  // Outputs that change where nothing else does (memory nothing wrote): a
  // failure, though no run ended in one.
  if (auto change = m_result.failure ? std::nullopt : outputs_change(m_findings, runs)) {
    std::string flags = env_difference(change->env, m_plan[0].env);
    Failure changed = failure_of(OutcomeKind::mismatch,
                                 fmt::format("the outputs under {} differ from the baseline's, which its repeats "
                                             "reproduce bit for bit",
                                             flags),
                                 change->variant);
    changed.runs = change->runs;
    changed.reproduced = change->reproduced;
    for (auto& v : m_result.variants) {
      if (v.name == change->variant) {
        v.reproduced = change->reproduced;  // its runs showed it: other outputs
      }
    }
    m_result.failure = changed;
    m_result.chosen_env = change->env;
    record();
    return finished(Verdict::not_isolated,
                    change->sentence +
                        "; the kernel search needs a failure to probe for: 'aoti-bisect bisect' with --env " + flags +
                        " and --against-eager (or --reference EXPECTED.pt) compares with eager, kernel by kernel");
  }
  if (!m_result.failure && !m_loop) {
    if (auto differ = outputs_differ(runs); differ.stopped()) {
      return differ;
    }
  }
  record();
  return Go{};
}

// Outputs that differ between runs of the baseline environment while no run
// fails (issue 39): the failure kind `nondeterministic`, never clean. How
// many runs agreed, and how far two runs differ (one more run, compared bit
// for bit with the baseline's outputs); within a tolerance the user gave
// (--atol/--rtol) it is accepted, and the report still says it saw them.
Step<> MatrixPhase::outputs_differ(const std::vector<MatrixRunFacts>& runs) {
  const Settings& s = m_job.settings;
  Recorder& rec = m_job.recorder;
  std::optional<OutputsDiffer> differ = aoti_bisect::outputs_differ(runs);
  if (!differ) {
    return Go{};
  }
  // How far they differ: one more run of the baseline environment, its
  // outputs compared bit for bit with the first run's.
  rec.plan_runs(1);
  rec.begin_phase("compare", fmt::format("{} different outputs in {} runs of the same inputs and flags: one more "
                                         "run, compared element by element with the first",
                                         differ->distinct, differ->runs));
  ChildRequest req = requests({m_plan[0]}).front();
  req.id = "compare.1";
  req.group = "compare";
  req.variant = "compare";
  req.repeat = 1;
  req.exact_reference = s.out_dir / "runs" / differ->first_id / "outputs.pt";
  std::vector<ChildResult> compared;
  if (!m_job.runs.run_all({req}, 1, compared) && interrupt_requested()) {
    return interrupted_during("while comparing runs");
  }
  std::string how_far;
  std::optional<Comparison> c;
  if (!compared.empty() && compared[0].finished && compared[0].cls.comparison) {
    c = compared[0].cls.comparison;
  }
  if (c && c->mismatched > 0) {
    how_far = fmt::format("; one more run against the first: {} of {} elements differ, the largest difference {}{}",
                          c->mismatched, c->total, number_text(c->max_abs_error),
                          c->worst_output.empty() ? "" : " (in " + c->worst_output + ")");
  } else if (c) {
    how_far = "; one more run returned the first run's outputs exactly";
  }
  std::string seen_line = fmt::format(
      "outputs differ between runs with the same inputs and flags: {} different "
      "outputs in {} runs ({} agreed at most){}",
      differ->distinct, differ->runs, differ->agreeing, how_far);
  // Within a tolerance the user gave: accepted, and said.
  if (s.tolerance_given && c && c->mismatched > 0) {
    std::string dtype = "default";
    for (const auto& o : compared[0].cls.outputs) {
      if (o.name == c->worst_output) {
        dtype = o.dtype;
      }
    }
    Tolerance t = s.tolerances.for_dtype(dtype);
    double scale = c->max_rel_error > 0 ? c->max_abs_error / c->max_rel_error : 0;
    if (c->max_abs_error <= t.atol + t.rtol * scale) {
      rec.note(seen_line + fmt::format("; within the tolerance given (atol {:g} + rtol {:g} × max |output|): "
                                       "accepted",
                                       t.atol, t.rtol));
      return Go{};
    }
  }
  Failure f = failure_of(OutcomeKind::nondeterministic, seen_line, m_plan[0].variant);
  f.runs = differ->runs;
  f.reproduced = differ->runs - differ->agreeing;
  f.deterministic = false;
  for (auto& v : m_result.variants) {
    if (v.env == m_plan[0].env) {
      v.reproduced = differ->differing.count(v.name) ? differ->differing.at(v.name) : 0;
    }
  }
  m_result.failure = f;
  m_result.chosen_env = m_plan[0].env;
  for (const auto& finding : m_findings) {
    if (finding.contrast == "stable_with") {
      m_differ_finding = finding.sentence;
    }
  }
  return Go{};  // the job goes on: the search compares two runs site by site
}

Step<> MatrixPhase::without_failure() const {
  const Settings& s = m_job.settings;
  if (m_result.failure) {
    return Go{};
  }
  if (m_loop) {
    return finished(Verdict::clean, fmt::format("no failure in {} {} (one run; no crash, no NaN/Inf)", s.batches.size(),
                                                s.calls ? "calls" : "batches"));
  }
  const Report& report = m_job.recorder.report();
  size_t n = report.runs.size();
  std::string unchecked;
  if (s.reference.empty() && report.reference_path.empty()) {
    unchecked = s.against_eager ? " (no crash, no NaN/Inf); output values were not checked: the exported program "
                                  "failed when run eagerly on these inputs (see notes)"
                                : " (no crash, no NaN/Inf); output values were not checked against a reference: "
                                  "give --reference EXPECTED.pt or --against-eager to check them";
  }
  // A run that refused the inputs (the package's own input check) is not a
  // failure of the model, but "no failure" would hide it: said, with the
  // matrix's reading of it where there is one.
  std::vector<std::string> refused;
  for (const RunRecord& run : report.runs) {
    if (run.outcome == OutcomeKind::input_mismatch) {
      refused.push_back(run.id);
    }
  }
  std::string also;
  if (!refused.empty()) {
    std::string why;
    for (const auto& finding : m_findings) {
      if (finding.contrast == "refuses_inputs") {
        why = finding.sentence;
      }
    }
    also = fmt::format("; {} of them ({}) refused the inputs{}", refused.size(), fmt::join(refused, ", "),
                       why.empty() ? "" : ": " + why);
  }
  return finished(Verdict::clean, fmt::format("no failure {}in {} run{}{}{}", refused.empty() ? "" : "of the model ", n,
                                              n == 1 ? "" : "s", unchecked, also));
}

std::string MatrixPhase::failure_text() const {
  const Settings& s = m_job.settings;
  const Failure& f = failure();
  if (f.kind == OutcomeKind::nondeterministic) {
    return f.first_line + (m_differ_finding.empty() ? "" : "; " + m_differ_finding);
  }
  std::string text = fmt::format("{} reproduced in {} of the flag matrix's {} run{}{}", outcome_name(f.kind),
                                 f.reproduced, f.runs, f.runs == 1 ? "" : "s", report_text::search_runs_note(f));
  if (!f.deterministic && s.bisect) {
    // Mixed outcomes: one run per step could call a half clean by chance.
    text += fmt::format(
        " (flaky: not every run of the {} environment reproduced it, so each search step runs {} "
        "times and a step whose runs disagree is inconclusive)",
        f.reproducing_variant, s.bisect_repeats.value_or(3));
  }
  // What makes the failure go away, or show every time (one thread, ATen's
  // scalar kernels), said beside the culprit: not the kernel's arithmetic alone.
  bool said = false;
  for (const auto& finding : m_findings) {
    if (finding.contrast == "passes_with" || finding.contrast == "more_reliable") {
      text += "; " + finding.sentence;
      said = said || finding.variant == f.reproducing_variant;
    }
  }
  // Searched under a variant, not the plain environment: which, and why.
  const auto& variants = m_result.variants;
  const VariantSummary* base_v = variants.empty() ? nullptr : &variants.front();
  auto chosen = std::find_if(variants.begin(), variants.end(),
                             [&](const VariantSummary& v) { return v.name == f.reproducing_variant; });
  if (!said && s.bisect && base_v != nullptr && chosen != variants.end() && chosen->env != base_v->env) {
    int base_k = 0;
    int base_n = 0;
    for (const auto& v : variants) {
      if (v.env == base_v->env) {
        base_k += v.reproduced;
        base_n += v.runs;
      }
    }
    // The rule that chose it, then the counts it read.
    std::string because = m_result.chosen_because.empty()
                              ? std::string("it is the first in the profile's order that reproduces it")
                              : m_result.chosen_because;
    text += fmt::format("; searched under {} ({}) because {}: it reproduced in {} of {} run{} there, {} of {} without",
                        chosen->name, env_difference(chosen->env, base_v->env), because, chosen->reproduced,
                        chosen->runs, chosen->runs == 1 ? "" : "s", base_k, base_n);
  }
  return text;
}

}  // namespace aoti_bisect
