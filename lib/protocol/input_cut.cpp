// The runner's input cuts and its --make-inputs / --compare-outputs requests, as JSON.
#include "protocol/input_cut.hpp"

namespace aoti_bisect {

nlohmann::json to_json(const InputCut& cut) {
  nlohmann::json takes = nlohmann::json::array();
  for (const auto& t : cut.takes) {
    takes.push_back({{"dim", t.dim}, {"inputs", t.inputs}, {"rows", t.rows}});
  }
  nlohmann::json fills = nlohmann::json::array();
  for (const auto& f : cut.fills) {
    fills.push_back({{"input", f.input}, {"value", f.value}});
  }
  return {{"takes", takes}, {"fills", fills}};
}

InputCut input_cut_from_json(const nlohmann::json& j) {
  InputCut cut;
  for (const auto& t : j.value("takes", nlohmann::json::array())) {
    cut.takes.push_back({t.at("dim").get<int>(), t.at("inputs").get<std::vector<int>>(),
                         t.at("rows").get<std::vector<int64_t>>()});
  }
  for (const auto& f : j.value("fills", nlohmann::json::array())) {
    cut.fills.push_back({f.at("input").get<int>(), f.at("value").get<int64_t>()});
  }
  return cut;
}

nlohmann::json to_json(const MakeInputsRequest& r) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : r.cases) {
    cases.push_back({{"name", c.name},
                     {"base", c.base.string()},
                     {"out", c.out.string()},
                     {"cut", to_json(c.cut)},
                     {"reference", c.reference.string()},
                     {"reference_out", c.reference_out.string()}});
  }
  return {{"model_facts", r.model_facts.string()}, {"cases", cases}, {"result", r.result.string()}};
}

MakeInputsRequest make_inputs_request_from_json(const nlohmann::json& j) {
  MakeInputsRequest r;
  r.model_facts = j.value("model_facts", "");
  r.result = j.at("result").get<std::string>();
  for (const auto& c : j.at("cases")) {
    r.cases.push_back({c.at("name").get<std::string>(), c.at("base").get<std::string>(),
                       c.at("out").get<std::string>(), input_cut_from_json(c.at("cut")),
                       c.value("reference", ""), c.value("reference_out", "")});
  }
  return r;
}

nlohmann::json to_json(const std::vector<MadeInputs>& made) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : made) {
    out.push_back({{"name", m.name},
                   {"shapes", m.shapes},
                   {"error", m.error},
                   {"reference_made", m.reference_made},
                   {"reference_note", m.reference_note}});
  }
  return {{"cases", out}};
}

std::vector<MadeInputs> made_inputs_from_json(const nlohmann::json& j) {
  std::vector<MadeInputs> out;
  for (const auto& c : j.at("cases")) {
    out.push_back({c.at("name").get<std::string>(), c.at("shapes").get<std::vector<std::vector<int64_t>>>(),
                   c.value("error", ""), c.value("reference_made", false), c.value("reference_note", "")});
  }
  return out;
}

nlohmann::json to_json(const CompareOutputsRequest& r) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : r.pairs) {
    pairs.push_back({{"name", p.name}, {"actual", p.actual.string()}, {"expected", p.expected.string()}});
  }
  return {{"pairs", pairs}, {"tolerances", r.tolerances}, {"result", r.result.string()}};
}

CompareOutputsRequest compare_outputs_request_from_json(const nlohmann::json& j) {
  CompareOutputsRequest r;
  r.tolerances = j.value("tolerances", nlohmann::json::object());
  r.result = j.at("result").get<std::string>();
  for (const auto& p : j.at("pairs")) {
    r.pairs.push_back(
        {p.at("name").get<std::string>(), p.at("actual").get<std::string>(), p.at("expected").get<std::string>()});
  }
  return r;
}

nlohmann::json to_json(const std::vector<OutputsApart>& apart) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : apart) {
    out.push_back({{"name", a.name},
                   {"compared", a.compared},
                   {"elements", a.elements},
                   {"max_abs", a.max_abs},
                   {"max_rel", a.max_rel},
                   {"beyond", a.beyond},
                   {"worst_output", a.worst_output},
                   {"error", a.error}});
  }
  return {{"pairs", out}};
}

std::vector<OutputsApart> outputs_apart_from_json(const nlohmann::json& j) {
  std::vector<OutputsApart> out;
  for (const auto& p : j.at("pairs")) {
    OutputsApart a;
    a.name = p.at("name").get<std::string>();
    a.compared = p.value("compared", 0);
    a.elements = p.value("elements", int64_t{0});
    a.max_abs = p.value("max_abs", 0.0);
    a.max_rel = p.value("max_rel", 0.0);
    a.beyond = p.value("beyond", int64_t{0});
    a.worst_output = p.value("worst_output", "");
    a.error = p.value("error", "");
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace aoti_bisect
