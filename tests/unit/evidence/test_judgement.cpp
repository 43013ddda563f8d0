// Whose bug the culprit is, from hand-written judge results (what
// lib/inductor/aoti_bisect_judge.py writes), and the culprit's graph nodes
// from a node map.

#include <doctest/doctest.h>

#include "evidence/judgement.hpp"

using namespace aoti_bisect;
using json = nlohmann::json;

namespace {

json row(double eager_rmse, json package_rmse, double fp64_rms = 1.0, int64_t numel = 4096) {
  return json{{"index", 0},
              {"dtype", "float32"},
              {"numel", numel},
              {"fp64_rms", fp64_rms},
              {"fp64_nan", 0},
              {"fp64_inf", 0},
              {"eager", {{"rmse", eager_rmse}, {"nan", 0}, {"inf", 0}, {"beyond_tolerance", 0}}},
              {"package", {{"rmse", package_rmse}, {"nan", 0}, {"inf", 0}, {"beyond_tolerance", 100}}}};
}

json result(json eager, json outputs, json fp64 = json::object()) {
  return json{{"ok", true},
              {"eager", eager},
              {"fp64", fp64},
              {"outputs", outputs},
              {"culprit", {{"nodes", {"softmax", "div"}}}}};
}

json made(const std::string& node, bool in_culprit, const std::string& what = "NaN") {
  return json{{"node", node},      {"op", "aten.softmax.int"}, {"source", "m.py:12 in forward"},
              {"code", "y = x"},   {"nan", 144},               {"inf", 0},
              {"what", what},      {"in_culprit", in_culprit}};
}

}  // namespace

TEST_CASE("eager making the same NaN at one of the culprit's nodes is the model's bug") {
  Judgement j = judgement_from(OutcomeKind::nonfinite,
                               result({{"made", made("softmax", true)}}, json::array(), {{"outputs_nan", 8}}));
  CHECK(j.kind == "model");
  CHECK(j.eager_node.name == "softmax");
  CHECK(j.eager_node_in_culprit);
  CHECK(j.sentence.find("eager makes the same NaN at graph node `softmax` (aten.softmax.int, m.py:12 in forward)") !=
        std::string::npos);
  CHECK(j.sentence.find("float64 makes 8 in the outputs too") != std::string::npos);
}

TEST_CASE("eager's NaN at another node: the model's where float64 makes them too, else numerics") {
  Judgement model = judgement_from(OutcomeKind::nonfinite,
                                   result({{"made", made("log", false)}}, json::array(), {{"outputs_nan", 3}}));
  CHECK(model.kind == "model");
  CHECK(model.sentence.find("not one the culprit computes") != std::string::npos);
  Judgement numerics = judgement_from(OutcomeKind::nonfinite,
                                      result({{"made", made("log", false)}}, json::array(), {{"outputs_nan", 0}}));
  CHECK(numerics.kind == "numerics");
  CHECK(numerics.sentence.find("float64 makes none") != std::string::npos);
}

TEST_CASE("a parameter that holds NaN is the data's") {
  json holds = {{"node", "fc1_weight"}, {"kind", "parameter"}, {"target", "fc1.weight"}, {"nan", 1}, {"inf", 0}};
  Judgement j = judgement_from(OutcomeKind::nonfinite, result({{"holds", holds}}, json::array()));
  CHECK(j.kind == "data");
  CHECK(j.holder == "fc1.weight");
  CHECK(j.sentence == "data: parameter or constant `fc1.weight` holds 1 NaN and 0 Inf before any graph node runs; "
                      "eager carries them on too");
}

TEST_CASE("NaN eager and float64 do not make is the compiler's") {
  json r = row(1e-7, "nan");
  r["package"]["nan"] = 5;
  Judgement j = judgement_from(OutcomeKind::nonfinite, result(json::object(), json::array({r})));
  CHECK(j.kind == "compiler");
  CHECK(j.sentence.find("eager and float64 make no NaN/Inf in output 0; the package makes 5") != std::string::npos);
}

TEST_CASE("wrong values: the minifier's rule against float64 decides compiler or numerics") {
  // 0.2 > 2 * 3e-8 + 1e-4: further from float64 than eager.
  Judgement compiler = judgement_from(OutcomeKind::mismatch, result(json::object(), json::array({row(3e-8, 0.2)})));
  CHECK(compiler.kind == "compiler");
  CHECK(compiler.sentence.find("rmse against float64: package 0.2, eager 3e-08") != std::string::npos);
  REQUIRE(compiler.outputs.size() == 1);
  CHECK(compiler.outputs[0].multiplier == 2.0);
  CHECK(*compiler.outputs[0].package_rmse == doctest::Approx(0.2));
  // 5e-5 <= 2 * 3e-5 + 1e-4: no further.
  Judgement close = judgement_from(OutcomeKind::mismatch, result(json::object(), json::array({row(3e-5, 5e-5)})));
  CHECK(close.kind == "numerics");
  CHECK(close.sentence.find("no further from float64 than eager") != std::string::npos);
  // Small tensors get the minifier's 3x.
  Judgement small =
      judgement_from(OutcomeKind::mismatch, result(json::object(), json::array({row(1e-3, 3.05e-3, 1.0, 10)})));
  CHECK(small.kind == "numerics");
  CHECK(small.outputs[0].multiplier == 3.0);
}

TEST_CASE("both far from float64 is numerics (an ill-conditioned computation)") {
  Judgement j = judgement_from(OutcomeKind::mismatch, result(json::object(), json::array({row(0.5, 3.0, 10.0)})));
  CHECK(j.kind == "numerics");
  CHECK(j.sentence.find("both far from float64") != std::string::npos);
}

TEST_CASE("eager's NaN where the package is finite: the package is the closer one") {
  json r = row(0, 1e-4);
  r["eager"]["rmse"] = "nan";
  r["eager"]["nan"] = 3;
  Judgement j = judgement_from(OutcomeKind::mismatch, result(json::object(), json::array({r})));
  CHECK(j.kind == "numerics");
  CHECK(j.sentence.find("eager makes 3 NaN/Inf in output 0 that float64 does not") != std::string::npos);
}

TEST_CASE("a fault: eager raising on indices read straight from an input is the data's") {
  json raised = {{"node", "embedding"}, {"op", "aten.embedding.default"}, {"line", "IndexError: index out of range"},
                 {"in_culprit", true},  {"index_input", "ids"}};
  Judgement data = judgement_from(OutcomeKind::crash, result({{"raised", raised}}, json::array()));
  CHECK(data.kind == "data");
  CHECK(data.holder == "ids");
  raised["index_input"] = nullptr;
  Judgement model = judgement_from(OutcomeKind::crash, result({{"raised", raised}}, json::array()));
  CHECK(model.kind == "model");
  Judgement nan = judgement_from(OutcomeKind::nonfinite, result({{"raised", raised}}, json::array()));
  CHECK(nan.kind.empty());
  CHECK(nan.sentence.find("not judged: eager, at graph node `embedding`") == 0);
  Judgement quiet = judgement_from(OutcomeKind::crash, result(json::object(), json::array()));
  CHECK(quiet.kind.empty());
}

TEST_CASE("unsaved package outputs are not judged against float64") {
  json r = row(1e-7, 0.1);
  r.erase("package");
  Judgement j = judgement_from(OutcomeKind::mismatch, result(json::object(), json::array({r})));
  CHECK(j.kind.empty());
  CHECK(j.sentence.find("not judged") == 0);
}

TEST_CASE("the culprit's graph nodes: what it writes first computes, less what earlier sites computed") {
  WrapperInfo w;
  CallSite a;
  a.index = 1;
  a.kernel = "aoti_torch_cpu_addmm_out";
  a.args = {"buf6", "v_bias"};
  CallSite b;
  b.index = 2;
  b.kernel = "cpp_fused__softmax_0";
  b.args = {"buf7", "arg9_1", "buf3"};
  b.in_out = {0};
  CallSite c;
  c.index = 3;
  c.kernel = "aoti_torch_cpu_bmm_out";
  c.args = {"buf8", "buf7", "view of buf6"};
  w.call_sites = {a, b, c};
  json map = {{"buffers",
               {{"buf6", {{"nodes", {"linear_2"}}, {"computes", {"linear_2"}}}},
                {"buf3", {{"nodes", json::array()}, {"computes", {"softmax", "masked_fill"}}}},
                {"buf7", {{"nodes", json::array()}, {"computes", {"softmax"}}}},
                {"buf8", {{"nodes", {"matmul_1"}}, {"computes", {"matmul_1", "softmax", "linear_2"}}}}}}};
  CHECK(culprit_graph_nodes(w, 3, "aoti_torch_cpu_bmm_out", map) == std::vector<std::string>{"matmul_1"});
  auto fused = culprit_graph_nodes(w, 2, "cpp_fused__softmax_0", map);
  CHECK(fused == std::vector<std::string>{"softmax", "masked_fill"});
  CHECK(culprit_graph_nodes(w, 9, "unknown", map).empty());
  CHECK(culprit_graph_nodes(w, 3, "aoti_torch_cpu_bmm_out", json::object()).empty());
}
