#pragma once
// Whose bug the culprit is, from what the judge measured
// (inductor/judge.hpp): eager's run of the exported program in its own
// dtypes and in float64, and the package's outputs against float64.
//
//   model     eager makes the same failure at one of the culprit's graph nodes
//             (NaN/Inf from finite operands, or the same raise);
//   data      the failure comes from the inputs or a parameter that holds it
//             (NaN/Inf already in them, indices read straight from an input);
//   compiler  eager does not fail, and the package is further from float64
//             than eager by the AOTI minifier's rule (torch._dynamo.utils.same:
//             package_rmse > multiplier * eager_rmse + tol / 10, tol 1e-3);
//   numerics  they differ, but the package is no further from float64 than
//             eager is, or both are far from it (rmse over 1% of float64's
//             own root mean square).
// Where the evidence does not decide, kind stays "" and the sentence says
// what was measured.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "classify/outcome.hpp"
#include "report/report.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// The minifier's tolerance (torch._dynamo.config.repro_tolerance).
inline constexpr double k_minifier_tol = 1e-3;
// Both eager and the package are "far" from float64 past this share of its RMS.
inline constexpr double k_far_share = 0.01;

// The exported-program nodes the culprit at `call_index` computes: the node
// map's `computes` of the buffers it writes first (and those it updates in
// place), less the nodes buffers written at earlier call sites compute (an
// extern call's source nodes include the views of its operands). Empty when
// the map names none.
std::vector<std::string> culprit_graph_nodes(const WrapperInfo& wrapper, int call_index, const std::string& kernel,
                                             const nlohmann::json& node_map);

// The judge's result read for a failure of `failure`'s kind.
Judgement judgement_from(OutcomeKind failure, const nlohmann::json& result);

// The call site whose written buffers compute graph node `node` ("call site 3
// cpp_fused_relu_1"), "" when none does.
std::string call_site_computing(const WrapperInfo& wrapper, const nlohmann::json& node_map, const std::string& node);

// Wrong values: what the culprit's nodes compiled alone on eager's values of
// their inputs showed (the upstream record's "alone" and "farthest"), set on
// `j` with the call site of the farthest upstream node it needed.
void judge_alone(Judgement& j, const nlohmann::json& upstream, const WrapperInfo& wrapper,
                 const nlohmann::json& node_map);

// The judge's "upstream" record, its paths shown as `script` and `issue`.
UpstreamRepro upstream_from(const nlohmann::json& upstream, const std::string& script);

// Why a culprit is not judged when there is no exported program.
std::string needs_exported_program_to_judge();

}  // namespace aoti_bisect
