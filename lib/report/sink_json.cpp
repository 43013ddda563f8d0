// report.json: the machine-readable report (design.md "Contracts"). Unknown
// or absent values are null, never "". Non-finite numbers are the strings
// "nan", "inf", "-inf" (JSON has no literal for them). Tensor values never
// appear, only their statistics.

#include "report/sink_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/text.hpp"
#include "protocol/values.hpp"
#include "report/sink_text.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect {

namespace report_json {

Json number(double v) {
  if (auto text = nonfinite_text(v)) {
    return *text;
  }
  return v;
}

Json number(const std::optional<double>& v) {
  return v ? number(*v) : Json(nullptr);
}

Json stats_json(const TensorStats& s) {
  return Json{{"name", s.name},           {"dtype", s.dtype},
              {"shape", s.shape},         {"numel", s.numel},
              {"nan_count", s.nan_count}, {"inf_count", s.inf_count},
              {"min", number(s.min)},     {"max", number(s.max)},
              {"mean", number(s.mean)},   {"checksum", text_or_null<Json>(s.checksum)}};
}

}  // namespace report_json

namespace {

using namespace report_json;

Json env_json(const std::map<std::string, std::string>& env) {
  Json out = Json::object();
  for (const auto& [key, value] : env) {
    out[key] = value;
  }
  return out;
}

Json environment_json(const Report& r) {
  const Environment& e = r.environment;
  return Json{
      {"torch_version", text_or_null<Json>(e.torch_version)},
      {"python_version", text_or_null<Json>(e.python_version)},
      {"cuda_version", text_or_null<Json>(e.cuda_version)},
      {"hip_version", text_or_null<Json>(e.hip_version)},
      {"device", text_or_null<Json>(e.device)},
      {"device_name", text_or_null<Json>(e.device_name)},
      {"driver_version", text_or_null<Json>(e.driver_version)},
      {"os", text_or_null<Json>(e.os)},
      {"git_revision", text_or_null<Json>(e.git_revision)},
  };
}

Json package_json(const PackageSummary& p) {
  return Json{
      {"path", text_or_null<Json>(p.path)},
      {"sha256", text_or_null<Json>(p.sha256)},
      {"models", p.models},
      {"model", text_or_null<Json>(p.model)},
      {"device_key", text_or_null<Json>(p.device_key)},
      {"metadata", env_json(p.metadata)},
      {"torch_version", text_or_null<Json>(p.torch_version)},
      {"torch_dir", text_or_null<Json>(p.torch_dir)},
      {"torch_libraries", p.torch_libraries},
      {"call_sites", p.call_sites},
      {"instrumented", p.instrumented},
      {"has_exported_program", p.has_exported_program},
  };
}

Json minimal_json(const std::optional<MinimalInputs>& m) {
  if (!m) {
    return Json(nullptr);
  }
  return Json{{"samples", m->samples},
              {"of", m->of},
              {"alone", m->alone},
              {"none_alone", m->none_alone},
              {"minimal", m->minimal},
              {"repeated_to", m->repeated_to > 0 ? Json(m->repeated_to) : Json(nullptr)},
              {"runs", m->runs},
              {"how", m->how},
              {"file", text_or_null<Json>(m->file)},
              {"reference", text_or_null<Json>(m->reference)},
              {"sentence", m->sentence},
              {"facts", m->facts}};
}

Json sample_in_company_json(const SampleInCompany& c) {
  Json site = nullptr;
  if (c.site) {
    site = Json{{"call_index", *c.site},
                {"kernel", c.kernel},
                {"tensor", c.tensor},
                {"whole_batch", c.whole_batch},
                {"rows_dim", c.rows_dim >= 0 ? Json(c.rows_dim) : Json(nullptr)},
                {"differ", c.differ},
                {"elements", c.elements},
                {"nonfinite", c.nonfinite},
                {"max_abs", c.max_abs},
                {"tolerance", c.bound},
                {"in_batch", c.in_batch},
                {"alone", c.alone}};
  }
  return Json{{"sample", c.sample},
              {"in_trigger", c.in_trigger},
              {"alone_batch", c.alone_batch},
              {"sites_compared", c.sites_compared},
              {"tensors_compared", c.tensors_compared},
              {"tensors_not_compared", c.tensors_not_compared},
              {"first_site", std::move(site)}};
}

Json batch_dependence_json(const Report& r) {
  if (!r.batch_dependence) {
    return r.batch_dependence_note.empty() ? Json(nullptr)
                                           : Json{{"finding", nullptr}, {"note", r.batch_dependence_note}};
  }
  const BatchDependence& b = *r.batch_dependence;
  Json samples = Json::array();
  for (const auto& c : b.samples) {
    samples.push_back(sample_in_company_json(c));
  }
  Json detailed = nullptr;
  Json first_site = nullptr;
  if (b.detailed && *b.detailed < b.samples.size()) {
    Json d = sample_in_company_json(b.samples[*b.detailed]);
    detailed = d["sample"];
    first_site = d["first_site"];
  }
  return Json{{"finding", b.dependent ? Json("batch_dependent") : Json(nullptr)},
              {"batch", b.batch},
              {"repeated", b.repeated},
              {"fails_only_in_company", b.fails_only_in_company},
              {"samples", std::move(samples)},
              {"sample", std::move(detailed)},
              {"first_site", std::move(first_site)},
              {"runs", b.runs},
              {"sentence", b.sentence},
              {"note", text_or_null<Json>(r.batch_dependence_note)}};
}

Json inputs_json(const Report& r) {
  Json tensors = Json::array();
  for (const auto& t : r.inputs) {
    tensors.push_back(Json{{"name", t.name},
                           {"dtype", t.dtype},
                           {"shape", t.shape},
                           {"strides", t.strides},
                           {"storage_offset", t.storage_offset},
                           {"argument", text_or_null<Json>(t.argument)},
                           {"device", t.device},
                           {"sha256", text_or_null<Json>(t.sha256)},
                           {"nan_count", t.nan_count},
                           {"inf_count", t.inf_count},
                           {"first_nonfinite", t.first_nonfinite.empty() ? Json(nullptr) : Json(t.first_nonfinite)}});
  }
  return Json{{"path", text_or_null<Json>(r.inputs_path)},
              {"sha256", text_or_null<Json>(r.inputs_sha256)},
              {"format", text_or_null<Json>(r.inputs_format)},
              {"read_as", r.inputs_read_as},
              {"origin", text_or_null<Json>(r.inputs_origin)},
              {"binding", text_or_null<Json>(r.inputs_binding)},
              {"outside_compiled_range", r.inputs_outside_range},
              {"minimal", minimal_json(r.minimal_inputs)},
              {"shrink_note", text_or_null<Json>(r.shrink_note)},
              {"batch_dependence", batch_dependence_json(r)},
              {"tensors", std::move(tensors)}};
}

Json comparison_json(const std::optional<Comparison>& c) {
  if (!c) {
    return nullptr;
  }
  return Json{{"within_tolerance", c->within_tolerance},
              {"atol", number(c->atol)},
              {"rtol", number(c->rtol)},
              {"max_abs_error", number(c->max_abs_error)},
              {"max_rel_error", number(c->max_rel_error)},
              {"mismatched", c->mismatched},
              {"total", c->total},
              {"worst_output", text_or_null<Json>(c->worst_output)},
              {"note", text_or_null<Json>(c->note)}};
}

Json run_json(const RunRecord& run) {
  Json outputs = Json::array();
  for (const auto& s : run.outputs) {
    outputs.push_back(stats_json(s));
  }
  return Json{
      {"id", run.id},
      {"group", run.group},
      {"variant", run.variant},
      {"repeat", run.repeat},
      {"env", env_json(run.env)},
      {"probe_plan", run.probe_plan},
      {"outcome", outcome_name(run.outcome)},
      {"exit", run.exit},
      {"exit_code", value_or_null(run.exit_code)},
      {"signal", value_or_null(run.signal)},
      {"signal_name", run.signal ? Json(report_text::signal_string(*run.signal)) : Json(nullptr)},
      {"core_dumped", run.core_dumped},
      {"seconds", number(run.seconds)},
      {"first_error_line", text_or_null<Json>(run.first_error_line)},
      {"outputs", std::move(outputs)},
      {"comparison", comparison_json(run.comparison)},
  };
}

Json matrix_json(const Report& r) {
  Json variants = Json::array();
  for (const auto& v : r.matrix) {
    variants.push_back(Json{{"name", v.name},
                            {"env", env_json(v.env)},
                            {"runs", v.runs},
                            {"reproduced", v.reproduced},
                            {"deterministic", v.deterministic},
                            {"rate", number(v.runs ? double(v.reproduced) / v.runs : 0.0)}});
  }
  Json chosen = r.failure ? text_or_null<Json>(r.failure->reproducing_variant) : Json(nullptr);
  Json findings = Json::array();
  for (const auto& f : r.findings) {
    findings.push_back(Json{{"variant", f.variant}, {"contrast", f.contrast}, {"sentence", f.sentence}});
  }
  return Json{{"variants", std::move(variants)}, {"chosen", std::move(chosen)}, {"findings", std::move(findings)}};
}

Json failure_json(const std::optional<Failure>& f) {
  if (!f) {
    return nullptr;
  }
  return Json{{"kind", outcome_name(f->kind)},
              {"first_line", text_or_null<Json>(f->first_line)},
              {"first_check", report_text::first_check(*f)},
              {"signal", value_or_null(f->signal)},
              {"reproducing_variant", text_or_null<Json>(f->reproducing_variant)},
              {"reproduced", f->reproduced},
              {"runs", f->runs},
              {"search_runs_counted", f->search_runs},
              {"deterministic", f->deterministic},
              {"signature", text_or_null<Json>(f->signature)},
              {"batch", f->batch ? Json{{"index", f->batch->index},
                                        {"file", f->batch->file},
                                        {"call", f->batch->calls ? Json(f->batch->index + 1) : Json(nullptr)},
                                        {"facts", f->batch->facts}}
                                 : Json(nullptr)}};
}

Json batches_json(const std::vector<BatchRecord>& batches) {
  Json out = Json::array();
  for (const auto& b : batches) {
    out.push_back(Json{{"index", b.index},
                       {"file", b.file},
                       {"outcome", b.outcome},
                       {"first_line", text_or_null<Json>(b.first_line)}});
  }
  return out;
}

Json coredump_json(const std::optional<CoreDumpReading>& d) {
  if (!d) {
    return nullptr;
  }
  auto opt_int = [](const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); };
  return Json{{"run", d->run},
              {"file", text_or_null<Json>(d->file)},
              {"exception", text_or_null<Json>(d->exception)},
              {"pc", text_or_null<Json>(d->pc)},
              {"kernel", text_or_null<Json>(d->kernel)},
              {"grid", text_or_null<Json>(d->grid)},
              {"block", text_or_null<Json>(d->block)},
              {"thread", text_or_null<Json>(d->thread)},
              {"launch", text_or_null<Json>(d->launch)},
              {"device", opt_int(d->device)},
              {"sm", opt_int(d->sm)},
              {"read_by_debugger", d->read_by_debugger},
              {"debugger_note", text_or_null<Json>(d->debugger_note)},
              {"call_sites", d->call_sites},
              {"agrees_with_search", d->agrees ? Json(*d->agrees) : Json(nullptr)}};
}

Json builds_json(const Builds& b) {
  Json items = Json::array();
  for (const auto& item : b.items) {
    items.push_back(Json{{"purpose", text_or_null<Json>(item.purpose)},
                         {"source", text_or_null<Json>(item.source)},
                         {"fidelity", text_or_null<Json>(item.fidelity)},
                         {"passed_over", passed_over_json(item.passed_over)},
                         {"key", text_or_null<Json>(item.key)},
                         {"cache_hit", item.cache_hit},
                         {"seconds", number(item.seconds)},
                         {"torch_version", text_or_null<Json>(item.torch_version)},
                         {"objects_compiled", value_or_null(item.objects_compiled)}});
  }
  return Json{{"count", b.count},
              {"cache_hits", b.cache_hits},
              {"seconds", number(b.seconds)},
              {"items", std::move(items)},
              {"call_sites_match", value_or_null(b.call_sites_match)},
              {"note", text_or_null<Json>(b.note)}};
}

Json upstream_json(const std::optional<UpstreamRepro>& u) {
  if (!u) {
    return nullptr;
  }
  return Json{{"script", text_or_null<Json>(u->script)},
              {"reproduced", u->reproduced},
              {"nodes", u->nodes},
              {"graph_nodes", u->graph_nodes},
              {"compile_seconds", number(u->compile_seconds)},
              {"tries", u->tries},
              {"issue", text_or_null<Json>(u->issue)},
              {"note", text_or_null<Json>(u->note)}};
}

Json repro_json(const std::optional<Reproducer>& r) {
  if (!r) {
    return nullptr;
  }
  return Json{{"dir", text_or_null<Json>(r->dir)},
              {"files", r->files},
              {"command", text_or_null<Json>(r->command)},
              {"replay", text_or_null<Json>(r->replay)},
              {"replay_note", text_or_null<Json>(r->replay_note)},
              {"upstream", upstream_json(r->upstream)}};
}

}  // namespace

std::string report_to_json(const Report& r) {
  Json j;
  j["schema_version"] = r.schema_version;
  j["tool"] =
      Json{{"name", "aoti-bisect"}, {"version", r.tool_version.empty() ? r.environment.tool_version : r.tool_version}};
  j["command_line"] = r.command_line;
  j["environment"] = environment_json(r);
  j["package"] = package_json(r.package);
  j["inputs"] = inputs_json(r);
  j["reference"] = text_or_null<Json>(r.reference_path);
  j["runs"] = Json::array();
  for (const auto& run : r.runs) {
    j["runs"].push_back(run_json(run));
  }
  j["run_counts"] = Json::object();  // runs[] by group: what every count the reports print adds up
  for (const auto& [group, n] : report_text::runs_by_group(r)) {
    j["run_counts"][group] = n;
  }
  j["batches"] = batches_json(r.batches);
  j["needs_history"] = r.needs_history ? Json(*r.needs_history) : Json(nullptr);
  j["batch_groups"] = Json::array();
  for (const auto& g : r.batch_groups) {
    j["batch_groups"].push_back(Json{{"signature", g.signature},
                                     {"kind", g.kind},
                                     {"first_line", text_or_null<Json>(g.first_line)},
                                     {"batches", g.batches}});
  }
  j["matrix"] = matrix_json(r);
  j["verdict"] = verdict_name(r.verdict);
  j["verdict_reason"] = text_or_null<Json>(r.verdict_reason);
  j["failure"] = failure_json(r.failure);
  j["culprit"] = culprit_json(r.culprit);
  j["bisection"] = bisection_json(r.bisection);
  j["masked"] = masked_json(r.masked);
  j["masked_note"] = text_or_null<Json>(r.masked_note);
  j["coredump"] = coredump_json(r.coredump);
  j["builds"] = builds_json(r.builds);
  j["phases"] = Json::array();
  for (const auto& p : r.phases) {
    j["phases"].push_back(Json{{"phase", p.phase}, {"seconds", number(p.seconds)}});
  }
  j["total_seconds"] = number(r.total_seconds);
  j["first_answer_seconds"] = r.first_answer_seconds ? number(*r.first_answer_seconds) : Json(nullptr);
  j["answer_confirmed_seconds"] = r.answer_confirmed_seconds ? number(*r.answer_confirmed_seconds) : Json(nullptr);
  j["reproduce_command"] = text_or_null<Json>(r.reproduce_command);
  j["repro"] = repro_json(r.repro);
  j["error"] = text_or_null<Json>(r.error);
  j["notes"] = r.notes;
  // Child output is not guaranteed UTF-8; a bad byte must not lose the report.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace aoti_bisect
