#pragma once
// Whose bug is it: the exported program run eagerly node by node in its own
// dtypes and in float64, the package's outputs measured against float64, and
// the culprit's graph nodes written as the smallest program that shows the
// symptom (OUT/repro/upstream/repro.py), by a second Python helper embedded
// in the binary (lib/inductor/aoti_bisect_judge.py). The driver reads what it
// measured (evidence/judgement.hpp decides).

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace aoti_bisect {

struct JudgeRequest {
  std::filesystem::path exported_program;
  std::string model_name = "model";
  std::filesystem::path inputs;           // torch.save zip format
  std::filesystem::path package_outputs;  // the failing run's outputs; empty: none
  std::vector<std::string> culprit_nodes; // graph nodes the culprit computes; empty: not known
  nlohmann::json tolerances = nlohmann::json::object();
  std::string device;  // --eager-device
  std::vector<std::filesystem::path> libraries;
  // The smallest program: written into upstream_dir (empty: not written),
  // compiled under these configs, judged by this symptom ("nonfinite",
  // "mismatch"), at most max_compiles compiles.
  std::filesystem::path upstream_dir;
  nlohmann::json configs = nlohmann::json::object();
  std::string symptom;
  int max_compiles = 6;
  std::filesystem::path cache_dir;  // empty: default_cache_dir()
  double timeout_s = 1800;
  std::string python;
};

// Runs the judge; its result JSON (the helper's docstring). Throws Error
// (cannot_test) with one line when Python, torch or the program fails,
// ProgramRefused when the program would run code to load.
nlohmann::json run_judge(const JudgeRequest& request);

// The embedded judge's source.
std::string_view judge_helper_source();

}  // namespace aoti_bisect
