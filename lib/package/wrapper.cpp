// What the generated wrapper source tells without running it: call sites, inputs, printer probes.
#include "package/wrapper.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "package/call_spec.hpp"
#include "package/hooks.hpp"
#include "package/triton_launch.hpp"
#include "package/wrapper_text.hpp"

namespace aoti_bisect {
namespace {

using namespace wrapper_text;

std::set<std::string> declared_cpp_kernels(const std::vector<std::string_view>& lines) {
  std::set<std::string> names;
  for (auto line : lines) {
    auto t = trim(line);
    if (t.rfind("extern \"C\"", 0) != 0) {
      continue;
    }
    size_t v = t.find("void");
    if (v == std::string_view::npos) {
      continue;
    }
    size_t p = v + 4;
    while (p < t.size() && std::isspace(static_cast<unsigned char>(t[p]))) {
      ++p;
    }
    std::string id = ident_at(t, p);
    if (!id.empty() && p + id.size() < t.size() && t[p + id.size()] == '(') {
      names.insert(id);
    }
  }
  return names;
}

// The kernel a printer line names as about to launch ("before_launch"), or "".
// An extern fallback op is named by its ATen op (`at::_ops::OP::call`, e.g.
// CPU scaled_dot_product_attention): returned as "at::_ops::OP".
std::string printed_before(std::string_view line) {
  for (std::string_view marker : {"\"before_launch\", \"", "\"before_launch - ", "[ before_launch: "}) {
    size_t p = line.find(marker);
    if (p != std::string_view::npos) {
      constexpr std::string_view aten = "at::_ops::";
      if (line.substr(p + marker.size(), aten.size()) == aten) {
        std::string op = ident_at(line, p + marker.size() + aten.size());
        return op.empty() ? "" : std::string(aten) + op;
      }
      return ident_at(line, p + marker.size());
    }
  }
  return "";
}

// Whether the printer's label names this call site's kernel: its own name,
// or for a C-shim call `aoti_torch_<device>_OP` the ATen op `at::_ops::OP`.
bool printed_for(const std::set<std::string>& printed, const std::string& kernel) {
  if (printed.count(kernel) > 0) {
    return true;
  }
  constexpr std::string_view shim = "aoti_torch_";
  if (kernel.rfind(shim, 0) != 0) {
    return false;
  }
  size_t device_end = kernel.find('_', shim.size());
  return device_end != std::string::npos && printed.count("at::_ops::" + kernel.substr(device_end + 1)) > 0;
}

void note_printer(std::string_view line, WrapperInfo& info) {
  int level = 0;
  if (line.find("aoti_torch_save_tensor_handle(") != std::string_view::npos) {
    level = 1;
  } else if (line.find("aoti_torch_print_tensor_handle(") != std::string_view::npos) {
    level = 2;
  } else if (line.find("printf(\"[ before_launch") != std::string_view::npos ||
             line.find("printf(\"[ after_launch") != std::string_view::npos) {
    level = 3;
  }
  if (level != 0) {
    info.instrumented = true;
    if (info.printer_level == 0 || level < info.printer_level) {
      info.printer_level = level;
    }
  }
}

std::optional<CallSite> call_site_of(std::string_view t, const std::set<std::string>& cpp_kernels) {
  if (auto id = called_ident_with_prefix(t, "call_triton_")) {
    return CallSite{0, id->substr(5), KernelKind::triton, 0, ""};
  }
  if (t.rfind("kernels.", 0) == 0) {
    std::string id = ident_at(t, 8);
    if (!id.empty()) {
      return CallSite{0, id, cpp_kernels.count(id) ? KernelKind::cpp : KernelKind::triton, 0, ""};
    }
  }
  if (t.find(std::string(k_proxy_call) + "(") != std::string_view::npos) {
    return CallSite{0, std::string(k_proxy_call), KernelKind::extern_call, 0, ""};
  }
  for (std::string_view dev : {"aoti_torch_cpu_", "aoti_torch_cuda_", "aoti_torch_xpu_", "aoti_torch_mps_"}) {
    if (auto id = called_ident_with_prefix(t, dev)) {
      return CallSite{0, *id, KernelKind::extern_call, 0, ""};
    }
  }
  std::string id = ident_at(t, 0);
  if (!id.empty() && cpp_kernels.count(id) && id.size() < t.size() && t[id.size()] == '(') {
    return CallSite{0, id, KernelKind::cpp, 0, ""};
  }
  return std::nullopt;
}

// "&buf3_handle" arguments of an extern call: outputs it allocates.
std::vector<std::string> returned_handles(std::string_view t) {
  std::vector<std::string> out;
  for (size_t p = t.find('&'); p != std::string_view::npos; p = t.find('&', p + 1)) {
    std::string id = ident_at(t, p + 1);
    constexpr std::string_view suffix = "_handle";
    if (id.size() > suffix.size() && id.ends_with(suffix)) {
      out.push_back(id.substr(0, id.size() - suffix.size()));
    }
  }
  return out;
}

// "auto buf8 = std::move(buf7);  // reuse" -> (buf8, buf7); also
// "buf5 = std::move(true_graph_0_buf0);" (a torch.cond branch's result) and
// "aoti_torch_assign_tensors_out(emb_weight, &true_graph_0_arg1_1_handle)"
// (what a subgraph's input holds).
std::optional<std::pair<std::string, std::string>> moved_buffer(std::string_view t) {
  constexpr std::string_view assign = "aoti_torch_assign_tensors_out(";
  if (size_t a = t.find(assign); a != std::string_view::npos) {
    std::string from = ident_at(t, a + assign.size());
    size_t amp = t.find(", &", a);
    std::string to = amp == std::string_view::npos ? "" : ident_at(t, amp + 3);
    constexpr std::string_view suffix = "_handle";
    if (from.empty() || to.size() <= suffix.size() || !to.ends_with(suffix)) {
      return std::nullopt;
    }
    return std::make_pair(to.substr(0, to.size() - suffix.size()), from);
  }
  size_t start = t.rfind("auto ", 0) == 0 ? 5 : 0;
  std::string to = ident_at(t, start);
  // "auto buf37 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf36, ...)); buf36.reset();  // reuse":
  // a view of a dead buffer's memory under a new name, which an in-place
  // kernel (in_out_ptr) then reads: a reuse like `std::move`.
  constexpr std::string_view view = "reinterpret_tensor_wrapper(";
  if (start == 5 && !to.empty() && is_tensor_variable_name(to) && t.size() > start + to.size() + 3 &&
      t.substr(start + to.size(), 3) == " = ") {
    std::string_view rhs = t.substr(start + to.size() + 3);
    constexpr std::string_view wrap = "wrap_with_raii_handle_if_needed(";
    if (rhs.rfind(wrap, 0) == 0) {
      rhs.remove_prefix(wrap.size());
    }
    if (rhs.rfind(view, 0) == 0) {
      std::string from = ident_at(rhs, view.size());
      if (!from.empty() && rhs.size() > view.size() + from.size() && rhs[view.size() + from.size()] == ',' &&
          from != to) {
        return std::make_pair(to, from);
      }
      return std::nullopt;
    }
  }
  size_t m = t.find("= std::move(");
  if (to.empty() || m != start + to.size() + 1 || !is_tensor_variable_name(to)) {
    return std::nullopt;
  }
  std::string from = ident_at(t, m + 12);
  // "arg7_1 = std::move(RAIIAtenTensorHandle(arg7_1_aligned));": a CUDA
  // wrapper's copy of a misaligned input (torch 2.11, cpp_wrapper_gpu.py
  // codegen_inputs) moves a new handle, not a buffer, into the name.
  if (from.empty() || t.substr(m + 12 + from.size(), 1) == "(") {
    return std::nullopt;
  }
  return std::make_pair(to, from);
}

// "true_graph_0" when an argument is named "true_graph_0_buf1" (or a view of one).
std::string subgraph_of(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    std::string name = base_tensor_name(a);
    size_t g = name.find("_graph_");
    if (g == std::string::npos || g == 0) {
      continue;
    }
    size_t end = g + 7;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) {
      ++end;
    }
    if (end > g + 7 && end < name.size() && name[end] == '_') {
      return name.substr(0, end);
    }
  }
  return "";
}

// The text of the call that starts on line `i` at `open` (its '('), up to
// the matching ')', across lines.
std::string call_text(const std::vector<std::string_view>& lines, size_t i, size_t open) {
  std::string text;
  int depth = 0;
  for (size_t j = i; j < lines.size() && j < i + 64; ++j) {
    std::string_view l = j == i ? lines[j].substr(open) : lines[j];
    for (char c : l) {
      text += c;
      if (c == '(') {
        ++depth;
      } else if (c == ')' && --depth == 0) {
        return text;
      }
    }
    text += ' ';
  }
  return text;
}

// What one argument names (see CallSite::args).
std::string arg_name(std::string_view a) {
  a = trim(a);
  if (a.empty() || std::isdigit(static_cast<unsigned char>(a.front())) || a.front() == '-' ||
      a.rfind("cached_", 0) == 0 || a == "nullptr" || a == "true" || a == "false") {
    return "";
  }
  if (size_t p = a.find("reinterpret_tensor_wrapper("); p != std::string_view::npos) {
    std::string base = ident_at(a, p + 27);
    return base.empty() ? "" : "view of " + base;
  }
  if (size_t p = a.find(".data_ptr()"); p != std::string_view::npos) {
    size_t b = p;
    while (b > 0 && is_ident_char(a[b - 1])) {
      --b;
    }
    return std::string(a.substr(b, p - b));
  }
  // "&temporary_reference(buf8.get())": an optional tensor argument (an
  // attention mask) passed as a pointer to a handle of buf8 itself.
  if (size_t p = a.find("temporary_reference("); p != std::string_view::npos) {
    std::string id = ident_at(a, p + 20);
    return id;
  }
  if (a.front() == '&') {
    std::string id = ident_at(a, 1);
    constexpr std::string_view suffix = "_handle";
    if (id.size() > suffix.size() && id.ends_with(suffix)) {
      return id.substr(0, id.size() - suffix.size());
    }
    return id;
  }
  std::string id = ident_at(a, 0);
  return id.size() == a.size() ? id : "";
}

// A list argument's tensors (`std::array<AtenTensorHandle, 2>{buf2,
// buf4}.data()`, `std::vector<AtenTensorHandle>{...}.data()`), and a proxy
// call's extern node (its second argument).
void note_list_elements(const std::vector<std::string>& texts, CallSite& site) {
  for (size_t i = 0; i < texts.size(); ++i) {
    std::string_view a = texts[i];
    size_t open = a.find('{');
    if ((a.rfind("std::array<", 0) != 0 && a.rfind("std::vector<", 0) != 0) || open == std::string_view::npos) {
      continue;
    }
    size_t close = cpp_text::closing_bracket(a, open);
    if (close == std::string_view::npos) {
      continue;
    }
    std::vector<std::string> names;
    for (const auto& e : split_call_arguments(a.substr(open, close - open + 1))) {
      names.push_back(arg_name(e));
    }
    site.elements.resize(texts.size());
    site.elements[i] = std::move(names);
  }
  if (site.kernel == k_proxy_call && texts.size() > 1) {
    std::string_view n = trim(texts[1]);
    int node = 0;
    bool digits = !n.empty() && n.size() < 9;
    for (char c : n) {
      digits = digits && std::isdigit(static_cast<unsigned char>(c));
      node = node * 10 + (c - '0');
    }
    site.extern_node = digits ? node : -1;
  }
}

// "[[maybe_unused]] auto& ln_weight = constants_->at(0);" -> (0, "ln_weight").
std::optional<std::pair<size_t, std::string>> constant_alias(std::string_view t) {
  size_t amp = t.find("auto& ");
  size_t at = t.find("= constants_->at(");
  if (amp == std::string_view::npos || at == std::string_view::npos || at < amp) {
    return std::nullopt;
  }
  std::string name = ident_at(t, amp + 6);
  auto idx = parse_int(t.substr(at + 17, t.find(')', at) - at - 17));
  if (name.empty() || !idx || *idx < 0 || *idx > 1000000) {
    return std::nullopt;
  }
  return std::make_pair(static_cast<size_t>(*idx), name);
}

}  // namespace

std::vector<std::string> split_call_arguments(std::string_view call) {
  std::vector<std::string> out;
  if (call.size() < 2) {
    return out;
  }
  call = call.substr(1, call.size() - 2);  // without the outer parentheses
  int depth = 0;
  int angle = 0;  // open template argument lists (counted in depth too)
  size_t start = 0;
  for (size_t i = 0; i <= call.size(); ++i) {
    char c = i < call.size() ? call[i] : ',';
    // `std::array<int64_t, 2>{1L, 1L}.cbegin()`: a template's comma is not an argument's end.
    bool template_open =
        c == '<' && i >= 5 &&
        (call.substr(i - 5, 5) == "array" || call.substr(i - 4, 4) == "pair" || call.substr(i - 5, 5) == "tuple");
    if (template_open || (c == '>' && angle > 0)) {
      angle += template_open ? 1 : -1;
      depth += template_open ? 1 : -1;
    } else if (c == '(' || c == '{' || c == '[') {
      ++depth;
    } else if (c == ')' || c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      auto a = trim(call.substr(start, i - start));
      if (!a.empty() || i < call.size()) {
        out.emplace_back(a);
      }
      start = i + 1;
    }
  }
  return out;
}

std::string base_tensor_name(const std::string& name) {
  constexpr std::string_view view = "view of ";
  return name.rfind(view, 0) == 0 ? name.substr(view.size()) : name;
}

namespace {

// `name` ends in "<prefix><digits>" (then "_<digits>" when `pair`), starting
// the name or after an underscore.
bool ends_in_numbered(const std::string& name, std::string_view prefix, bool pair) {
  if (std::any_of(name.begin(), name.end(), [](char c) { return !is_ident_char(c); })) {
    return false;  // "view of buf3" is not a variable
  }
  for (size_t p = name.find(prefix); p != std::string::npos; p = name.find(prefix, p + 1)) {
    if (p > 0 && name[p - 1] != '_') {
      continue;
    }
    size_t i = p + prefix.size();
    auto digits = [&]() {
      size_t start = i;
      while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
        ++i;
      }
      return i > start;
    };
    if (!digits()) {
      continue;
    }
    if (pair && !(i < name.size() && name[i] == '_' && (++i, digits()))) {
      continue;
    }
    if (i == name.size()) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool is_graph_input_name(const std::string& name) {
  return ends_in_numbered(name, "arg", true);
}

bool is_tensor_variable_name(const std::string& name) {
  return is_graph_input_name(name) || ends_in_numbered(name, "buf", false);
}

std::map<std::string, int> returned_buffers(const std::vector<CallSite>& sites) {
  std::map<std::string, int> out;
  for (const auto& s : sites) {
    for (const auto& name : s.returns) {
      out.emplace(name, s.index);
    }
  }
  return out;
}

std::map<std::string, int> returned_buffers(const WrapperInfo& wrapper, bool through_reuse) {
  std::map<std::string, int> out = returned_buffers(wrapper.call_sites);
  for (const auto& [to, from] : through_reuse ? wrapper.moves : wrapper.value_moves) {
    if (auto it = out.find(from); it != out.end()) {
      out[to] = it->second;
    }
  }
  return out;
}

std::string_view kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::cpp: return "cpp";
    case KernelKind::triton: return "triton";
    case KernelKind::extern_call: return "extern";
  }
  return "cpp";
}

// NOLINTNEXTLINE(readability-function-size): over 100 lines, to split into named pieces (issue 55)
WrapperInfo parse_wrapper(const std::string& source) {
  WrapperInfo info;
  if (source.empty()) {
    return info;
  }
  CallSpecText spec = call_spec_text(source);
  info.in_spec = spec.in;
  info.out_spec = spec.out;
  auto lines = split_lines(source);
  auto cpp_kernels = declared_cpp_kernels(lines);
  // CPP GEMM templates (max_autotune on the CPU) are declared over two lines,
  // `extern "C" \nvoid cpp_fused_addmm_0(const float* X, ...)`.
  for (const auto& [name, params] : kernel_declarations(source)) {
    cpp_kernels.insert(name);
  }
  auto [first, last] = function_range(lines, "::run_impl(");
  if (first == last) {
    first = 0;
    last = lines.size();
  } else {
    info.found = true;
  }
  std::string pending_nodes;
  std::string pending_aten;
  std::string pending_handle;                // `// [Provenance debug handles] K:H`
  std::vector<std::string> pending_stacks;   // KernelContextGuard _ctx("K", R"(...)");
  std::set<std::string> printed;             // kernels printed before launch since the previous call site
  std::map<std::string, std::string> views;  // name -> the tensor it is a view of
  for (size_t i = first; i < last; ++i) {
    auto t = trim(lines[i]);
    if (auto out = output_release(t, views)) {
      if (info.outputs.size() <= out->first) {
        info.outputs.resize(out->first + 1);
      }
      info.outputs[out->first] = out->second;
      continue;
    }
    if (auto v = view_declaration(t)) {
      views[v->first] = v->second;
    }
    if (t.rfind("KernelContextGuard ", 0) == 0) {
      // The stack is a raw string over several lines: taken whole, and
      // its lines (the model's Python source) never read as code.
      size_t open = lines[i].find("R\"(");
      if (open != std::string_view::npos) {
        std::string stack;
        std::string_view rest = lines[i].substr(open + 3);
        size_t j = i;
        while (rest.find(")\"") == std::string_view::npos && j + 1 < last) {
          stack += std::string(rest) + "\n";
          rest = lines[++j];
        }
        stack += std::string(rest.substr(0, rest.find(")\"")));
        i = j;
        // One stack per fused node: each begins with an unindented `File "`.
        std::string one;
        for (const auto& l : split_lines(stack)) {
          if (l.rfind("File \"", 0) == 0 && !trim(one).empty()) {
            pending_stacks.push_back(std::string(trim(one)));
            one.clear();
          }
          one += std::string(l) + "\n";
        }
        if (!trim(one).empty()) {
          pending_stacks.push_back(std::string(trim(one)));
        }
      }
      continue;
    }
    if (t.rfind("//", 0) == 0) {
      constexpr std::string_view handles = "// [Provenance debug handles] ";
      if (t.rfind(handles, 0) == 0) {
        pending_handle = std::string(trim(t.substr(handles.size())));
        continue;
      }
      size_t p = t.find("Source Nodes: ");
      if (p != std::string_view::npos) {
        auto rest = t.substr(p + 14);
        pending_nodes = std::string(rest.substr(0, rest.find(", Original ATen")));
        size_t aten = rest.find("Original ATen: ");
        pending_aten = aten == std::string_view::npos ? "" : std::string(trim(rest.substr(aten + 15)));
      }
      continue;
    }
    note_printer(t, info);
    if (t.find("_tensor_handle(") != std::string_view::npos || t.rfind("printf(", 0) == 0) {
      if (std::string k = printed_before(t); !k.empty()) {
        printed.insert(k);
      }
      continue;
    }
    if (auto move = moved_buffer(t)) {
      info.moves.push_back(*move);
      if (t.rfind("auto ", 0) == 0 && t.find("reinterpret_tensor_wrapper(") != std::string_view::npos &&
          t.find(".reset()") == std::string_view::npos) {
        info.aliases.push_back(*move);  // the base stays live: a view of it, not a reuse of dead memory
      }
      if (t.rfind("auto ", 0) != 0) {
        info.value_moves.push_back(*move);
      }
      continue;
    }
    if (auto alias = constant_alias(t)) {
      if (info.constants.size() <= alias->first) {
        info.constants.resize(alias->first + 1);
      }
      info.constants[alias->first] = alias->second;
      continue;
    }
    if (auto site = call_site_of(t, cpp_kernels)) {
      std::string_view line = lines[i];
      size_t at = line.find(site->kind == KernelKind::triton ? "call_" + site->kernel + "(" : site->kernel + "(");
      std::string call = at == std::string_view::npos ? std::string(t) : call_text(lines, i, line.find('(', at));
      if (at != std::string_view::npos) {
        std::vector<std::string> texts = split_call_arguments(call);
        for (const auto& a : texts) {
          site->args.push_back(arg_name(a));
        }
        note_list_elements(texts, *site);
      }
      if (site->kind == KernelKind::extern_call) {
        site->returns = returned_handles(call);
      }
      site->branch = subgraph_of(site->args);
      site->index = static_cast<int>(info.call_sites.size()) + 1;
      site->line = static_cast<int>(i) + 1;
      site->source_nodes = pending_nodes;
      site->aten_ops = pending_aten;
      site->probed = printed_for(printed, site->kernel);
      site->python_stacks = std::move(pending_stacks);
      site->provenance_handle = pending_handle;
      pending_stacks.clear();
      pending_handle.clear();
      pending_nodes.clear();
      pending_aten.clear();
      printed.clear();
      info.call_sites.push_back(std::move(*site));
      info.found = true;
    }
  }
  parse_inputs(lines, first, last, info);
  info.constant_info = parse_constants(source);
  auto declarations = kernel_declarations(source);
  auto launches = triton_launches(source);  // a Triton kernel's parameters: its call_triton_<kernel>'s
  for (auto& site : info.call_sites) {
    std::vector<std::string> params;
    if (auto d = declarations.find(site.kernel); site.kind == KernelKind::cpp && d != declarations.end()) {
      for (const auto& p : d->second) {
        params.push_back(p.name);
      }
    } else if (auto l = launches.find(site.kernel); site.kind == KernelKind::triton && l != launches.end()) {
      params = l->second.params;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].rfind("in_out_ptr", 0) == 0) {
        site.in_out.push_back(static_cast<int>(i));
      }
    }
  }
  return info;
}

std::string called_symbol(const CallSite& site) {
  return site.extern_node >= 0 ? std::string(k_proxy_call) : site.kernel;
}

void name_proxy_calls(WrapperInfo& info, const std::string& extern_json) {
  auto j = nlohmann::json::parse(extern_json, nullptr, false);
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array()) {
    return;
  }
  info.proxy_ops.clear();
  info.python_ops.clear();
  for (const auto& n : j["nodes"]) {
    std::string target;
    if (n.is_object() && n.contains("node") && n["node"].is_object() && n["node"].contains("target") &&
        n["node"]["target"].is_string()) {
      target = n["node"]["target"].get<std::string>();
      const auto& meta = n["node"].value("metadata", nlohmann::json::object());
      if (meta.is_object() && meta.value("torch_library_custom_op", "") == "1" &&
          std::find(info.python_ops.begin(), info.python_ops.end(), target) == info.python_ops.end()) {
        info.python_ops.push_back(target);
      }
    }
    info.proxy_ops.push_back(target);
  }
  for (auto& site : info.call_sites) {
    if (site.extern_node >= 0 && static_cast<size_t>(site.extern_node) < info.proxy_ops.size() &&
        !info.proxy_ops[static_cast<size_t>(site.extern_node)].empty()) {
      site.kernel = info.proxy_ops[static_cast<size_t>(site.extern_node)];
    }
  }
}

void attach_kernel_information(WrapperInfo& info, const std::string& kernel_information_json) {
  auto j = nlohmann::json::parse(kernel_information_json, nullptr, false);
  if (!j.is_object()) {
    return;
  }
  for (auto& site : info.call_sites) {
    if (site.provenance_handle.empty() || !j.contains(site.provenance_handle)) {
      continue;
    }
    const auto& entry = j[site.provenance_handle];
    if (entry.is_object() && entry.contains("post_grad_nodes") && entry["post_grad_nodes"].is_array()) {
      site.post_grad_nodes.clear();
      for (const auto& n : entry["post_grad_nodes"]) {
        if (n.is_string()) {
          site.post_grad_nodes.push_back(n.get<std::string>());
        }
      }
    }
    if (!site.python_stacks.empty() || !entry.is_object() || !entry.contains("stack_traces") ||
        !entry["stack_traces"].is_array()) {
      continue;
    }
    for (const auto& st : entry["stack_traces"]) {
      if (st.is_string() && !st.get<std::string>().empty()) {
        site.python_stacks.push_back(std::string(trim(st.get<std::string>())));
      }
    }
  }
}

OperatorName split_operator_name(const std::string& target) {
  size_t ns = target.find("::");
  size_t dot = target.find('.', ns == std::string::npos ? 0 : ns);
  OperatorName op{target.substr(0, dot), dot == std::string::npos ? "" : target.substr(dot + 1)};
  if (op.overload == "default") {
    op.overload.clear();
  }
  return op;
}

}  // namespace aoti_bisect
