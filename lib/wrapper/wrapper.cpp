// What the generated wrapper source tells without running it: call sites, inputs, printer probes.
#include "wrapper/wrapper.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "inputs/call_spec.hpp"
#include "wrapper/wrapper_text.hpp"

namespace aoti_bisect {
namespace {

using namespace wrapper_text;

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

// What the read of run_impl carries from line to line: the comments,
// stacks and printer probes seen since the previous call site, and the
// views declared so far.
struct RunImplScan {
  const std::vector<std::string_view>& lines;
  size_t last = 0;
  std::set<std::string> cpp_kernels;
  std::string pending_nodes;
  std::string pending_aten;
  std::string pending_handle;                // `// [Provenance debug handles] K:H`
  std::vector<std::string> pending_stacks;   // KernelContextGuard _ctx("K", R"(...)");
  std::set<std::string> printed;             // kernels printed before launch since the previous call site
  std::map<std::string, std::string> views;  // name -> the tensor it is a view of
};

// v[i] = value, v grown to hold it.
template <class T, class V>
void put_at(std::vector<T>& v, size_t i, V&& value) {
  if (v.size() <= i) {
    v.resize(i + 1);
  }
  v[i] = std::forward<V>(value);
}

// An `output_handles[N] = ...release();` line: notes what output N is
// released from. False for any other line.
bool note_output_release(std::string_view t, const RunImplScan& scan, WrapperInfo& info) {
  auto out = output_release(t, scan.views);
  if (!out) {
    return false;
  }
  put_at(info.outputs, out->first, out->second);
  return true;
}

// A KernelContextGuard on line `i`: its stack, split into one per fused
// node, for the next call site. Returns the line the stack ends on.
size_t read_kernel_context(RunImplScan& scan, size_t i) {
  // The stack is a raw string over several lines: taken whole, and
  // its lines (the model's Python source) never read as code.
  const auto& lines = scan.lines;
  size_t open = lines[i].find("R\"(");
  if (open != std::string_view::npos) {
    std::string stack;
    std::string_view rest = lines[i].substr(open + 3);
    size_t j = i;
    while (rest.find(")\"") == std::string_view::npos && j + 1 < scan.last) {
      stack += std::string(rest) + "\n";
      rest = lines[++j];
    }
    stack += std::string(rest.substr(0, rest.find(")\"")));
    i = j;
    // One stack per fused node: each begins with an unindented `File "`.
    std::string one;
    for (const auto& l : split_lines(stack)) {
      if (l.rfind("File \"", 0) == 0 && !trim(one).empty()) {
        scan.pending_stacks.push_back(std::string(trim(one)));
        one.clear();
      }
      one += std::string(l) + "\n";
    }
    if (!trim(one).empty()) {
      scan.pending_stacks.push_back(std::string(trim(one)));
    }
  }
  return i;
}

// A comment line: a provenance handle or the source nodes (and their ATen
// ops) of the next call site.
void note_site_comment(std::string_view t, RunImplScan& scan) {
  constexpr std::string_view handles = "// [Provenance debug handles] ";
  if (t.rfind(handles, 0) == 0) {
    scan.pending_handle = std::string(trim(t.substr(handles.size())));
    return;
  }
  size_t p = t.find("Source Nodes: ");
  if (p != std::string_view::npos) {
    auto rest = t.substr(p + 14);
    scan.pending_nodes = std::string(rest.substr(0, rest.find(", Original ATen")));
    size_t aten = rest.find("Original ATen: ");
    scan.pending_aten = aten == std::string_view::npos ? "" : std::string(trim(rest.substr(aten + 15)));
  }
}

// A move, reuse or alias of a buffer: noted in the lists it belongs to.
// False for any other line.
bool note_move(std::string_view t, WrapperInfo& info) {
  auto move = moved_buffer(t);
  if (!move) {
    return false;
  }
  info.moves.push_back(*move);
  if (t.rfind("auto ", 0) == 0 && t.find("reinterpret_tensor_wrapper(") != std::string_view::npos &&
      t.find(".reset()") == std::string_view::npos) {
    info.aliases.push_back(*move);  // the base stays live: a view of it, not a reuse of dead memory
  }
  if (t.rfind("auto ", 0) != 0) {
    info.value_moves.push_back(*move);
  }
  return true;
}

// A constant's name (`auto& w0 = constants_->at(0);`): noted by index.
// False for any other line.
bool note_constant_alias(std::string_view t, WrapperInfo& info) {
  auto alias = constant_alias(t);
  if (!alias) {
    return false;
  }
  put_at(info.constants, alias->first, alias->second);
  return true;
}

// The call site line `i` starts, if any: given its index, line and what the
// lines since the previous one said of it, which the scan then forgets.
void add_call_site(RunImplScan& scan, size_t i, std::string_view t, WrapperInfo& info) {
  auto site = read_call_site(scan.lines, i, t, scan.cpp_kernels);
  if (!site) {
    return;
  }
  site->index = static_cast<int>(info.call_sites.size()) + 1;
  site->line = static_cast<int>(i) + 1;
  site->source_nodes = scan.pending_nodes;
  site->aten_ops = scan.pending_aten;
  site->probed = printed_for(scan.printed, site->kernel);
  site->python_stacks = std::move(scan.pending_stacks);
  site->provenance_handle = scan.pending_handle;
  scan.pending_stacks.clear();
  scan.pending_handle.clear();
  scan.pending_nodes.clear();
  scan.pending_aten.clear();
  scan.printed.clear();
  info.call_sites.push_back(std::move(*site));
  info.found = true;
}

// Reads line `i` of run_impl into `info` (or `scan`, for the next call
// site). Returns the last line read: a stack's raw string spans several.
size_t read_run_impl_line(RunImplScan& scan, size_t i, WrapperInfo& info) {
  auto t = trim(scan.lines[i]);
  if (note_output_release(t, scan, info)) {
    return i;
  }
  if (auto v = view_declaration(t)) {
    scan.views[v->first] = v->second;
  }
  if (t.rfind("KernelContextGuard ", 0) == 0) {
    return read_kernel_context(scan, i);
  }
  if (t.rfind("//", 0) == 0) {
    note_site_comment(t, scan);
    return i;
  }
  note_printer(t, info);
  if (t.find("_tensor_handle(") != std::string_view::npos || t.rfind("printf(", 0) == 0) {
    if (std::string k = printed_before(t); !k.empty()) {
      scan.printed.insert(k);
    }
    return i;
  }
  if (note_move(t, info) || note_constant_alias(t, info)) {
    return i;
  }
  add_call_site(scan, i, t, info);
  return i;
}

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

WrapperInfo parse_wrapper(const std::string& source) {
  WrapperInfo info;
  if (source.empty()) {
    return info;
  }
  CallSpecText spec = call_spec_text(source);
  info.in_spec = spec.in;
  info.out_spec = spec.out;
  auto lines = split_lines(source);
  auto cpp_kernels = cpp_kernel_names(lines, source);
  auto [first, last] = function_range(lines, "::run_impl(");
  if (first == last) {
    first = 0;
    last = lines.size();
  } else {
    info.found = true;
  }
  RunImplScan scan{lines, last, std::move(cpp_kernels)};
  for (size_t i = first; i < last; ++i) {
    i = read_run_impl_line(scan, i, info);
  }
  parse_inputs(lines, first, last, info);
  info.constant_info = parse_constants(source);
  note_in_out_arguments(info, source);
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