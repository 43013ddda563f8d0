// report.json's culprit and search: the culprit's evidence and root cause, the bisection's steps and sites.

#include <nlohmann/json.hpp>

#include "protocol/values.hpp"
#include "report/sink_json.hpp"

namespace aoti_bisect::report_json {

namespace {

Json stats_or_null(const std::optional<TensorStats>& s) {
  return s ? stats_json(*s) : Json(nullptr);
}

// null when the evidence decided nothing and nothing is to be said of why.
Json root_cause_json(const RootCause& r) {
  if (r.sentence.empty() && r.note.empty()) {
    return nullptr;
  }
  Json steps = Json::array();
  for (const auto& st : r.intermediates) {
    Json element = Json::object();
    for (const auto& [name, value] : st.element) {
      element[name] = value;
    }
    Json operands = Json::array();
    for (const auto& [name, value] : st.operands) {
      operands.push_back(Json{{"name", name}, {"value", value}});
    }
    steps.push_back(
        Json{{"expression", st.expression},
             {"made", st.kind},
             {"value", st.value},
             {"element", std::move(element)},
             {"output", st.output_tensor.empty() ? Json(nullptr)
                                                 : Json{{"tensor", st.output_tensor}, {"index", st.output_index}}},
             {"operands", std::move(operands)},
             {"times", st.elements},
             {"operation", text_or_null<Json>(st.operation)},
             {"op", text_or_null<Json>(st.op)}});
  }
  return Json{{"sentence", text_or_null<Json>(r.sentence)},
              {"basis", text_or_null<Json>(r.basis)},
              {"operation", text_or_null<Json>(r.operation)},
              {"op", text_or_null<Json>(r.op)},
              {"intermediate", steps.empty() ? Json(nullptr) : steps.front()},
              {"intermediates", std::move(steps)},
              {"note", text_or_null<Json>(r.note)}};
}

Json producer_json(const std::optional<Producer>& p) {
  if (!p) {
    return nullptr;
  }
  return Json{{"tensor", text_or_null<Json>(p->tensor)},
              {"call_index", value_or_null(p->call_index)},
              {"kernel", text_or_null<Json>(p->kernel)},
              {"why", text_or_null<Json>(p->why)}};
}

Json source_lines_json(const std::vector<SourceLine>& lines) {
  Json out = Json::array();
  for (const auto& l : lines) {
    out.push_back(Json{{"file", l.file},
                       {"line", l.line},
                       {"function", text_or_null<Json>(l.function)},
                       {"code", text_or_null<Json>(l.code)},
                       {"module", text_or_null<Json>(l.module)}});
  }
  return out;
}

Json graph_nodes_json(const std::vector<GraphNodeRef>& refs) {
  Json nodes = Json::array();
  for (const auto& n : refs) {
    nodes.push_back(Json{{"name", n.name},
                         {"op", text_or_null<Json>(n.op)},
                         {"source", text_or_null<Json>(n.source)},
                         {"code", text_or_null<Json>(n.code)}});
  }
  return nodes;
}

Json divergence_json(const std::optional<Divergence>& d) {
  if (!d) {
    return nullptr;
  }
  return Json{{"tensor", text_or_null<Json>(d->tensor)},
              {"dtype", text_or_null<Json>(d->dtype)},
              {"graph_nodes", graph_nodes_json(d->nodes)},
              {"compared_with", text_or_null<Json>(d->compared_with)},
              {"folded", d->folded},
              {"max_abs_error", number(d->max_abs_error)},
              {"max_rel_error", number(d->max_rel_error)},
              {"scale", number(d->scale)},
              {"nonfinite_mismatches", d->nonfinite},
              {"atol", number(d->atol)},
              {"rtol", number(d->rtol)},
              {"allowed_abs_error", number(d->atol + d->rtol * d->scale)},
              {"worst_index", d->worst_index},
              {"worst_actual", text_or_null<Json>(d->actual)},
              {"worst_expected", text_or_null<Json>(d->expected)},
              {"inputs_compared", d->inputs_compared},
              {"inputs_worst_ratio", number(d->inputs_worst_ratio)}};
}

Json run_to_run_json(const std::vector<RunDifference>& diffs) {
  Json out = Json::array();
  for (const auto& d : diffs) {
    out.push_back(Json{{"tensor", text_or_null<Json>(d.tensor)},
                       {"dtype", text_or_null<Json>(d.dtype)},
                       {"elements", d.elements},
                       {"differing", d.differ},
                       {"max_abs_difference", number(d.max_abs)},
                       {"worst_index", d.worst_index},
                       {"first_run", text_or_null<Json>(d.first)},
                       {"second_run", text_or_null<Json>(d.second)}});
  }
  return out;
}

Json sanitizer_json(const std::optional<SanitizerPass>& p) {
  if (!p) {
    return nullptr;
  }
  Json errors = Json::array();
  for (const auto& e : p->errors) {
    errors.push_back(Json{{"what", e.what},
                          {"kernel", text_or_null<Json>(e.kernel)},
                          {"thread", text_or_null<Json>(e.thread)},
                          {"block", text_or_null<Json>(e.block)},
                          {"address", text_or_null<Json>(e.address)},
                          {"buffer", text_or_null<Json>(e.buffer)},
                          {"note", text_or_null<Json>(e.note)}});
  }
  return Json{{"run", text_or_null<Json>(p->run)},
              {"command", text_or_null<Json>(p->command)},
              {"errors", std::move(errors)},
              {"note", text_or_null<Json>(p->note)}};
}

Json healed_json(const std::vector<HealedSite>& healed) {
  Json out = Json::array();
  for (const auto& h : healed) {
    out.push_back(Json{{"call_index", h.call_index},
                       {"kernel", text_or_null<Json>(h.kernel)},
                       {"tensor", text_or_null<Json>(h.tensor)},
                       {"nan_count", h.nan_count},
                       {"inf_count", h.inf_count},
                       {"by_design", h.by_design},
                       {"last_read_by", value_or_null(h.last_read_by)},
                       {"last_read_kernel", text_or_null<Json>(h.last_read_kernel)},
                       {"cleaned", h.cleaned},
                       {"note", text_or_null<Json>(h.note)}});
  }
  return out;
}

Json other_origins_json(const std::vector<OtherOrigin>& others) {
  Json out = Json::array();
  for (const auto& o : others) {
    out.push_back(Json{{"call_index", o.call_index},
                       {"kernel", text_or_null<Json>(o.kernel)},
                       {"outputs", o.outputs},
                       {"source", text_or_null<Json>(o.source)},
                       {"note", text_or_null<Json>(o.note)}});
  }
  return out;
}

Json judgement_json(const std::optional<Judgement>& j) {
  if (!j) {
    return nullptr;
  }
  Json outputs = Json::array();
  for (const auto& o : j->outputs) {
    outputs.push_back(Json{{"index", o.index},
                           {"dtype", o.dtype},
                           {"numel", o.numel},
                           {"eager_rmse", number(o.eager_rmse)},
                           {"package_rmse", o.package_measured ? number(o.package_rmse) : Json(nullptr)},
                           {"fp64_rms", number(o.fp64_rms)},
                           {"eager_nonfinite", o.eager_nonfinite},
                           {"package_nonfinite", o.package_measured ? Json(o.package_nonfinite) : Json(nullptr)},
                           {"fp64_nonfinite", o.fp64_nonfinite},
                           {"eager_beyond_tolerance", o.eager_beyond},
                           {"package_beyond_tolerance", o.package_measured ? Json(o.package_beyond) : Json(nullptr)},
                           {"multiplier", number(o.multiplier)}});
  }
  return Json{{"kind", text_or_null<Json>(j->kind)},
              {"sentence", j->sentence},
              {"eager_node", j->eager_node.name.empty() ? Json(nullptr) : graph_nodes_json({j->eager_node})[0]},
              {"eager_node_in_culprit", j->eager_node_in_culprit},
              {"holder", text_or_null<Json>(j->holder)},
              {"culprit_nodes", j->culprit_nodes},
              {"alone", j->alone.empty() ? Json(nullptr)
                                         : Json{{"verdict", j->alone},
                                                {"sentence", j->alone_sentence},
                                                {"upstream_node", text_or_null<Json>(j->amplified_node)},
                                                {"upstream_site", text_or_null<Json>(j->amplified_site)}}},
              {"outputs", std::move(outputs)},
              {"fp64", Json{{"widened_inputs", j->widened_inputs},
                            {"widened_parameters", j->widened_parameters},
                            {"kept_dtypes", j->kept_dtypes}}},
              {"seconds", number(j->seconds)}};
}

}  // namespace

Json masked_json(const std::optional<std::vector<HealedSite>>& masked) {
  return masked ? healed_json(*masked) : Json(nullptr);
}

Json culprit_json(const std::optional<Culprit>& c) {
  if (!c) {
    return nullptr;
  }
  Json args = Json::array();
  for (const auto& a : c->args) {
    args.push_back(Json{{"tensor", text_or_null<Json>(a.tensor)},
                        {"initialized", a.initialized},
                        {"fqn", text_or_null<Json>(a.fqn)},
                        {"origin", text_or_null<Json>(a.origin)},
                        {"before", stats_or_null(a.before)},
                        {"after", stats_or_null(a.after)}});
  }
  return Json{{"call_index", c->call_index},
              {"kernel", text_or_null<Json>(c->kernel)},
              {"kind", text_or_null<Json>(c->kind)},
              {"phase", text_or_null<Json>(c->phase)},
              {"source_nodes", text_or_null<Json>(c->source_nodes)},
              {"branch", text_or_null<Json>(c->branch)},
              {"why", text_or_null<Json>(c->why)},
              {"root_cause", root_cause_json(c->root_cause)},
              {"unwritten", text_or_null<Json>(c->unwritten)},
              {"args", std::move(args)},
              {"producer", producer_json(c->producer)},
              {"divergence", divergence_json(c->divergence)},
              {"run_to_run", run_to_run_json(c->run_to_run)},
              {"sanitizer", sanitizer_json(c->sanitizer)},
              {"graph_nodes", graph_nodes_json(c->graph_nodes)},
              {"source_lines", source_lines_json(c->source_lines)},
              {"judgement", judgement_json(c->judgement)}};
}

Json passed_over_json(const std::vector<PassedOver>& items) {
  Json out = Json::array();
  for (const auto& p : items) {
    out.push_back(Json{{"source", p.source}, {"why", p.why}});
  }
  return out;
}

Json bisection_json(const std::optional<Bisection>& b) {
  if (!b) {
    return nullptr;
  }
  Json steps = Json::array();
  for (const auto& s : b->steps) {
    steps.push_back(Json{{"lo", s.lo},
                         {"hi", s.hi},
                         {"purpose", text_or_null<Json>(s.purpose)},
                         {"verdict", text_or_null<Json>(s.verdict)},
                         {"runs", s.runs},
                         {"agreeing", s.agreeing},
                         {"note", text_or_null<Json>(s.note)}});
  }
  Json sites = Json::array();
  for (const auto& site : b->sites) {
    Json j{{"index", site.index}, {"kernel", site.kernel}, {"kind", site.kind}};
    if (!site.branch.empty()) {
      j["branch"] = site.branch;  // only inside a subgraph: the list stays short for big models
    }
    if (!site.source.empty()) {
      j["source"] = site.source;  // only where the package carries provenance
    }
    sites.push_back(std::move(j));
  }
  Json unmapped = Json::array();
  for (const auto& u : b->unmapped) {
    unmapped.push_back(Json{
        {"call_index", u.call_index}, {"kernel", text_or_null<Json>(u.kernel)}, {"why", text_or_null<Json>(u.why)}});
  }
  Json honest = nullptr;
  if (b->largest_within) {
    const HonestError& h = *b->largest_within;
    honest = Json{{"call_index", h.call_index},
                  {"kernel", text_or_null<Json>(h.kernel)},
                  {"tensor", text_or_null<Json>(h.tensor)},
                  {"dtype", text_or_null<Json>(h.dtype)},
                  {"max_abs_error", number(h.max_abs_error)},
                  {"max_rel_error", number(h.max_rel_error)},
                  {"ratio_to_allowed", number(h.ratio)}};
  }
  return Json{{"source", text_or_null<Json>(b->source)},
              {"sources_passed_over", passed_over_json(b->passed_over)},
              {"strategy", text_or_null<Json>(b->strategy)},
              {"mapped_sites", value_or_null(b->mapped_sites)},
              {"unmapped", std::move(unmapped)},
              {"largest_within_tolerance", std::move(honest)},
              {"status", text_or_null<Json>(b->status)},
              {"predicate", text_or_null<Json>(b->predicate)},
              {"variant", text_or_null<Json>(b->variant)},
              {"call_sites", b->call_sites},
              {"planned_runs", b->planned_runs},
              {"runs", b->runs},
              {"message", text_or_null<Json>(b->message)},
              {"self_check", text_or_null<Json>(b->self_check)},
              {"reach", text_or_null<Json>(b->reach)},
              {"healed", healed_json(b->healed)},
              {"other_origins", other_origins_json(b->other_origins)},
              {"steps", std::move(steps)},
              {"sites", std::move(sites)}};
}

}  // namespace aoti_bisect::report_json
