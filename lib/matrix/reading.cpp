// The matrix read as a differential diagnosis: the profile's findings stated where the runs support them,
// whether the baseline environment is flaky, and outputs that change or differ run to run.

#include "matrix/reading.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"

namespace aoti_bisect {
namespace {

struct Tally {
  int runs = 0;
  int failed = 0;  // showed the matrix's failure
  int ok = 0;
  int refused = 0;                             // input_mismatch
  int changed = 0;                             // ok, with outputs other than the baseline's
  std::string line;                            // the first error line
  std::set<std::vector<std::string>> outputs;  // the ok runs' output checksums, distinct
};

std::string fill(const std::string& says, const std::map<std::string, std::string>& values) {
  std::string out;
  for (size_t i = 0; i < says.size();) {
    if (says[i] == '{') {
      size_t close = says.find('}', i);
      if (close != std::string::npos) {
        auto it = values.find(says.substr(i + 1, close - i - 1));
        if (it != values.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += says[i++];
  }
  return out;
}

}  // namespace

std::string env_difference(const std::map<std::string, std::string>& env,
                           const std::map<std::string, std::string>& base) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : env) {
    auto it = base.find(k);
    if (it == base.end() || it->second != v) {
      parts.push_back(k + "=" + v);
    }
  }
  return join(parts, " ");
}

std::vector<Finding> read_matrix(const std::vector<FindingRule>& rules, const std::vector<MatrixRunFacts>& runs,
                                 std::optional<OutcomeKind> failure) {
  std::vector<Finding> out;
  if (runs.empty()) {
    return out;
  }
  const MatrixRunFacts& baseline = runs.front();
  auto shows = [&](const MatrixRunFacts& r) { return failure && r.kind == *failure; };
  // The baseline environment's outputs, when its runs agree on them.
  Tally base;
  std::optional<std::vector<std::string>> base_outputs;
  bool base_outputs_agree = true;
  for (const auto& r : runs) {
    if (r.env != baseline.env) {
      continue;
    }
    base.runs += 1;
    base.failed += shows(r) ? 1 : 0;
    base.ok += r.kind == OutcomeKind::ok ? 1 : 0;
    base.refused += r.kind == OutcomeKind::input_mismatch ? 1 : 0;
    if (r.kind == OutcomeKind::ok && !r.output_checksums.empty()) {
      base.outputs.insert(r.output_checksums);
      if (!base_outputs) {
        base_outputs = r.output_checksums;
      } else if (*base_outputs != r.output_checksums) {
        base_outputs_agree = false;
      }
    }
  }
  std::map<std::string, Tally> tallies;
  for (const auto& r : runs) {
    if (r.env == baseline.env) {
      continue;
    }
    Tally& t = tallies[r.variant];
    t.runs += 1;
    t.failed += shows(r) ? 1 : 0;
    t.ok += r.kind == OutcomeKind::ok ? 1 : 0;
    t.refused += r.kind == OutcomeKind::input_mismatch ? 1 : 0;
    if (r.kind == OutcomeKind::ok && base_outputs && r.output_checksums != *base_outputs) {
      t.changed += 1;
    }
    if (r.kind == OutcomeKind::ok && !r.output_checksums.empty()) {
      t.outputs.insert(r.output_checksums);
    }
    if (t.line.empty() && r.kind != OutcomeKind::ok) {
      t.line = r.first_line;
    }
  }
  const double base_rate = base.runs ? double(base.failed) / base.runs : 0.0;
  for (const FindingRule& rule : rules) {
    auto it = tallies.find(rule.variant);
    if (it == tallies.end() || it->second.runs == 0) {
      continue;
    }
    const Tally& t = it->second;
    const double rate = double(t.failed) / t.runs;
    bool supported = false;
    if (rule.contrast == "refuses_inputs") {
      supported = t.refused > 0;
    } else if (rule.contrast == "passes_with") {
      supported = base.failed > 0 && t.ok == t.runs && std::pow(1.0 - base_rate, t.runs) <= k_contrast_chance;
    } else if (rule.contrast == "fails_with") {
      supported =
          t.failed > 0 && base.failed == 0 && base.runs > 0 && std::pow(1.0 - rate, base.runs) <= k_contrast_chance;
    } else if (rule.contrast == "more_reliable") {
      supported = t.failed == t.runs && base.failed > 0 && base.failed < base.runs &&
                  std::pow(base_rate, t.runs) <= k_contrast_chance;
    } else if (rule.contrast == "outputs_change") {
      supported = base.ok == base.runs && base.runs >= 2 && base_outputs && base_outputs_agree && t.changed > 0;
    } else if (rule.contrast == "stable_with") {
      // The baseline environment's outputs differ run to run; this
      // variant's runs (two or more, all ok) agree.
      supported = base.outputs.size() >= 2 && t.runs >= 2 && t.ok == t.runs && t.outputs.size() == 1;
    }
    if (!supported) {
      continue;
    }
    auto env_it =
        std::find_if(runs.begin(), runs.end(), [&](const MatrixRunFacts& r) { return r.variant == rule.variant; });
    std::map<std::string, std::string> values = {
        {"k", std::to_string(t.failed)},
        {"n", std::to_string(t.runs)},
        {"base_k", std::to_string(base.failed)},
        {"base_n", std::to_string(base.runs)},
        {"changed", std::to_string(t.changed)},
        {"line", t.line},
        {"env", env_difference(env_it->env, baseline.env)},
        {"base_outputs", std::to_string(base.outputs.size())},
    };
    out.push_back({rule.variant, rule.contrast, fill(rule.says, values)});
  }
  return out;
}

bool baseline_env_flaky(const std::vector<MatrixRunFacts>& runs) {
  if (runs.empty()) {
    return false;
  }
  std::optional<OutcomeKind> seen;
  std::optional<std::vector<std::string>> outputs;  // of the ok runs
  for (const auto& r : runs) {
    if (r.env != runs.front().env) {
      continue;
    }
    if (seen && *seen != r.kind) {
      return true;
    }
    seen = r.kind;
    if (r.kind == OutcomeKind::ok && !r.output_checksums.empty()) {
      if (outputs && *outputs != r.output_checksums) {
        return true;  // the same outcome, other outputs: they differ run to run
      }
      outputs = r.output_checksums;
    }
  }
  return false;
}

std::optional<OutputsChange> outputs_change(const std::vector<Finding>& findings,
                                            const std::vector<MatrixRunFacts>& runs) {
  for (const auto& finding : findings) {
    if (finding.contrast != "outputs_change") {
      continue;
    }
    OutputsChange out;
    out.variant = finding.variant;
    out.sentence = finding.sentence;
    for (const auto& r : runs) {
      out.runs += 1;
      if (r.variant == finding.variant) {
        out.env = r.env;
        out.reproduced += 1;  // its runs showed it: other outputs
      }
    }
    return out;
  }
  return std::nullopt;
}

std::optional<OutputsDiffer> outputs_differ(const std::vector<MatrixRunFacts>& runs) {
  if (runs.empty()) {
    return std::nullopt;
  }
  std::map<std::vector<std::string>, int> seen;     // output checksums -> runs
  const std::vector<std::string>* first = nullptr;  // the first ok run's (the baseline's)
  OutputsDiffer out;
  for (const auto& r : runs) {
    if (r.env != runs.front().env || r.kind != OutcomeKind::ok || r.output_checksums.empty()) {
      continue;
    }
    if (first == nullptr) {
      first = &r.output_checksums;
      out.first_id = r.id;
    }
    seen[r.output_checksums] += 1;
    out.runs += 1;
  }
  if (seen.size() < 2) {
    return std::nullopt;
  }
  out.distinct = static_cast<int>(seen.size());
  for (const auto& [sums, count] : seen) {
    out.agreeing = std::max(out.agreeing, count);
  }
  for (const auto& r : runs) {
    if (r.env == runs.front().env && !r.output_checksums.empty()) {
      out.differing[r.variant] += r.output_checksums != *first || r.variant == "baseline" ? 1 : 0;
    }
  }
  return out;
}

}  // namespace aoti_bisect
