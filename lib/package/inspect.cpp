// `aoti-bisect inspect`: what a package holds, as a table and as JSON.
#include "package/inspect.hpp"

#include <set>

#include <fmt/format.h>

#include "common/files.hpp"
#include "inputs/call_spec.hpp"
#include "package/package_torch.hpp"

namespace aoti_bisect {
namespace {

std::vector<const ModelFiles*> chosen(const Package& pkg, const std::string& model) {
  std::vector<const ModelFiles*> out;
  if (!model.empty()) {
    out.push_back(&pkg.select_model(model));
  } else {
    for (const auto& m : pkg.models()) {
      out.push_back(&m);
    }
  }
  return out;
}

std::string base_name(const std::string& entry) {
  return entry.substr(entry.find_last_of('/') + 1);
}

// The torch a model was built with, from its recorded compile command.
PackageTorch built_with(const Package& pkg, const ModelFiles& m) {
  return package_torch(m.wrapper_cpp.empty() ? "" : pkg.read_entry(m.wrapper_cpp),
                       m.compile_flags_json.empty() ? "" : pkg.read_entry(m.compile_flags_json), "");
}

std::string built_with_text(const PackageTorch& t) {
  if (t.torch_dir.empty()) {
    return "(not recorded)";
  }
  return fmt::format("{} ({})", t.version.empty() ? "a torch no longer installed there" : "torch " + t.version,
                     display_path(t.torch_dir));
}

}  // namespace

nlohmann::ordered_json inspect_json(const Package& pkg, const std::string& model) {
  nlohmann::ordered_json j;
  j["package"] = display_path(pkg.path());
  j["sha256"] = sha256_file(pkg.path());
  j["torch_version"] =
      pkg.torch_version().empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(pkg.torch_version());
  j["exported_programs"] = pkg.exported_programs();
  j["models"] = nlohmann::ordered_json::array();
  for (const ModelFiles* m : chosen(pkg, model)) {
    WrapperInfo w = pkg.wrapper_info(*m);
    nlohmann::ordered_json jm;
    jm["name"] = m->name;
    jm["device_key"] = m->device_key();
    jm["metadata"] = m->metadata;
    jm["files"] = {{"wrapper_cpp", base_name(m->wrapper_cpp)},
                   {"kernel_cpp", base_name(m->kernel_cpp)},
                   {"metadata_json", base_name(m->metadata_json)},
                   {"shared_object", base_name(m->shared_object)},
                   {"cubins", m->cubins.size()}};
    PackageTorch t = built_with(pkg, *m);
    jm["built_with"] = {
        {"torch_version", t.version.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t.version)},
        {"torch_dir",
         t.torch_dir.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(display_path(t.torch_dir))}};
    jm["instrumented"] = w.instrumented;
    jm["printer_level"] = w.printer_level;
    jm["has_exported_program"] = !pkg.exported_programs().empty();
    jm["num_inputs"] = w.num_inputs ? nlohmann::ordered_json(*w.num_inputs) : nlohmann::ordered_json(nullptr);
    jm["inputs"] = nlohmann::ordered_json::array();
    for (const auto& in : w.inputs) {
      nlohmann::ordered_json ji;
      ji["index"] = in.index;
      ji["name"] = in.name;
      ji["dtype"] = in.dtype;
      nlohmann::ordered_json shape = nlohmann::ordered_json::array();
      for (const auto& d : in.shape) {
        shape.push_back(d ? nlohmann::ordered_json(*d) : nlohmann::ordered_json(nullptr));
      }
      ji["shape"] = shape;
      jm["inputs"].push_back(ji);
    }
    std::string takes = describe_inputs(parse_treespec(w.in_spec));
    jm["call_spec"] = takes.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(takes);
    jm["call_sites"] = nlohmann::ordered_json::array();
    for (const auto& c : w.call_sites) {
      jm["call_sites"].push_back({{"index", c.index},
                                  {"kernel", c.kernel},
                                  {"kind", kernel_kind_name(c.kind)},
                                  {"line", c.line},
                                  {"source_nodes", c.source_nodes}});
    }
    j["models"].push_back(jm);
  }
  return j;
}

std::string inspect_table(const Package& pkg, const std::string& model) {
  std::string out;
  out += fmt::format("package      {}\n", display_path(pkg.path()));
  // One statement of the torch: the archive's own record, else what the
  // models' compile commands say (the "built with" lines below).
  std::string torch = pkg.torch_version();
  if (torch.empty()) {
    std::set<std::string> versions;
    for (const ModelFiles* m : chosen(pkg, model)) {
      versions.insert(built_with(pkg, *m).version);
    }
    torch = versions.size() == 1 && !versions.begin()->empty()
                ? fmt::format("{} (from the compile command; the archive records no version)", *versions.begin())
                : std::string("not recorded in the archive (see each model's \"built with\")");
  }
  out += fmt::format("torch        {}\n", torch);
  out += fmt::format("exported     {}\n", pkg.exported_programs().empty()
                                              ? std::string("no exported program inside")
                                              : fmt::format("{}", fmt::join(pkg.exported_programs(), ", ")));
  out += fmt::format("models       {}\n", fmt::join(pkg.model_names(), ", "));
  for (const ModelFiles* m : chosen(pkg, model)) {
    WrapperInfo w = pkg.wrapper_info(*m);
    out += fmt::format("\nmodel '{}'\n", m->name);
    out += fmt::format("  device key   {}\n", m->device_key().empty() ? "(missing)" : m->device_key());
    out += fmt::format("  built with   {}\n", built_with_text(built_with(pkg, *m)));
    for (const auto& [k, v] : m->metadata) {
      if (k != "AOTI_DEVICE_KEY") {
        out += fmt::format("  {:<24} {}\n", k, v.empty() ? "\"\"" : v);
      }
    }
    std::vector<std::string> files;
    files.push_back(m->shared_object.empty() ? "no .so (sources only)" : base_name(m->shared_object));
    if (!m->wrapper_cpp.empty()) {
      files.push_back(base_name(m->wrapper_cpp));
    }
    if (!m->cubins.empty()) {
      files.push_back(fmt::format("{} cubins", m->cubins.size()));
    }
    out += fmt::format("  files        {}\n", fmt::join(files, ", "));
    out += fmt::format("  instrumented {}\n",
                       w.instrumented ? fmt::format("yes (printer level {})", w.printer_level) : std::string("no"));
    auto spec = parse_treespec(w.in_spec);
    std::string takes = describe_inputs(spec);
    out += fmt::format("  call spec    {}\n", takes.empty() ? "none recorded (inputs taken in file order)" : takes);
    std::vector<std::string> arg_names = input_names(spec);
    if (w.num_inputs && arg_names.size() != static_cast<size_t>(*w.num_inputs)) {
      arg_names.clear();  // constants among the leaves: no one-to-one names
    }
    if (w.num_inputs) {
      out += fmt::format("  inputs       {}\n", *w.num_inputs);
      for (const auto& in : w.inputs) {
        std::vector<std::string> dims;
        for (const auto& d : in.shape) {
          dims.push_back(d ? std::to_string(*d) : "?");
        }
        std::string arg = static_cast<size_t>(in.index) < arg_names.size() ? arg_names[in.index] : "";
        out += fmt::format("    {:>3}  {:<10} {:<9} [{}]{}\n", in.index, in.name, in.dtype.empty() ? "?" : in.dtype,
                           fmt::join(dims, ", "), arg.empty() ? "" : "  " + arg);
      }
    }
    out += fmt::format("  call sites   {}\n", w.call_sites.size());
    for (const auto& c : w.call_sites) {
      out += fmt::format("    {:>3}  {:<7} {}{}\n", c.index, kernel_kind_name(c.kind), c.kernel,
                         c.source_nodes.empty() ? "" : "  " + c.source_nodes);
    }
  }
  return out;
}

}  // namespace aoti_bisect
