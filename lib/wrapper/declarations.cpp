// C function declarations (kernels', the C shim's) read from source text with their parameters.
#include "wrapper/declarations.hpp"

#include <initializer_list>
#include <optional>
#include <string_view>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "wrapper/wrapper_text.hpp"

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

}  // namespace

std::map<std::string, std::vector<HookParam>> kernel_declarations(const std::string& source) {
  // `extern "C"  void  cpp_fused_x(float* in_out_ptr0, ...)`, ended by ';'
  // (a declaration) or '{' (the definition in kernel.cpp).
  return declarations(source, {"extern \"C\"", "void"}, ";{");
}

std::map<std::string, std::vector<HookParam>> shim_declarations(const std::string& header_text) {
  return declarations(header_text, {"AOTITorchError"}, ";");
}

}  // namespace aoti_bisect
