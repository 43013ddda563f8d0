// The wrapper's call sites read from their lines: the kernel, its arguments, what it returns, what it writes in place.
#include <cctype>
#include <set>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "wrapper/declarations.hpp"
#include "wrapper/triton_launch.hpp"
#include "wrapper/wrapper.hpp"
#include "wrapper/wrapper_text.hpp"

namespace aoti_bisect {
namespace {

using namespace wrapper_text;

// The kernels an `extern "C" void NAME(` line declares on one line.
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

// The call site line `t` starts, by the kernel it calls and its kind; the rest of it unread.
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

namespace wrapper_text {

std::set<std::string> cpp_kernel_names(const std::vector<std::string_view>& lines, const std::string& source) {
  auto cpp_kernels = declared_cpp_kernels(lines);
  // CPP GEMM templates (max_autotune on the CPU) are declared over two lines,
  // `extern "C" \nvoid cpp_fused_addmm_0(const float* X, ...)`.
  for (const auto& [name, params] : kernel_declarations(source)) {
    cpp_kernels.insert(name);
  }
  return cpp_kernels;
}

std::optional<CallSite> read_call_site(const std::vector<std::string_view>& lines, size_t i, std::string_view t,
                                       const std::set<std::string>& cpp_kernels) {
  auto site = call_site_of(t, cpp_kernels);
  if (!site) {
    return std::nullopt;
  }
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
  return site;
}

void note_in_out_arguments(WrapperInfo& info, const std::string& source) {
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
}

}  // namespace wrapper_text
}  // namespace aoti_bisect
