// The model facts the runner reads (model-facts.json), parsed once from the wrapper by the driver.
#include "package/facts.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/files.hpp"

namespace aoti_bisect {

namespace {

nlohmann::json dims_to_json(const std::vector<std::optional<int64_t>>& dims) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& d : dims) {
    j.push_back(d ? nlohmann::json(*d) : nlohmann::json(nullptr));
  }
  return j;
}

std::vector<std::optional<int64_t>> dims_from_json(const nlohmann::json& j) {
  std::vector<std::optional<int64_t>> dims;
  for (const auto& d : j) {
    dims.push_back(d.is_null() ? std::nullopt : std::optional<int64_t>(d.get<int64_t>()));
  }
  return dims;
}

}  // namespace

ModelFacts model_facts_of(const WrapperInfo& w) {
  ModelFacts f;
  f.num_inputs = w.num_inputs;
  f.inputs = w.inputs;
  f.instrumented = w.instrumented;
  f.printer_level = w.printer_level;
  f.call_sites = static_cast<int>(w.call_sites.size());
  // Names that hold an extern call's output as their own value (a reuse's
  // new name holds the next in-place kernel's node; the runner reaches the
  // memory it reads through `reuse` below).
  for (const auto& [name, site] : returned_buffers(w, false)) {
    f.returned.push_back(name);
  }
  for (const auto& site : w.call_sites) {
    f.sites.push_back({site.kernel, site.args, site.in_out, site.elements});
  }
  f.constants = w.constants;
  for (const auto& c : w.constant_info) {
    if (c.kind == "buffer" && !c.from_folded) {
      f.buffers.push_back(c.fqn.empty() ? c.name : c.fqn);
    }
  }
  f.moves = w.value_moves;
  f.reuse = w.moves;
  f.aliases = w.aliases;
  f.in_spec = w.in_spec;
  f.out_spec = w.out_spec;
  f.python_ops = w.python_ops;
  for (const auto& op : w.proxy_ops) {
    if (!op.empty() && std::find(f.proxy_ops.begin(), f.proxy_ops.end(), op) == f.proxy_ops.end()) {
      f.proxy_ops.push_back(op);
    }
  }
  return f;
}

std::string inputs_taken_text(const ModelFacts& facts) {
  std::string takes;
  for (size_t i = 0; i < facts.inputs.size() && i < 8; ++i) {
    const InputSpec& spec = facts.inputs[i];
    std::string shape;
    for (const auto& d : spec.shape) {
      shape += (shape.empty() ? "" : ", ") + (d ? std::to_string(*d) : std::string("?"));
    }
    takes += (takes.empty() ? ": " : "; ") + (spec.name.empty() ? "input " + std::to_string(i) : spec.name);
    if (spec.known()) {
      takes += " " + spec.dtype + " [" + shape + "]";
    }
  }
  if (facts.inputs.size() > 8) {
    takes += "; ...";
  }
  return takes;
}

nlohmann::json to_json(const ModelFacts& f) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& in : f.inputs) {
    inputs.push_back({{"index", in.index},
                      {"name", in.name},
                      {"dtype", in.dtype},
                      {"shape", dims_to_json(in.shape)},
                      {"strides", dims_to_json(in.strides)},
                      {"dim_min", dims_to_json(in.dim_min)},
                      {"dim_max", dims_to_json(in.dim_max)},
                      {"device_type", in.device_type ? nlohmann::json(*in.device_type) : nlohmann::json(nullptr)}});
  }
  nlohmann::json sites = nlohmann::json::array();
  for (const auto& site : f.sites) {
    sites.push_back(
        {{"kernel", site.kernel}, {"args", site.args}, {"in_out", site.in_out}, {"elements", site.elements}});
  }
  return {{"num_inputs", f.num_inputs ? nlohmann::json(*f.num_inputs) : nlohmann::json(nullptr)},
          {"inputs", inputs},
          {"instrumented", f.instrumented},
          {"printer_level", f.printer_level},
          {"call_sites", f.call_sites},
          {"returned", f.returned},
          {"sites", sites},
          {"constants", f.constants},
          {"buffers", f.buffers},
          {"moves", f.moves},
          {"reuse", f.reuse},
          {"aliases", f.aliases},
          {"in_spec", f.in_spec},
          {"out_spec", f.out_spec},
          {"proxy_ops", f.proxy_ops},
          {"python_ops", f.python_ops}};
}

ModelFacts model_facts_from_json(const nlohmann::json& j) {
  try {
    ModelFacts f;
    if (!j.at("num_inputs").is_null()) {
      f.num_inputs = j.at("num_inputs").get<int>();
    }
    for (const auto& in : j.at("inputs")) {
      InputSpec s;
      s.index = in.at("index").get<int>();
      s.name = in.at("name").get<std::string>();
      s.dtype = in.at("dtype").get<std::string>();
      s.shape = dims_from_json(in.at("shape"));
      s.strides = dims_from_json(in.at("strides"));
      s.dim_min = dims_from_json(in.at("dim_min"));
      s.dim_max = dims_from_json(in.at("dim_max"));
      if (!in.at("device_type").is_null()) {
        s.device_type = in.at("device_type").get<int>();
      }
      f.inputs.push_back(s);
    }
    f.instrumented = j.at("instrumented").get<bool>();
    f.printer_level = j.at("printer_level").get<int>();
    f.call_sites = j.at("call_sites").get<int>();
    f.returned = j.at("returned").get<std::vector<std::string>>();
    for (const auto& site : j.value("sites", nlohmann::json::array())) {
      f.sites.push_back({site.at("kernel").get<std::string>(), site.at("args").get<std::vector<std::string>>(),
                         site.value("in_out", std::vector<int>{}),
                         site.value("elements", std::vector<std::vector<std::string>>{})});
    }
    f.constants = j.value("constants", std::vector<std::string>{});
    f.buffers = j.value("buffers", std::vector<std::string>{});
    f.moves = j.value("moves", std::vector<std::pair<std::string, std::string>>{});
    f.reuse = j.value("reuse", std::vector<std::pair<std::string, std::string>>{});
    f.aliases = j.value("aliases", std::vector<std::pair<std::string, std::string>>{});
    f.in_spec = j.value("in_spec", std::string());
    f.out_spec = j.value("out_spec", std::string());
    f.proxy_ops = j.value("proxy_ops", std::vector<std::string>{});
    f.python_ops = j.value("python_ops", std::vector<std::string>{});
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::internal, std::string("malformed model facts: ") + e.what());
  }
}

std::filesystem::path write_model_facts(const WrapperInfo& wrapper, const std::filesystem::path& path) {
  write_file_atomic(path, to_json(model_facts_of(wrapper)).dump(1));
  return path;
}

}  // namespace aoti_bisect
