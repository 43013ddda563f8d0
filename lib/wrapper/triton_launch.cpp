// What a CUDA wrapper's call_triton_<kernel> definitions say about each Triton launch.
#include "wrapper/triton_launch.hpp"

#include <algorithm>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "wrapper/wrapper.hpp"
#include "wrapper/wrapper_text.hpp"

namespace aoti_bisect {
namespace {

using cpp_text::closing_bracket;
using cpp_text::is_ident_char;
using cpp_text::without_comments;
using wrapper_text::ident_at;

// "const in_ptr0_type_& in_ptr0" -> "in_ptr0"; a default value is dropped.
std::string param_name(std::string p) {
  if (size_t eq = p.find('='); eq != std::string::npos) {
    p = p.substr(0, eq);
  }
  std::string_view t = trim(p);
  size_t e = t.size();
  size_t b = e;
  while (b > 0 && is_ident_char(t[b - 1])) {
    --b;
  }
  return std::string(t.substr(b));
}

using cpp_text::skip_space;

// `CUdeviceptr VAR = reinterpret_cast<CUdeviceptr>(X.data_ptr());` -> VAR -> X.
std::map<std::string, std::string> device_pointers(const std::string& body) {
  std::map<std::string, std::string> out;
  constexpr std::string_view decl = "CUdeviceptr ";
  constexpr std::string_view cast = "reinterpret_cast<CUdeviceptr>(";
  for (size_t p = body.find(decl); p != std::string::npos; p = body.find(decl, p + 1)) {
    if (p > 0 && is_ident_char(body[p - 1])) {
      continue;
    }
    size_t q = skip_space(body, p + decl.size());
    std::string var = ident_at(body, q);
    q = skip_space(body, q + var.size());
    if (var.empty() || q >= body.size() || body[q] != '=') {
      continue;
    }
    q = skip_space(body, q + 1);
    if (body.compare(q, cast.size(), cast) != 0) {
      continue;
    }
    q = skip_space(body, q + cast.size());
    std::string x = ident_at(body, q);
    if (!x.empty() && body.compare(q + x.size(), 11, ".data_ptr()") == 0) {
      out[var] = x;
    }
  }
  return out;
}

// The arguments of the first call of `fn(` in `body`, or empty.
std::vector<std::string> first_call_args(const std::string& body, std::string_view fn) {
  for (size_t p = body.find(fn); p != std::string::npos; p = body.find(fn, p + 1)) {
    if ((p > 0 && is_ident_char(body[p - 1])) || body.compare(p + fn.size(), 1, "(") != 0) {
      continue;
    }
    size_t close = closing_bracket(body, p + fn.size());
    if (close == std::string::npos) {
      return {};
    }
    return split_call_arguments(std::string_view(body).substr(p + fn.size(), close - p - fn.size() + 1));
  }
  return {};
}

std::optional<TritonLaunch> read_definition(const std::string& text, size_t name_at, const std::string& name) {
  TritonLaunch launch;
  launch.kernel = name.substr(5);  // call_triton_x -> triton_x
  size_t open = skip_space(text, name_at + name.size());
  if (open >= text.size() || text[open] != '(') {
    return std::nullopt;
  }
  size_t close = closing_bracket(text, open);
  if (close == std::string::npos) {
    return std::nullopt;
  }
  size_t brace = skip_space(text, close + 1);
  if (brace >= text.size() || text[brace] != '{') {
    return std::nullopt;  // a declaration, or a call
  }
  size_t end = closing_bracket(text, brace);
  if (end == std::string::npos) {
    return std::nullopt;
  }
  for (const auto& p : split_call_arguments(std::string_view(text).substr(open, close - open + 1))) {
    launch.params.push_back(param_name(p));
  }
  std::string body = text.substr(brace, end - brace + 1);
  auto load = first_call_args(body, "loadKernel");
  if (load.size() >= 2 && load[1].size() >= 2 && load[1].front() == '"' && load[1].back() == '"') {
    launch.function = load[1].substr(1, load[1].size() - 2);
  }
  constexpr std::string_view list = "kernel_args_[] = {";
  size_t l = body.find(list);
  if (l == std::string::npos) {
    return std::nullopt;
  }
  size_t lb = l + list.size() - 1;
  size_t le = closing_bracket(body, lb);
  if (le == std::string::npos) {
    return std::nullopt;
  }
  auto pointers = device_pointers(body);
  std::string items = "(" + body.substr(lb + 1, le - lb - 1) + ")";
  for (const auto& item : split_call_arguments(items)) {
    int from = -1;
    if (!item.empty() && item.front() == '&') {
      std::string var = ident_at(item, 1);
      auto it = var.size() + 1 == item.size() ? pointers.find(var) : pointers.end();
      if (it != pointers.end()) {
        auto p = std::find(launch.params.begin(), launch.params.end(), it->second);
        from = p == launch.params.end() ? -1 : static_cast<int>(p - launch.params.begin());
      }
    }
    launch.tensor_of.push_back(from);
  }
  return launch;
}

}  // namespace

std::vector<int> TritonLaunch::tensor_params() const {
  std::vector<int> out;
  for (int t : tensor_of) {
    if (t >= 0 && std::find(out.begin(), out.end(), t) == out.end()) {
      out.push_back(t);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, TritonLaunch> triton_launches(const std::string& wrapper_source) {
  std::map<std::string, TritonLaunch> out;
  if (wrapper_source.find("call_triton_") == std::string::npos) {
    return out;
  }
  std::string text = without_comments(wrapper_source);
  constexpr std::string_view marker = "void call_triton_";
  for (size_t p = text.find(marker); p != std::string::npos; p = text.find(marker, p + 1)) {
    if (p > 0 && is_ident_char(text[p - 1])) {
      continue;
    }
    size_t at = p + 5;
    std::string name = ident_at(text, at);
    if (auto launch = read_definition(text, at, name)) {
      out.emplace(launch->kernel, std::move(*launch));
    }
  }
  return out;
}

}  // namespace aoti_bisect
