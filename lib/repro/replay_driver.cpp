// The replay's driver.cpp: the culprit's call found in the wrapper, made from the saved tensors, and judged.
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"
#include "repro/replay_internal.hpp"
#include "repro/source_text.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect::repro {

namespace {

// A cpp kernel parameter's role from its name (Inductor's in_ptr/out_ptr/in_out_ptr).
int param_role(const std::string& param) {
  std::string name = param.substr(param.find_last_of(" *&") == std::string::npos ? 0 : param.find_last_of(" *&") + 1);
  if (name.rfind("in_out_ptr", 0) == 0) {
    return 3;
  }
  if (name.rfind("out_ptr", 0) == 0) {
    return 2;
  }
  if (name.rfind("in_ptr", 0) == 0) {
    return 1;
  }
  // Other names (a CPP GEMM template's `const bfloat16* X, ..., bfloat16* Y`):
  // a pointer to const is read, any other pointer written.
  bool pointer = param.find('*') != std::string::npos;
  return pointer && param.find("const") == std::string::npos ? 2 : 1;
}

const ProbeStats* stats_of(const Culprit& c, const std::string& name) {
  for (const auto& a : c.args) {
    if (a.tensor == name) {
      return &a;
    }
  }
  return nullptr;
}

}  // namespace

void Gen::need(const std::string& why) {
  if (problem.empty()) {
    problem = why;
  }
}

void Gen::tensor(const std::string& name, int role) {
  if (!declared.insert(name).second) {
    return;
  }
  if (auto a = alias_of.find(name); a != alias_of.end() && (saved.count(a->second) || declared.count(a->second))) {
    views.emplace_back(name, role);
    return;
  }
  // A cpp kernel's parameter names say what it reads (in_ptr, in_out_ptr);
  // an extern call may write any tensor it is given: one nothing wrote
  // before (the probes' `initialized`) is its output.
  const ProbeStats* st = stats_of(c, name);
  if (st && ((st->before && (!st->before->layout.empty() || st->before->opaque)) ||
             (st->after && (!st->after->layout.empty() || st->after->opaque)))) {
    // A oneDNN-packed constant is saved as a dense copy (or not at all):
    // not what the call takes.
    need(
        fmt::format("{} is a oneDNN-layout constant (a frozen, packed weight): the replay could pass only a dense "
                    "copy, which the call does not take",
                    name));
    return;
  }
  bool initialized = role != 2;
  if (role == 0) {
    initialized = st == nullptr || st->initialized;
    role = initialized ? 3 : 2;
  }
  if (auto f = saved.find(name); f != saved.end()) {
    files.insert(f->second);
    decls.push_back(fmt::format("  RAIIAtenTensorHandle {} = replay::load({}, {}, {}, {});", name,
                                cpp_text::string_literal(name), cpp_text::string_literal(f->second), role,
                                initialized ? "true" : "false"));
    return;
  }
  const TensorStats* shape = st ? (st->before ? &*st->before : st->after ? &*st->after : nullptr) : nullptr;
  if (role == 2 && shape && !shape->dtype.empty()) {
    std::vector<std::string> dims;
    for (auto d : shape->shape) {
      dims.push_back(std::to_string(d));
    }
    decls.push_back(fmt::format("  RAIIAtenTensorHandle {} = replay::alloc({}, {{{}}}, {}, {});", name,
                                cpp_text::string_literal(name), join(dims, ", "),
                                cpp_text::string_literal(shape->dtype), role));
    return;
  }
  need(fmt::format("{} was not saved by the evidence run", name));
}

void Gen::declare_scalars(std::vector<std::string> todo, const std::vector<std::string>& lines, int line) {
  while (!todo.empty()) {
    std::string id = todo.front();
    todo.erase(todo.begin());
    if (known_word(id) || id.rfind("cached_torch_", 0) == 0 || declared.count(id)) {
      continue;
    }
    declared.insert(id);
    std::string d = declaration_of(lines, line, id);
    if (d.empty()) {
      need(fmt::format("the call uses '{}', which the wrapper does not declare before it", id));
      continue;
    }
    if (d.find("constants_") != std::string::npos) {
      need(fmt::format("the constant {} was not saved by the evidence run", id));
      continue;
    }
    std::string rhs = d.substr(d.find('=') + 1);
    bool literal = false;
    for (const auto& [what, table] : {std::pair{".sizes()", &spec.input_sizes}, {".strides()", &spec.input_strides}}) {
      std::string input(trim(rhs.substr(0, rhs.find(what))));
      if (rhs.find(what) != std::string::npos && table->count(input)) {
        std::vector<std::string> values;
        for (auto v : table->at(input)) {
          values.push_back(fmt::format("{}L", v));
        }
        d = fmt::format("const int64_t {}[] = {{{}}};  // {}{} as the run saw it", id, join(values, ", "), input, what);
        literal = true;
      }
    }
    decls.insert(decls.begin(), "  " + d);
    if (!literal) {
      for (const auto& more : identifiers(rhs)) {
        if (!is_tensor_variable_name(more)) {
          todo.push_back(more);
        }
      }
    }
  }
}

bool Gen::known_word(const std::string& id) {
  static const std::set<std::string> known = {"nullptr", "true", "false", "float", "double", "int64_t", "int32_t",
                                              "std", "const", "void", "uint8_t", "bool", "int", "long", "char", "array",
                                              "vector", "data", "AtenTensorHandle", "proxy_executor",
                                              // torch 2.15: static_cast<const int64_t*>(std::array<...>{...}.data())
                                              "static_cast", "reinterpret_cast"};
  return known.count(id) > 0;
}

void Gen::make_views(const std::vector<std::string>& lines, int line) {
  for (const auto& [view, role] : views) {
    const std::string& base = alias_of.at(view);
    if (!declared.count(base)) {
      tensor(base, 3);
    }
    std::string d = declaration_of(lines, line, view);
    if (d.empty()) {
      need(fmt::format("the wrapper's view {} of {} was not found before the call", view, base));
      continue;
    }
    after_loads.push_back("  " + d);
    after_loads.push_back(
        fmt::format("  replay::adopt({}, {}.get(), {});", cpp_text::string_literal(view), view, role));
    std::vector<std::string> ids;
    for (const auto& id : identifiers(d.substr(d.find('=') + 1))) {
      if (id != base && !is_tensor_variable_name(id) && id != "wrap_with_raii_handle_if_needed" &&
          id != "reinterpret_tensor_wrapper") {
        ids.push_back(id);
      }
    }
    declare_scalars(ids, lines, line);
  }
}

namespace {

std::string call_statement(Gen& g, const std::string& call, const std::vector<std::string>& site_args,
                           const std::vector<std::string>& lines, int line) {
  std::vector<std::string> args = call_arguments(call);
  // A tensor the runner saved under the name the wrapper parser gave its
  // argument ("temporary_reference" for `&temporary_reference(buf5.get())`).
  for (size_t i = 0; i < args.size() && i < site_args.size(); ++i) {
    std::vector<std::string> tensors;
    for (const auto& id : identifiers(args[i])) {
      if (is_tensor_variable_name(id) ||
          (id != "std" && id.rfind("int_array_", 0) != 0 && id.rfind("cached_", 0) != 0 && id != "nullptr")) {
        tensors.push_back(id);
      }
    }
    auto f = g.saved.find(site_args[i]);
    if (tensors.size() == 1 && !g.saved.count(tensors[0]) && f != g.saved.end() &&
        site_args[i].rfind("view of ", 0) != 0) {
      g.saved[tensors[0]] = f->second;
    }
  }
  std::string out = call.substr(0, call.find('(') + 1);
  std::set<std::string> scalars;
  std::map<std::string, std::string> views;  // base -> the view's layout text
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    size_t rv = a.find("reinterpret_tensor_wrapper(");
    if (rv != std::string::npos) {
      auto parts = call_arguments(a.substr(rv, after_closing_bracket(a, rv + 26) - rv));
      std::string base = parts.empty() ? "" : parts[0];
      std::string vname = fmt::format("view_{}", i);
      auto f = g.saved.find("view of " + base);
      std::string layout = parts.size() == 5 ? parts[1] + parts[2] + parts[3] + parts[4] : "";
      if (auto [it, fresh] = views.emplace(base, layout); !fresh && it->second != layout) {
        g.need(fmt::format("the call passes two different views of {}, saved in one file", base));
      }
      if (parts.size() == 5 && f != g.saved.end()) {
        g.files.insert(f->second);
        for (const auto& id : {parts[2], parts[3]}) {
          scalars.insert(id);
        }
        g.decls.push_back(fmt::format("  RAIIAtenTensorHandle {} = replay::view({}, {}, {}, {}, {});", vname,
                                      cpp_text::string_literal("view of " + base), cpp_text::string_literal(f->second),
                                      parts[1], parts[2], parts[3]));
        a = a.substr(0, rv) +
            fmt::format("reinterpret_tensor_wrapper({}, {}, {}, {}, 0L)", vname, parts[1], parts[2], parts[3]) +
            a.substr(after_closing_bracket(a, rv + 26));
      } else if (!base.empty()) {
        g.tensor(base, 0);
        for (const auto& id : identifiers(a)) {
          if (id != base) {
            scalars.insert(id);
          }
        }
      }
    } else if (a.rfind("&", 0) == 0 && a.size() > 8 && a.ends_with("_handle")) {
      std::string h = a.substr(1);
      g.decls.push_back(fmt::format("  AtenTensorHandle {} = nullptr;", h));
      g.after.push_back(
          fmt::format("  replay::created({}, {});", cpp_text::string_literal(h.substr(0, h.size() - 7)), h));
    } else {
      for (const auto& id : identifiers(a)) {
        if (is_tensor_variable_name(id) || g.saved.count(id) || stats_of(g.c, id)) {
          g.tensor(id, 0);
        } else {
          scalars.insert(id);
        }
      }
    }
    out += (i ? ", " : "") + a;
  }
  g.declare_scalars(std::vector<std::string>(scalars.begin(), scalars.end()), lines, line);
  return out + ")";
}

// A custom operator's call (the proxy executor's): LibTorch does not
// export its proxy executor, so the driver makes the call the executor
// makes, a boxed call of the operator through the dispatcher, its
// arguments from the package's extern node (static values as recorded,
// tensors from the call's flat list: the inputs', then the outputs').
std::string proxy_call(Gen& g, const CallSite& cs, const std::string& extern_json) {
  auto j = nlohmann::json::parse(extern_json, nullptr, false);
  const size_t n = static_cast<size_t>(cs.extern_node);
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array() || n >= j["nodes"].size() ||
      !j["nodes"][n].is_object() || !j["nodes"][n].contains("node")) {
    g.need("the package's extern-node JSON does not describe the call");
    return "";
  }
  const auto& node = j["nodes"][n]["node"];
  std::string target = node.value("target", "");
  auto [name, overload] = split_operator_name(target);
  std::vector<std::string> flat;
  for (const auto& e : cs.elements) {
    if (!e.empty()) {
      flat = e;
    }
  }
  size_t next = 0;
  auto take = [&](int role) -> std::string {
    if (next >= flat.size() || flat[next].empty()) {
      g.need(fmt::format("the call's tensor list does not name its tensor {}", next));
      return "nullptr";
    }
    g.tensor(flat[next], role);
    return flat[next++];
  };
  std::string out =
      fmt::format("auto op = c10::Dispatcher::singleton().findSchemaOrThrow({}, {});\n    torch::jit::Stack stack;\n",
                  cpp_text::string_literal(name), cpp_text::string_literal(overload));
  auto tensor_of = [](const std::string& h) {
    return fmt::format("*torch::aot_inductor::tensor_handle_to_tensor_pointer({})", h);
  };
  for (const auto& in : node.value("inputs", nlohmann::json::array())) {
    const auto& arg = in.value("arg", nlohmann::json::object());
    std::string value;
    if (arg.contains("as_tensor")) {
      value = tensor_of(take(0));
    } else if (arg.contains("as_tensors")) {
      std::vector<std::string> items;
      for (size_t i = 0; i < arg["as_tensors"].size(); ++i) {
        items.push_back(tensor_of(take(0)));
      }
      value = fmt::format("std::vector<at::Tensor>{{{}}}", join(items, ", "));
    } else if (arg.contains("as_float") && arg["as_float"].is_number()) {
      value = fmt::format("double({:.17g})", arg["as_float"].get<double>());
    } else if (arg.contains("as_int") && arg["as_int"].is_number_integer()) {
      value = fmt::format("int64_t({})", arg["as_int"].get<int64_t>());
    } else if (arg.contains("as_bool") && arg["as_bool"].is_boolean()) {
      value = arg["as_bool"].get<bool>() ? "true" : "false";
    } else if (arg.contains("as_none")) {
      value = "c10::IValue()";
    } else if (arg.contains("as_ints") && arg["as_ints"].is_array()) {
      value =
          fmt::format("std::vector<int64_t>{{{}}}", arg["as_ints"].dump().substr(1, arg["as_ints"].dump().size() - 2));
    } else if (arg.contains("as_string") && arg["as_string"].is_string()) {
      value = fmt::format("std::string({})", cpp_text::string_literal(arg["as_string"].get<std::string>()));
    } else {
      g.need(fmt::format("{}'s argument '{}' is of a kind the replay does not make ({})", target, in.value("name", "?"),
                         arg.empty() ? "none" : arg.begin().key()));
      return "";
    }
    out += fmt::format("    stack.emplace_back({});  // {}\n", value, in.value("name", ""));
  }
  out += "    op.callBoxed(&stack);\n";
  size_t k = 0;
  for (const auto& o : node.value("outputs", nlohmann::json::array())) {
    if (!o.contains("as_tensor")) {
      g.need(fmt::format("{} returns something other than tensors", target));
      return "";
    }
    // Into the output's own tensor (the judge holds it), as the executor's result.
    out += fmt::format("    ({}).set_(stack.at({}).toTensor());\n", tensor_of(take(2)), k++);
  }
  return out;
}

}  // namespace

ReplayCall locate_call(Gen& g, const std::string& wrapper_source, const std::string& kernel_source,
                       const std::string& extern_json) {
  const ReplaySpec& spec = g.spec;
  const Culprit& c = g.c;
  ReplayCall rc;
  rc.lines = cpp_text::split_lines_copy(wrapper_source);
  rc.wrapper = parse_wrapper(wrapper_source);
  for (const auto& [view, base] : rc.wrapper.aliases) {
    g.alias_of[view] = base;
  }
  if (!extern_json.empty()) {
    name_proxy_calls(rc.wrapper, extern_json);
  }
  const auto& sites = rc.wrapper.call_sites;
  int ws = spec.wrapper_site > 0 ? spec.wrapper_site : spec.site;
  rc.site = ws >= 1 && ws <= static_cast<int>(sites.size()) ? &sites[ws - 1] : nullptr;
  if (rc.site == nullptr || rc.site->kernel != c.kernel) {
    rc.site = nullptr;
    for (const auto& s : sites) {
      if (s.kernel == c.kernel && rc.site == nullptr) {
        rc.site = &s;
      }
    }
  }
  const CallSite* cs = rc.site;
  rc.call = cs ? call_text_at(wrapper_source, cs->line, called_symbol(*cs)) : "";
  rc.proxy = cs != nullptr && cs->extern_node >= 0;
  for (const auto& lib : spec.libraries) {
    rc.libraries.push_back(lib.filename().string());
  }
  if (c.kind == "triton" || (cs && cs->kind == KernelKind::triton)) {
    g.need(fmt::format("{} is a Triton kernel: a GPU replay from the package's cubin is not implemented", c.kernel));
  } else if (spec.predicate != "fault" && spec.predicate != "nonfinite" && spec.predicate != "mismatch") {
    g.need(fmt::format("no replay for a {} failure", spec.predicate));
  } else if (rc.call.empty()) {
    g.need(fmt::format("the wrapper's call of {} was not found", c.kernel));
  } else if (rc.proxy && extern_json.empty()) {
    g.need(
        fmt::format("{} runs through the proxy executor, and the package's extern-node JSON was not found", c.kernel));
  } else if (c.kind != "extern") {
    rc.kernel_cpp = replay_kernel_source(kernel_source, c.kernel);
    if (rc.kernel_cpp.empty()) {
      g.need(fmt::format("the definition of {} was not found in the package's kernel source", c.kernel));
    } else {
      size_t open = find_call(rc.kernel_cpp, c.kernel) + c.kernel.size();
      rc.params = call_arguments(rc.kernel_cpp.substr(
          open - c.kernel.size(), after_closing_bracket(rc.kernel_cpp, open) - open + c.kernel.size()));
    }
  }
  return rc;
}

void prepare_call(Gen& g, ReplayCall& rc, const std::string& extern_json) {
  if (!g.problem.empty()) {
    return;
  }
  if (g.c.kind != "extern") {
    // Roles of the kernel's pointer arguments from its parameter names.
    auto args = call_arguments(rc.call);
    for (size_t i = 0; i < args.size() && i < rc.params.size(); ++i) {
      const std::string& a = args[i];
      size_t dp = a.find(".data_ptr()");
      if (dp != std::string::npos) {
        size_t b = dp;
        while (b > 0 && is_ident_char(a[b - 1])) {
          --b;
        }
        g.tensor(a.substr(b, dp - b), param_role(rc.params[i]));
      }
    }
  }
  rc.statement = rc.proxy ? proxy_call(g, *rc.site, extern_json)
                          : call_statement(g, rc.call, rc.site->args, rc.lines, rc.site->line);
  g.make_views(rc.lines, rc.site->line);
}

std::string predicate_call(Gen& g) {
  const ReplaySpec& spec = g.spec;
  if (spec.predicate != "mismatch") {
    return "replay::judge_" + spec.predicate + "()";
  }
  const auto& d = g.c.divergence;
  auto e = d ? g.expected.find(d->tensor) : g.expected.end();
  if (!d || e == g.expected.end()) {
    g.need(fmt::format("the eager value of {}'s output was not saved", g.c.kernel));
    return "replay::judge_mismatch()";
  }
  g.files.insert(e->second);
  return fmt::format("replay::judge_mismatch({}, {}, {}, {})", cpp_text::string_literal(d->tensor),
                     cpp_text::string_literal(e->second), fmt::format("{:.17g}", d->atol),
                     fmt::format("{:.17g}", d->rtol));
}

std::string driver_source(const Gen& g, const ReplayCall& rc, const std::string& what, const std::string& judge) {
  const Culprit& c = g.c;
  std::string drv = fmt::format(
      "// One-kernel replay of {} (generated by aoti-bisect).\n// The wrapper's call:\n//   {}\n\n", what, rc.call);
  if (rc.proxy) {  // the dispatcher's call, and the handles' tensors
    drv +=
        "#include <ATen/ATen.h>\n#include <ATen/core/dispatch/Dispatcher.h>\n#include <ATen/core/stack.h>\n"
        "#include <torch/csrc/inductor/aoti_torch/utils.h>\n"
        "#include <dlfcn.h>\n\n";
  }
  drv += "#include \"replay_host.h\"\n\nusing namespace torch::aot_inductor;\n\n";
  for (const auto& l : rc.lines) {
    if (l.rfind("CACHE_TORCH_", 0) == 0) {
      drv += l + "\n";
    }
  }
  if (c.kind != "extern" && !rc.kernel_cpp.empty()) {
    size_t open = rc.kernel_cpp.find("extern \"C\"");
    size_t body = rc.kernel_cpp.find(
        '{', after_closing_bracket(rc.kernel_cpp, find_call(rc.kernel_cpp, c.kernel, open) + c.kernel.size()));
    drv += "\n" + rc.kernel_cpp.substr(open, body - open) + ";\n";
  }
  drv += fmt::format("\nint run() {{\n  replay::g_kernel = {};\n  replay::g_predicate = {};\n",
                     cpp_text::string_literal(c.kernel), cpp_text::string_literal(g.spec.predicate));
  if (rc.proxy) {
    // The operator's library (and Python's, for a Python extension module,
    // which the script names) before the call.
    drv +=
        "  if (const char* py = std::getenv(\"AOTI_BISECT_LIBPYTHON\"); py != nullptr && *py != '\\0') {\n"
        "    ::dlopen(py, RTLD_NOW | RTLD_GLOBAL);\n  }\n";
    for (const auto& lib : rc.libraries) {
      drv += fmt::format(
          "  if (::dlopen(\"./{0}\", RTLD_NOW | RTLD_GLOBAL) == nullptr) {{\n"
          "    replay::cannot(std::string(\"{0} cannot be loaded: \") + ::dlerror());\n  }}\n",
          lib);
    }
  }
  for (const auto& l : g.decls) {
    drv += l + "\n";
  }
  for (const auto& l : g.after_loads) {
    drv += l + "\n";
  }
  drv += "  replay::before();\n  try {\n    replay::arm();\n";
  if (rc.proxy) {
    drv += fmt::format("    {}    replay::disarm();\n", rc.statement);
  } else if (c.kind == "extern") {
    drv += fmt::format("    AOTITorchError err = {};\n    replay::disarm();\n", rc.statement);
    drv += "    if (err != AOTI_TORCH_SUCCESS) {\n      replay::cannot(\"the call returned an error\");\n    }\n";
  } else {
    drv += fmt::format("    {};\n    replay::disarm();\n", rc.statement);
  }
  drv +=
      "  } catch (const std::exception& e) {\n    std::string m = e.what();\n"
      "    replay::cannot(\"the call raised: \" + m.substr(0, m.find('\\n')));\n  }\n";
  for (const auto& l : g.after) {
    drv += l + "\n";
  }
  drv += fmt::format(
      "  int verdict = {};\n  replay::report_intermediates();\n  return verdict;\n}}\n\n"
      "int main() {{ return replay::guarded(run); }}\n",
      judge);
  return drv;
}

}  // namespace aoti_bisect::repro
