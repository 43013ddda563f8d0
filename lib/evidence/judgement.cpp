// Whose bug the culprit is, from the judge's figures (judgement.hpp).
#include "evidence/judgement.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"

namespace aoti_bisect {
namespace {

using Json = nlohmann::json;

std::string bare_buffer(std::string name) {
  const std::string view = "view of ";
  if (name.rfind(view, 0) == 0) {
    name = name.substr(view.size());
  }
  return name;
}

// Every tensor a call site names: its arguments, list elements and returns.
std::vector<std::string> site_tensors(const CallSite& site) {
  std::vector<std::string> out;
  for (const auto& a : site.args) {
    if (!a.empty()) {
      out.push_back(bare_buffer(a));
    }
  }
  for (const auto& list : site.elements) {
    for (const auto& e : list) {
      if (!e.empty()) {
        out.push_back(bare_buffer(e));
      }
    }
  }
  out.insert(out.end(), site.returns.begin(), site.returns.end());
  return out;
}

std::vector<std::string> strings_of(const Json& j) {
  std::vector<std::string> out;
  if (j.is_array()) {
    for (const auto& v : j) {
      if (v.is_string()) {
        out.push_back(v.get<std::string>());
      }
    }
  }
  return out;
}

std::optional<double> figure(const Json& j) {
  if (j.is_number()) {
    return j.get<double>();
  }
  return std::nullopt;  // "nan", "inf", null
}

int64_t json_count(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::string fig(std::optional<double> v) { return v ? fmt::format("{:.3g}", *v) : std::string("NaN/Inf"); }

JudgedOutput output_from(const Json& row) {
  JudgedOutput o;
  o.index = row.value("index", 0);
  o.dtype = row.value("dtype", "");
  o.numel = row.value("numel", int64_t{0});
  o.fp64_rms = figure(row.value("fp64_rms", Json()));
  o.fp64_nonfinite = json_count(row, "fp64_nan") + json_count(row, "fp64_inf");
  const Json& e = row.contains("eager") ? row["eager"] : Json::object();
  o.eager_rmse = figure(e.value("rmse", Json()));
  o.eager_nonfinite = json_count(e, "nan") + json_count(e, "inf");
  o.eager_beyond = json_count(e, "beyond_tolerance");
  if (row.contains("package") && row["package"].is_object()) {
    const Json& p = row["package"];
    o.package_measured = true;
    o.package_rmse = figure(p.value("rmse", Json()));
    o.package_nonfinite = json_count(p, "nan") + json_count(p, "inf");
    o.package_beyond = json_count(p, "beyond_tolerance");
  }
  // torch._dynamo.utils.same: 3 for half precision and small tensors, else 2.
  o.multiplier = (o.dtype == "float16" || o.dtype == "bfloat16" || o.numel < 1000) ? 3.0 : 2.0;
  return o;
}

GraphNodeRef node_from(const Json& j) {
  return GraphNodeRef{j.value("node", ""), j.value("op", ""), j.value("source", ""), j.value("code", "")};
}

std::string judged_node_text(const GraphNodeRef& n) {
  std::string out = "graph node `" + n.name + "`";
  std::vector<std::string> parts;
  if (!n.op.empty()) {
    parts.push_back(n.op);
  }
  if (!n.source.empty()) {
    parts.push_back(n.source);
  }
  return parts.empty() ? out : out + " (" + join(parts, ", ") + ")";
}

bool far(std::optional<double> rmse, std::optional<double> rms) {
  return !rmse || (rms && *rmse > k_far_share * *rms);
}

// A mismatch, or NaN/Inf eager does not make: eager's and the package's
// errors against float64, output by output, the worst for the package first.
void judge_by_float64(Judgement& j) {
  const JudgedOutput* worst = nullptr;
  double worst_ratio = -1;
  for (const auto& o : j.outputs) {
    if (!o.package_measured) {
      continue;
    }
    double allowed = o.multiplier * o.eager_rmse.value_or(0) + k_minifier_tol / 10;
    double ratio = o.package_rmse ? *o.package_rmse / allowed : INFINITY;
    if (!o.eager_rmse && !o.package_rmse) {
      ratio = 0;
    }
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = &o;
    }
  }
  if (worst == nullptr) {
    j.sentence = "not judged: the package's outputs were not saved, so they cannot be measured against float64";
    return;
  }
  const JudgedOutput& o = *worst;
  const std::string out = fmt::format("output {}", o.index);
  const std::string figures =
      fmt::format("rmse against float64: package {}, eager {}", fig(o.package_rmse), fig(o.eager_rmse));
  if (o.fp64_nonfinite > 0 && (!o.eager_rmse || !o.package_rmse)) {
    j.kind = "numerics";
    j.sentence = fmt::format("numerics: float64 makes {} NaN/Inf in {} too; eager holds {}, the package {}",
                             o.fp64_nonfinite, out, o.eager_nonfinite, o.package_nonfinite);
    return;
  }
  if (!o.eager_rmse && o.package_rmse) {
    j.kind = "numerics";
    j.sentence = fmt::format(
        "numerics: eager makes {} NaN/Inf in {} that float64 does not, the package none; the package is closer to "
        "float64 ({})",
        o.eager_nonfinite, out, figures);
    return;
  }
  if (far(o.eager_rmse, o.fp64_rms) && far(o.package_rmse, o.fp64_rms)) {
    j.kind = "numerics";
    j.sentence = fmt::format(
        "numerics: eager and the package are both far from float64 in {} ({}; float64's own rms {}, far past "
        "{:g}% of it): an ill-conditioned computation",
        out, figures, fig(o.fp64_rms), k_far_share * 100);
    return;
  }
  const double allowed = o.multiplier * o.eager_rmse.value_or(0) + k_minifier_tol / 10;
  if (o.package_rmse && *o.package_rmse <= allowed) {
    j.kind = "numerics";
    j.sentence = fmt::format(
        "numerics: the package is no further from float64 than eager in {} ({}; the minifier's rule allows {:g} x "
        "eager + {:g} = {:.3g})",
        out, figures, o.multiplier, k_minifier_tol / 10, allowed);
    return;
  }
  j.kind = "compiler";
  if (!o.package_rmse) {
    j.sentence = fmt::format("compiler: eager and float64 make no NaN/Inf in {}; the package makes {} ({})", out,
                             o.package_nonfinite, figures);
    return;
  }
  j.sentence = fmt::format(
      "compiler: the package is further from float64 than eager in {} ({}; the minifier's rule allows {:g} x eager "
      "+ {:g} = {:.3g}), with {} of {} elements out of tolerance against float64 where eager has {}",
      out, figures, o.multiplier, k_minifier_tol / 10, allowed, o.package_beyond, o.numel, o.eager_beyond);
}

bool is_fault(OutcomeKind k) {
  return k == OutcomeKind::crash || k == OutcomeKind::device_assert || k == OutcomeKind::error;
}

// Eager raised: the same failure for a fault, else nothing to compare.
void judge_raise(Judgement& j, OutcomeKind failure, const Json& raised) {
  j.eager_node = node_from(raised);
  j.eager_node_in_culprit = raised.value("in_culprit", false);
  const std::string line = raised.value("line", "");
  const std::string at =
      j.eager_node.name.empty() ? std::string("eager") : "eager, at " + judged_node_text(j.eager_node);
  if (!is_fault(failure)) {
    j.sentence = fmt::format("not judged: {} raised on these inputs ({}), so its outputs cannot be compared", at,
                             line);
    return;
  }
  const Json& index_input = raised.contains("index_input") ? raised["index_input"] : Json();
  if (index_input.is_string()) {
    j.kind = "data";
    j.holder = index_input.get<std::string>();
    j.sentence = fmt::format("data: {} raises too ({}), on indices read straight from input `{}`", at, line,
                             j.holder);
    return;
  }
  j.kind = "model";
  j.sentence = fmt::format("model: {} raises too ({}){}", at, line,
                           j.eager_node_in_culprit ? ", one of the culprit's own nodes" : "");
}

void judge_nonfinite(Judgement& j, const Json& eager, const Json& fp64) {
  if (eager.contains("holds")) {
    const Json& h = eager["holds"];
    j.kind = "data";
    std::string what = h.value("kind", "") == "input" ? "input" : "parameter or constant";
    j.holder = h.value("kind", "") == "input" ? h.value("node", "") : h.value("target", "");
    j.sentence = fmt::format("data: {} `{}` holds {} NaN and {} Inf before any graph node runs; eager carries them "
                             "on too",
                             what, j.holder, h.value("nan", 0), h.value("inf", 0));
    return;
  }
  const int64_t fp64_bad = json_count(fp64, "outputs_nan") + json_count(fp64, "outputs_inf");
  if (eager.contains("made")) {
    const Json& m = eager["made"];
    j.eager_node = node_from(m);
    j.eager_node_in_culprit = m.value("in_culprit", false);
    const std::string what = m.value("what", "NaN");
    const std::string made =
        what == "NaN" ? fmt::format("{} NaN from operands without NaN", m.value("nan", 0))
                      : fmt::format("{} Inf from finite operands", m.value("inf", 0));
    const std::string in_fp64 = fp64_bad > 0 ? fmt::format("; float64 makes {} in the outputs too", fp64_bad)
                                             : std::string("; float64 makes none in the outputs");
    if (j.eager_node_in_culprit) {
      j.kind = "model";
      j.sentence = fmt::format("model: eager makes the same {} at {}, one of the culprit's nodes ({}){}", what,
                               judged_node_text(j.eager_node), made, in_fp64);
      return;
    }
    if (fp64_bad > 0) {
      j.kind = "model";
      j.sentence = fmt::format("model: eager makes NaN/Inf too, first at {} ({}){}{}",
                               judged_node_text(j.eager_node), made, in_fp64,
                               j.culprit_nodes.empty() ? "; the culprit's own graph nodes are not known"
                                                       : "; that node is not one the culprit computes");
      return;
    }
    j.kind = "numerics";
    j.sentence = fmt::format("numerics: eager makes NaN/Inf at {} ({}) and the package at its culprit, but float64 "
                             "makes none: a precision limit both reach",
                             judged_node_text(j.eager_node), made);
    return;
  }
  judge_by_float64(j);
}

}  // namespace

std::vector<std::string> culprit_graph_nodes(const WrapperInfo& wrapper, int call_index, const std::string& kernel,
                                             const Json& node_map) {
  const auto& sites = wrapper.call_sites;
  auto at = std::find_if(sites.begin(), sites.end(),
                         [&](const CallSite& s) { return s.index == call_index && s.kernel == kernel; });
  if (at == sites.end()) {
    at = std::find_if(sites.begin(), sites.end(), [&](const CallSite& s) { return s.kernel == kernel; });
  }
  const Json& buffers = node_map.contains("buffers") ? node_map["buffers"] : Json::object();
  if (at == sites.end() || !buffers.is_object()) {
    return {};
  }
  std::set<std::string> seen_before, computed_before;
  for (auto it = sites.begin(); it != at; ++it) {
    for (const auto& t : site_tensors(*it)) {
      if (seen_before.insert(t).second && buffers.contains(t)) {
        for (const auto& n : strings_of(buffers[t].value("computes", Json()))) {
          computed_before.insert(n);
        }
      }
    }
  }
  std::set<std::string> written;
  for (const auto& t : site_tensors(*at)) {
    if (!seen_before.count(t)) {
      written.insert(t);
    }
  }
  for (int pos : at->in_out) {
    if (pos >= 0 && pos < static_cast<int>(at->args.size()) && !at->args[pos].empty()) {
      written.insert(bare_buffer(at->args[pos]));
    }
  }
  std::vector<std::string> out;
  for (const auto& b : written) {
    if (!buffers.contains(b)) {
      continue;
    }
    for (const auto& n : strings_of(buffers[b].value("computes", Json()))) {
      if (!computed_before.count(n) && std::find(out.begin(), out.end(), n) == out.end()) {
        out.push_back(n);
      }
    }
  }
  return out;
}

Judgement judgement_from(OutcomeKind failure, const Json& result) {
  Judgement j;
  j.seconds = result.value("seconds", 0.0);
  const Json& eager = result.contains("eager") ? result["eager"] : Json::object();
  const Json& fp64 = result.contains("fp64") ? result["fp64"] : Json::object();
  if (result.contains("culprit")) {
    j.culprit_nodes = strings_of(result["culprit"].value("nodes", Json()));
  }
  for (const auto& row : result.value("outputs", Json::array())) {
    j.outputs.push_back(output_from(row));
  }
  j.widened_inputs = fp64.value("widened_inputs", 0);
  j.widened_parameters = fp64.value("widened_parameters", 0);
  j.kept_dtypes = strings_of(fp64.value("kept", Json()));
  if (eager.contains("raised")) {
    judge_raise(j, failure, eager["raised"]);
    return j;
  }
  if (is_fault(failure)) {
    j.sentence = "not judged: eager runs these inputs without raising, and a fault is not measured against float64";
    return j;
  }
  if (failure != OutcomeKind::nonfinite && failure != OutcomeKind::mismatch) {
    j.sentence = fmt::format("not judged: a {} failure is not measured against float64",
                             std::string(outcome_name(failure)));
    return j;
  }
  if (fp64.contains("raised")) {
    j.sentence = fmt::format("not judged: the float64 run raised ({})", fp64.value("raised", ""));
    return j;
  }
  if (failure == OutcomeKind::nonfinite) {
    judge_nonfinite(j, eager, fp64);
  } else {
    judge_by_float64(j);
  }
  return j;
}

std::string call_site_computing(const WrapperInfo& wrapper, const Json& node_map, const std::string& node) {
  for (const auto& site : wrapper.call_sites) {
    auto nodes = culprit_graph_nodes(wrapper, site.index, site.kernel, node_map);
    if (std::find(nodes.begin(), nodes.end(), node) != nodes.end()) {
      return fmt::format("call site {} {}", site.index, site.kernel);
    }
  }
  return "";
}

void judge_alone(Judgement& j, const Json& up, const WrapperInfo& wrapper, const Json& node_map) {
  const Json& alone = up.contains("alone") ? up["alone"] : Json();
  if (!alone.is_number_integer()) {
    return;
  }
  const size_t n = j.culprit_nodes.size();
  const std::string nodes = n == 1 ? "its graph node" : fmt::format("its {} graph nodes", n);
  const std::string differ = n == 1 ? "differs" : "differ";
  const std::string match = n == 1 ? "matches" : "match";
  if (alone.get<int>() == 1) {
    j.alone = "wrong_on_its_own";
    j.alone_sentence = fmt::format(
        "wrong on its own: {}, compiled alone on eager's values of {} inputs, {} from eager beyond tolerance", nodes,
        n == 1 ? "its" : "their", differ);
    return;
  }
  if (alone.get<int>() != 0) {
    return;  // the script could not run: the upstream note says why
  }
  if (!up.value("reproduced", false) || !up.contains("farthest") || !up["farthest"].is_string()) {
    j.alone = "amplifies";
    j.alone_sentence = fmt::format(
        "right on eager's inputs: {}, compiled alone on eager's values of {} inputs, {} eager within tolerance; "
        "no upstream subgraph compiled with {} showed the difference",
        nodes, n == 1 ? "its" : "their", match, n == 1 ? "it" : "them");
    return;
  }
  j.alone = "amplifies";
  j.amplified_node = up["farthest"].get<std::string>();
  j.amplified_site = call_site_computing(wrapper, node_map, j.amplified_node);
  j.alone_sentence = fmt::format(
      "amplifies an earlier difference: {}, compiled alone on eager's values of {} inputs, {} eager within "
      "tolerance; the difference shows once graph node `{}`{} is compiled with {} ({} upstream nodes added)",
      nodes, n == 1 ? "its" : "their", match, j.amplified_node,
      j.amplified_site.empty() ? "" : " (" + j.amplified_site + ")", n == 1 ? "it" : "them",
      up.contains("added") && up["added"].is_array() ? up["added"].size() : 0);
}

UpstreamRepro upstream_from(const Json& up, const std::string& script) {
  UpstreamRepro u;
  u.script = script;
  u.reproduced = up.value("reproduced", false);
  u.nodes = up.value("nodes", 0);
  u.graph_nodes = up.value("graph_nodes", 0);
  u.compile_seconds = up.value("compile_seconds", 0.0);
  u.tries = up.contains("tries") && up["tries"].is_array() ? static_cast<int>(up["tries"].size()) : 0;
  if (up.contains("note") && up["note"].is_string()) {
    u.note = up["note"].get<std::string>();
  }
  return u;
}

std::string needs_exported_program_to_judge() {
  return "not judged: give --exported-program EP.pt2 to tell a model bug from a compiler bug (eager and float64 "
         "runs of the exported program tell them apart; the package alone holds no eager graph)";
}

}  // namespace aoti_bisect
