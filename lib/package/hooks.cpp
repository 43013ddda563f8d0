// The interposition hook library's C++ source, generated from the package's own text.
#include "package/hooks.hpp"

#include <cctype>
#include <initializer_list>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "package/hooks_cuda.hpp"
#include "package/wrapper_text.hpp"

namespace aoti_bisect {
namespace {

using cpp_text::ident_at;
using cpp_text::skip_space;

// "const float* in_ptr0, int64_t ks0" -> params; nullopt when one cannot be
// read (a function pointer, an unnamed parameter).
std::optional<std::vector<HookParam>> parse_params(std::string_view list) {
  std::vector<HookParam> out;
  list = trim(list);
  if (list.empty() || list == "void") {
    return out;
  }
  if (list.find('(') != std::string_view::npos) {
    return std::nullopt;
  }
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] != ',') {
      continue;
    }
    std::string p(trim(list.substr(start, i - start)));
    start = i + 1;
    size_t e = p.size();
    size_t b = e;
    while (b > 0 && cpp_text::is_ident_char(p[b - 1])) {
      --b;
    }
    std::string type(trim(std::string_view(p).substr(0, b)));
    if (b == e || type.empty() || std::isdigit(static_cast<unsigned char>(p[b]))) {
      return std::nullopt;
    }
    out.push_back({type, p.substr(b)});
  }
  return out;
}

// Declarations `<lead...> NAME(params)` followed by one of `ends`: the
// lead's words in order, each a whole word, apart by white space (comments
// are gone first).
std::map<std::string, std::vector<HookParam>> declarations(const std::string& raw,
                                                           std::initializer_list<std::string_view> lead,
                                                           std::string_view ends) {
  std::string text = wrapper_text::without_comments(raw);
  std::map<std::string, std::vector<HookParam>> out;
  auto word_at = [&](size_t q, std::string_view word) {
    return text.compare(q, word.size(), word) == 0 && (q == 0 || !cpp_text::is_ident_char(text[q - 1])) &&
           (q + word.size() >= text.size() || !cpp_text::is_ident_char(text[q + word.size()]));
  };
  const std::string_view first = *lead.begin();
  for (size_t p = text.find(first); p != std::string::npos; p = text.find(first, p + 1)) {
    size_t q = p;
    bool matched = true;
    for (std::string_view word : lead) {
      if (!word_at(q, word)) {
        matched = false;
        break;
      }
      q = skip_space(text, q + word.size());
    }
    if (!matched) {
      continue;
    }
    std::string name = ident_at(text, q);
    size_t open = skip_space(text, q + name.size());
    if (name.empty() || open >= text.size() || text[open] != '(') {
      continue;
    }
    size_t close = text.find(')', open);
    if (close == std::string::npos) {
      break;
    }
    size_t after = skip_space(text, close + 1);
    if (after >= text.size() || ends.find(text[after]) == std::string_view::npos) {
      continue;
    }
    if (auto params = parse_params(std::string_view(text).substr(open + 1, close - open - 1))) {
      out.emplace(name, std::move(*params));
    }
  }
  return out;
}

std::vector<std::string> identifiers(const std::string& type) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < type.size();) {
    if (cpp_text::is_ident_char(type[i])) {
      std::string id = ident_at(type, i);
      ids.push_back(id);
      i += id.size();
    } else {
      ++i;
    }
  }
  return ids;
}

const std::set<std::string>& scalar_words() {
  static const std::set<std::string> words = {
      "const", "int64_t", "int32_t", "int16_t",  "int8_t", "uint64_t", "uint32_t", "uint16_t", "uint8_t", "int",
      "long",  "short",   "char",    "unsigned", "signed", "double",   "float",    "bool",     "size_t",  "void"};
  return words;
}

// The type a hook declares for a parameter, or "" when it cannot.
std::string hook_type(const HookParam& p, bool kernel, std::set<std::string>& handle_types) {
  if (kernel && p.type.find('*') != std::string::npos) {
    return p.type.find("const") != std::string::npos ? "const void*" : "void*";
  }
  for (const auto& id : identifiers(p.type)) {
    if (scalar_words().count(id)) {
      continue;
    }
    if (!kernel && (id == "AOTITorchError" || id.ends_with("Handle"))) {
      if (id != "AtenTensorHandle") {
        handle_types.insert(id);
      }
      continue;
    }
    return "";
  }
  return p.type;
}

enum class Role { none, pointer, tensor, created, optional_tensor, tensor_list };

std::string compact(std::string type) {
  std::string out;
  for (char c : type) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      out += c;
    }
  }
  return out;
}

Role role_of(const std::vector<HookParam>& params, size_t i, bool kernel, std::string& list_len) {
  const HookParam& p = params[i];
  if (kernel) {
    return p.type.find('*') != std::string::npos ? Role::pointer : Role::none;
  }
  std::string t = compact(p.type);
  if (t == "AtenTensorHandle") {
    return Role::tensor;
  }
  if (t == "constAtenTensorHandle*" || t == "AtenTensorHandle*") {
    // A list: "const AtenTensorHandle* tensors, int64_t tensors_len_", or
    // "int num_tensors, AtenTensorHandle* flatten_tensor_args".
    if (i + 1 < params.size() && params[i + 1].name == p.name + "_len_") {
      list_len = params[i + 1].name;
      return Role::tensor_list;
    }
    if (i > 0 && params[i - 1].name.rfind("num_", 0) == 0 && params[i - 1].type.find('*') == std::string::npos) {
      list_len = params[i - 1].name;
      return Role::tensor_list;
    }
    if (t == "AtenTensorHandle*" && p.name.rfind("ret", 0) == 0) {
      return Role::created;
    }
    return Role::optional_tensor;
  }
  return Role::none;
}

// What a hook shows of each argument, before and after the call.
void probe_lines(const std::vector<HookParam>& params, bool kernel, std::string& before, std::string& after) {
  auto both = [&](const std::string& pattern, size_t i) {
    before += fmt::format(fmt::runtime(pattern), i, 0);
    after += fmt::format(fmt::runtime(pattern), i, 1);
  };
  for (size_t i = 0; i < params.size(); ++i) {
    std::string len;
    switch (role_of(params, i, kernel, len)) {
      case Role::pointer: both("    aoti_bisect_pointer(a{0}, {0}, {1});\n", i); break;
      case Role::tensor: both("    aoti_bisect_tensor(a{0}, {0}, {1});\n", i); break;
      case Role::created:
        after += fmt::format("    if (e == 0 && a{0} && *a{0}) aoti_bisect_tensor(*a{0}, {0}, 1);\n", i);
        break;
      case Role::optional_tensor: both("    if (a{0} && *a{0}) aoti_bisect_tensor(*a{0}, {0}, {1});\n", i); break;
      case Role::tensor_list: {
        size_t li = 0;
        for (size_t j = 0; j < params.size(); ++j) {
          li = params[j].name == len ? j : li;
        }
        both(fmt::format("    for (int64_t i = 0; a{{0}} && i < (int64_t)a{}; ++i) if (a{{0}}[i]) "
                         "aoti_bisect_tensor_at(a{{0}}[i], {{0}}, (int)i, {{1}});\n",
                         li),
             i);
        break;
      }
      case Role::none: break;
    }
  }
}

const char* k_prelude = R"(// Generated by aoti-bisect from a package's wrapper.cpp and the installed
// C-shim headers: one hook per function its call sites call. Do not edit.
#include <cstdint>

extern "C" {
typedef int32_t AOTITorchError;
typedef struct AtenTensorOpaque* AtenTensorHandle;
{handle_types}
// The runner's callbacks (apps/aoti-bisect-runner/hooks_abi.cpp).
int aoti_bisect_enter(const char* kernel);
void aoti_bisect_tensor(void* handle, int arg, int after);
void aoti_bisect_tensor_at(void* handle, int arg, int element, int after);
void aoti_bisect_pointer(const void* pointer, int arg, int after);
void aoti_bisect_launched(int failed);
void aoti_bisect_data_ptr(void* handle, void* pointer);
void aoti_bisect_forget(void* handle);

struct aoti_bisect_hook {
  const char* symbol;
  void* hook;
  void** real;
};
}
)";

}  // namespace

std::map<std::string, std::vector<HookParam>> kernel_declarations(const std::string& source) {
  // `extern "C"  void  cpp_fused_x(float* in_out_ptr0, ...)`, ended by ';'
  // (a declaration) or '{' (the definition in kernel.cpp).
  return declarations(source, {"extern \"C\"", "void"}, ";{");
}

std::map<std::string, std::vector<HookParam>> shim_declarations(const std::string& header_text) {
  return declarations(header_text, {"AOTITorchError"}, ";");
}

// NOLINTNEXTLINE(readability-function-size): over 100 lines, to split into named pieces (issue 55)
HookLibrary generate_hooks(const WrapperInfo& wrapper, const std::map<std::string, std::vector<HookParam>>& kernels,
                           const std::map<std::string, std::vector<HookParam>>& shims,
                           const std::map<std::string, TritonLaunch>& triton) {
  HookLibrary lib;
  std::set<std::string> handle_types;
  std::string body;
  std::string table;
  std::set<std::string> done;
  int n = 0;
  // What a hook tells the runner it entered: its symbol, or for the proxy
  // executor's one function, the operator its extern node runs.
  std::string proxy_table;
  auto enter_name = [&](const std::string& symbol) -> std::string {
    if (symbol != k_proxy_call || wrapper.proxy_ops.empty()) {
      return fmt::format("\"{}\"", symbol);
    }
    std::vector<std::string> ops;
    for (const auto& op : wrapper.proxy_ops) {
      ops.push_back(fmt::format("\"{}\"", op.empty() ? std::string(k_proxy_call) : op));
    }
    proxy_table = fmt::format("static const char* const aoti_bisect_proxy_ops[] = {{{}}};\n", join(ops, ", "));
    return fmt::format("(a1 >= 0 && a1 < {} ? aoti_bisect_proxy_ops[a1] : \"{}\")", ops.size(), k_proxy_call);
  };
  auto add = [&](const std::string& symbol, const std::vector<HookParam>& params, bool kernel, bool site) {
    std::vector<std::string> types;
    for (const auto& p : params) {
      std::string t = hook_type(p, kernel, handle_types);
      if (t.empty()) {
        lib.problems.push_back(
            fmt::format("{}: parameter '{} {}' has a type the hook cannot declare", symbol, p.type, p.name));
        return;
      }
      types.push_back(t);
    }
    std::string ret = kernel ? "void" : "AOTITorchError";
    std::vector<std::string> decl, call;
    for (size_t i = 0; i < params.size(); ++i) {
      decl.push_back(fmt::format("{} a{}", types[i], i));
      call.push_back(fmt::format("a{}", i));
    }
    std::string before, after;
    if (site) {
      probe_lines(params, kernel, before, after);
    }
    std::string fn = fmt::format("aoti_bisect_hook_{}", n);
    body += fmt::format("// {}\nstatic {} (*real_{})({});\n", symbol, ret, n, join(types, ", "));
    body += fmt::format("extern \"C\" {} {}({}) {{\n", ret, fn, join(decl, ", "));
    if (!site) {
      if (symbol == "aoti_torch_get_data_ptr") {
        body += fmt::format(
            "  {} e = real_{}({});\n  if (e == 0 && a1) aoti_bisect_data_ptr(a0, *a1);\n  return e;\n}}\n\n", ret, n,
            join(call, ", "));
      } else {
        body += fmt::format("  aoti_bisect_forget(a0);\n  return real_{}({});\n}}\n\n", n, join(call, ", "));
      }
    } else {
      std::string entered = enter_name(symbol);
      body = proxy_table + body;
      proxy_table.clear();
      body += fmt::format("  int m = aoti_bisect_enter({});\n", entered);
      body += fmt::format("  if (m) {{\n{}  }}\n", before);
      if (kernel) {
        body += fmt::format("  real_{}({});\n  const int e = 0;\n  aoti_bisect_launched(0);\n", n, join(call, ", "));
      } else {
        body += fmt::format("  {} e = real_{}({});\n  aoti_bisect_launched(e != 0);\n", ret, n, join(call, ", "));
      }
      body += fmt::format("  if (m && e == 0) {{\n{}  }}\n", after);
      body += kernel ? "}\n\n" : "  return e;\n}\n\n";
    }
    table += fmt::format("    {{\"{}\", (void*)&{}, (void**)&real_{}}},\n", symbol, fn, n);
    lib.hooked.push_back(symbol);
    lib.site_functions += site ? 1 : 0;
    ++n;
  };
  std::vector<const TritonLaunch*> launches;
  for (const auto& site : wrapper.call_sites) {
    const std::string symbol = called_symbol(site);
    if (!done.insert(symbol).second) {
      continue;
    }
    if (site.kind == KernelKind::triton) {
      // Seen through the CUDA driver's cuLaunchKernel (package/hooks_cuda.hpp).
      auto it = triton.find(site.kernel);
      if (it == triton.end()) {
        lib.problems.push_back(site.kernel + ": a Triton launch whose call_" + site.kernel +
                               " definition (its kernel_args_) cannot be read from the wrapper");
      } else {
        launches.push_back(&it->second);
      }
      continue;
    }
    bool kernel = site.kind == KernelKind::cpp;
    const auto& decls = kernel ? kernels : shims;
    auto it = decls.find(symbol);
    if (it == decls.end()) {
      lib.problems.push_back(symbol + (kernel ? ": no declaration in the wrapper or kernel source"
                                              : ": no declaration in the installed C-shim headers"));
      continue;
    }
    add(symbol, it->second, kernel, true);
  }
  if (!launches.empty()) {
    HookText cuda{"", "", n, {}};
    append_cuda_launch_hooks(launches, cuda);
    body += cuda.body;
    table += cuda.table;
    n = cuda.n;
    lib.hooked.insert(lib.hooked.end(), cuda.hooked.begin(), cuda.hooked.end());
  }
  add("aoti_torch_get_data_ptr", {{"AtenTensorHandle", "tensor"}, {"void**", "ret_data_ptr"}}, false, false);
  add("aoti_torch_delete_tensor_object", {{"AtenTensorHandle", "tensor"}}, false, false);
  if (!lib.problems.empty()) {
    lib.hooked.clear();
    return lib;
  }
  std::string types;
  for (const auto& t : handle_types) {
    types += fmt::format("typedef struct {}_opaque* {};\n", t, t);
  }
  std::string prelude = k_prelude;
  prelude.replace(prelude.find("{handle_types}"), 14, types);
  lib.source = prelude + fmt::format("\nextern \"C\" const int aoti_bisect_hook_abi = {};\n\n", k_hook_abi_version) +
               body + "extern \"C\" const aoti_bisect_hook aoti_bisect_hooks[] = {\n" + table + "};\n" +
               fmt::format("extern \"C\" const int aoti_bisect_hook_count = {};\n", n);
  return lib;
}

}  // namespace aoti_bisect
