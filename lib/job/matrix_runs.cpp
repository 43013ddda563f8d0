#include "job/matrix_runs.hpp"

#include <algorithm>

#include "classify/classify.hpp"
#include "common/files.hpp"

namespace aoti_bisect {

MatrixResult summarize_runs(const std::vector<PlannedRun>& plan, const std::vector<ChildResult>& results) {
  std::vector<RunOutcome> outcomes;
  for (size_t i = 0; i < results.size() && i < plan.size(); ++i) {
    if (results[i].finished) {
      outcomes.push_back({plan[i].variant, plan[i].env, results[i].cls.kind, plan[i].localizes_faults});
    }
  }
  MatrixSummary m = summarize_matrix(outcomes);
  MatrixResult out;
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
  for (const auto& r : results) {
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

std::vector<MatrixRunFacts> run_facts(const std::vector<PlannedRun>& plan, const std::vector<ChildResult>& results) {
  std::vector<MatrixRunFacts> facts;
  for (size_t i = 0; i < results.size() && i < plan.size(); ++i) {
    if (!results[i].finished) {
      continue;
    }
    MatrixRunFacts f{plan[i].variant, plan[i].env, results[i].cls.kind, redact_paths(results[i].cls.first_line), {}};
    for (const auto& out : results[i].cls.outputs) {
      f.output_checksums.push_back(out.checksum);
    }
    facts.push_back(std::move(f));
  }
  return facts;
}

std::vector<MatrixFinding> report_findings(const std::vector<Finding>& findings) {
  std::vector<MatrixFinding> out;
  for (const auto& f : findings) {
    out.push_back({f.variant, f.contrast, f.sentence});
  }
  return out;
}

bool baseline_env_flaky(const std::vector<PlannedRun>& plan, const std::vector<ChildResult>& results) {
  std::optional<OutcomeKind> seen;
  std::optional<std::vector<std::string>> outputs;  // of the ok runs
  for (size_t i = 0; i < results.size() && i < plan.size(); ++i) {
    if (!results[i].finished || plan[i].env != plan[0].env) {
      continue;
    }
    if (seen && *seen != results[i].cls.kind) {
      return true;
    }
    seen = results[i].cls.kind;
    if (results[i].cls.kind == OutcomeKind::ok && !results[i].cls.outputs.empty()) {
      std::vector<std::string> sums;
      for (const auto& o : results[i].cls.outputs) {
        sums.push_back(o.checksum);
      }
      if (outputs && *outputs != sums) {
        return true;  // the same outcome, other outputs: they differ run to run
      }
      outputs = sums;
    }
  }
  return false;
}

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

}  // namespace aoti_bisect
