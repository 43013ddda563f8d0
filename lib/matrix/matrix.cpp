// The flag matrix: the runs planned from the profile and config, which of them run at each stage, and the
// summary of what they showed: rates per variant, determinism and the variant later phases use.

#include "matrix/matrix.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace {

// The variants in matrix order: the profile's (unless the user replaces
// them), then the user's. Names must stay unique, since run ids and the
// summary are keyed by them.
std::vector<const Variant*> matrix_variants(const Profile& profile, const UserConfig& user) {
  std::vector<const Variant*> variants;
  if (!user.replace_variants) {
    for (const Variant& v : profile.variants) {
      variants.push_back(&v);
    }
  }
  for (const Variant& v : user.variants) {
    for (const Variant* earlier : variants) {
      if (earlier->name == v.name) {
        // A config error, located like the parser's ("FILE:LINE:COL: error: ...").
        std::string where = user.path.empty() ? std::string("the config") : user.path;
        if (!user.path.empty() && v.line > 0) {
          where = fmt::format("{}:{}:{}", user.path, v.line, v.column);
        }
        throw ConfigError(
            fmt::format("{}: error: variant '{}' is already in the {} profile (rename it, or set "
                        "'variants_mode: replace')",
                        where, v.name, profile.backend));
      }
    }
    variants.push_back(&v);
  }
  return variants;
}

}  // namespace

namespace {

// The tool a variant runs the runner under, "" for none.
std::string run_under_program(const Variant& v) {
  auto it = v.env.find(k_run_under_env);
  if (it == v.env.end()) {
    return "";
  }
  std::string line = it->second;
  size_t start = line.find_first_not_of(" \t");
  if (start == std::string::npos) {
    return "";
  }
  return line.substr(start, line.find_first_of(" \t", start) - start);
}

}  // namespace

std::vector<std::string> unavailable_variants(const Profile& profile, const UserConfig& user) {
  std::vector<std::string> out;
  for (const Variant* v : matrix_variants(profile, user)) {
    std::string program = run_under_program(*v);
    if (!program.empty() && !find_program(program)) {
      out.push_back(fmt::format("{}: {} is not on PATH", v->name, program));
    }
  }
  return out;
}

std::vector<PlannedRun> plan_matrix(const Profile& profile, const UserConfig& user,
                                    std::optional<int> repeats_override) {
  if (repeats_override && *repeats_override < 1) {
    throw Error(ErrorKind::usage, fmt::format("--repeats must be at least 1, got {}", *repeats_override));
  }
  std::vector<PlannedRun> runs;
  runs.push_back(PlannedRun{"baseline", "baseline", 0, user.env});
  for (const Variant* v : matrix_variants(profile, user)) {
    if (std::string program = run_under_program(*v); !program.empty() && !find_program(program)) {
      continue;  // unavailable_variants says why
    }
    int repeats = repeats_override.value_or(v->repeats.value_or(user.repeats.value_or(profile.repeats)));
    std::map<std::string, std::string> env = user.env;
    for (const auto& [key, value] : v->env) {
      env.insert_or_assign(key, value);
    }
    for (int k = 1; k <= repeats; ++k) {
      runs.push_back(PlannedRun{fmt::format("{}.{}", v->name, k), v->name, k, env, v->localizes_faults, v->when});
    }
  }
  return runs;
}

bool runs_at_stage(const PlannedRun& run, const MatrixStage& stage, int stage_no) {
  if (run.variant == "baseline") {
    return false;  // it ran before either stage
  }
  if (stage_no == 2) {
    // One thread: after a flaky baseline, or after a failure (does it need
    // several threads?), its first repeat only when the failure is steady.
    return (run.when == RunWhen::flaky && stage.flaky) ||
           (run.when == RunWhen::failure_or_flaky &&
            (stage.flaky || (is_model_failure(stage.baseline) && run.repeat <= 1)));
  }
  switch (run.when) {
    case RunWhen::always: return true;
    case RunWhen::failure: return is_model_failure(stage.baseline);
    case RunWhen::fault:
      return stage.baseline == OutcomeKind::crash ||
             (stage.device && (stage.baseline == OutcomeKind::error || stage.baseline == OutcomeKind::device_assert));
    case RunWhen::flaky:
    case RunWhen::failure_or_flaky: return false;
  }
  return false;
}

std::string variant_schedule(const Variant& v, const Profile& profile, bool device) {
  int n = v.repeats.value_or(profile.repeats);
  auto runs = [](int k) { return fmt::format("{} run{}", k, k == 1 ? "" : "s"); };
  std::string program = run_under_program(v);
  std::string where = program.empty() ? "" : fmt::format(", where {} is on PATH", program);
  switch (v.when) {
    case RunWhen::always: return fmt::format("always{}, {}", where, runs(n));
    case RunWhen::failure: return fmt::format("only when the baseline failed{}, {}", where, runs(n));
    case RunWhen::fault:
      return fmt::format("{}{}, {}",
                         device ? "only after a fault (a crash, an error or a device assert)" : "only after a crash",
                         where, runs(n));
    case RunWhen::flaky:
      return fmt::format("only when the baseline environment's runs disagree (flaky){}, {}, after the others", where,
                         runs(n));
    case RunWhen::failure_or_flaky:
      return fmt::format(
          "after the others{}: its first run when every run of the baseline environment failed; {} "
          "when they disagree (flaky)",
          where, runs(n));
  }
  return "";
}

std::string matrix_plan_text(const std::vector<PlannedRun>& plan, MatrixStage stage) {
  auto count = [&](int stage_no, bool flaky) {
    MatrixStage st = stage;
    st.flaky = flaky;
    return std::count_if(plan.begin(), plan.end(), [&](const PlannedRun& r) { return runs_at_stage(r, st, stage_no); });
  };
  auto runs = [](long n) { return fmt::format("{} run{}", n, n == 1 ? "" : "s"); };
  long first = count(1, false), steady = count(2, false), flaky = count(2, true);
  std::string text = first > 0 ? runs(first) : std::string("no runs");
  if (steady == flaky && steady > 0) {
    return text + fmt::format(", then {} more", steady);
  }
  if (steady > 0 || flaky > 0) {
    std::string more = steady > 0 ? fmt::format("then {} more after a steady failure", steady)
                                  : std::string("then none after a steady failure");
    return text + fmt::format(", {} ({} if the baseline environment's runs disagree)", more, flaky);
  }
  return text;
}

namespace {

// The failure kind (the first failing run's), then each variant's runs,
// reproductions and outcomes, in plan order.
void tally_matrix_runs(const std::vector<RunOutcome>& runs, MatrixSummary& summary) {
  for (const RunOutcome& run : runs) {
    if (is_model_failure(run.kind)) {
      summary.failure = run.kind;
      break;
    }
  }
  for (const RunOutcome& run : runs) {
    auto it = std::find_if(summary.variants.begin(), summary.variants.end(),
                           [&](const VariantResult& r) { return r.variant == run.variant; });
    if (it == summary.variants.end()) {
      VariantResult fresh;
      fresh.variant = run.variant;
      fresh.env = run.env;
      fresh.localizes_faults = run.localizes_faults;
      summary.variants.push_back(std::move(fresh));
      it = summary.variants.end() - 1;
    }
    bool reproduced = summary.failure && run.kind == *summary.failure;
    it->runs += 1;
    it->reproduced += reproduced ? 1 : 0;
    it->outcomes[std::string(outcome_name(run.kind))] += 1;
    summary.total_runs += 1;
    summary.total_reproduced += reproduced ? 1 : 0;
  }
}

// The runs of a variant's environment, pooled over every variant that shares
// it: (reproduced, runs).
std::pair<int, int> pooled_env_runs(const MatrixSummary& summary, const VariantResult& v) {
  std::pair<int, int> n{0, 0};  // reproduced, runs
  for (const VariantResult& r : summary.variants) {
    if (r.env == v.env) {
      n.first += r.reproduced;
      n.second += r.runs;
    }
  }
  return n;
}

// The pooled rate of a variant's environment, and the same with one run more
// of each outcome ((k + 1) / (n + 2)).
double pooled_env_rate(const MatrixSummary& summary, const VariantResult& v) {
  auto [k, n] = pooled_env_runs(summary, v);
  return n > 0 ? static_cast<double>(k) / n : 0.0;
}
double smoothed_env_rate(const MatrixSummary& summary, const VariantResult& v) {
  auto [k, n] = pooled_env_runs(summary, v);
  return static_cast<double>(k + 1) / (n + 2);
}

// Each variant is judged by every run of its environment (the baseline
// and `repeat` share one), so a flaky baseline's lucky first run is not a
// rate of 1. The baseline environment is kept when every run of it
// reproduced; otherwise the rate with one run more of each outcome
// ((k + 1) / (n + 2)) decides, so that 5 of 5 outranks 1 of 1; a tie goes
// to the variant whose runs all reproduced (5 of 5 over 11 of 12), else
// stays with the earlier one. For a crash, a variant that localizes faults
// wins its ties. Sets chosen_because; nullptr when none reproduced.
const VariantResult* choose_reproducing_variant(MatrixSummary& summary,
                                                const std::map<std::string, std::string>* base_env) {
  auto rate = [&](const VariantResult& v) { return pooled_env_rate(summary, v); };
  auto smoothed = [&](const VariantResult& v) { return smoothed_env_rate(summary, v); };
  const VariantResult* best = nullptr;
  // What a variant was compared with, as the verdict names it: the runs of
  // the baseline's environment are pooled (baseline and repeat).
  auto named = [&](const VariantResult& v) {
    return base_env != nullptr && v.env == *base_env ? std::string("the baseline environment") : v.variant;
  };
  for (const VariantResult& r : summary.variants) {
    if (r.reproduced == 0) {
      continue;
    }
    if (best == nullptr) {
      best = &r;
    } else if (rate(r) == rate(*best) && r.localizes_faults && !best->localizes_faults &&
               summary.failure == OutcomeKind::crash) {
      summary.chosen_because = fmt::format(
          "it localizes faults (a crash happens inside the kernel that makes it) "
          "and reproduces as often as {}",
          named(*best));
      best = &r;
    } else if (base_env != nullptr && best->env == *base_env && rate(*best) == 1.0) {
      continue;  // the plain environment reproduces every time
    } else if (smoothed(r) > smoothed(*best)) {
      summary.chosen_because = fmt::format("it reproduces more reliably than {}", named(*best));
      best = &r;
    } else if (smoothed(r) == smoothed(*best) && rate(r) == 1.0 && rate(*best) < 1.0) {
      // A tie goes to the environment that failed every run (5 of 5 over 11 of 12).
      summary.chosen_because = fmt::format("every run of it reproduced, not every run of {}", named(*best));
      best = &r;
    }
  }
  return best;
}

// Whether every run of the chosen variant's environment reproduced, with
// enough runs to say so.
bool chosen_env_deterministic(const MatrixSummary& summary, const VariantResult& best,
                              const std::map<std::string, std::string>* base_env) {
  // Over every run of the same environment: a 1-of-1 baseline is no
  // evidence of determinism when identical repeats did not reproduce.
  int runs_same = 0;
  int reproduced_same = 0;
  for (const VariantResult& r : summary.variants) {
    if (r.env == best.env) {
      runs_same += r.runs;
      reproduced_same += r.reproduced;
    }
  }
  // One run is evidence only where the baseline environment's runs did
  // not disagree (guard pages after a steady crash: yes; check_inputs'
  // one run beside a flaky baseline: no).
  bool base_steady = base_env != nullptr && pooled_env_runs(summary, summary.variants.front()).first ==
                                                pooled_env_runs(summary, summary.variants.front()).second;
  return runs_same > 0 && reproduced_same == runs_same && (runs_same >= 2 || base_steady);
}

}  // namespace

MatrixSummary summarize_matrix(const std::vector<RunOutcome>& runs) {
  MatrixSummary summary;
  tally_matrix_runs(runs, summary);
  const std::map<std::string, std::string>* base_env =
      summary.variants.empty() ? nullptr : &summary.variants.front().env;
  const VariantResult* best = choose_reproducing_variant(summary, base_env);
  if (best != nullptr) {
    summary.chosen = best->variant;
    summary.deterministic = chosen_env_deterministic(summary, *best, base_env);
  }
  return summary;
}

}  // namespace aoti_bisect
