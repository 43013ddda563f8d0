// root_cause.hpp's cause from the culprit's replay: the intermediate that made NaN or Inf, and why.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "evidence/root_cause.hpp"

namespace aoti_bisect {

namespace {

// A measured value of the replay ("nan", "-inf", "0.5").
std::optional<double> value_of(const std::string& text) {
  if (text == "nan") {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (text == "inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (text == "-inf") {
    return -std::numeric_limits<double>::infinity();
  }
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    return used == text.size() ? std::optional<double>(v) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The expression's one operation where its shape is one of a few (`a / b`,
// `a.log()`, `std::sqrt(a)`, `1 / std::sqrt(a)`), with its operands:
// {"div", {"tmp5", "tmp8"}}; {"", {}} for anything else.
std::pair<std::string, std::vector<std::string>> operation_shape(const std::string& expression) {
  std::string e(trim(expression));
  auto ident_only = [](std::string_view t) {
    t = trim(t);
    return !t.empty() && !std::isdigit(static_cast<unsigned char>(t[0])) &&
           std::all_of(t.begin(), t.end(), [](char ch) { return cpp_text::is_ident_char(ch); });
  };
  // A conversion to a narrower float (`at::vec::convert<at::Half,1,float,2>(tmp5)`,
  // `static_cast<c10::BFloat16>(tmp5)`): "to_float16", "to_bfloat16".
  for (const auto& [needle, op] :
       std::vector<std::pair<std::string, std::string>>{{"Half", "to_float16"}, {"BFloat16", "to_bfloat16"}}) {
    size_t open = e.rfind('(');
    if ((e.rfind("at::vec::convert<", 0) == 0 || e.rfind("c10::convert<", 0) == 0 || e.rfind("static_cast<", 0) == 0) &&
        // The destination is the first template argument: `convert<float,1,at::Half,2>` widens.
        e.find(needle) != std::string::npos && e.find(needle) < std::min(e.find(','), e.find('>')) &&
        open != std::string::npos && e.back() == ')' && ident_only(e.substr(open + 1, e.size() - open - 2))) {
      return {op, {std::string(trim(e.substr(open + 1, e.size() - open - 2)))}};
    }
  }
  // A cast around the whole expression: `float(tmp0 * tmp2)`, `static_cast<float>(...)`.
  for (const std::string& cast : {std::string("float("), std::string("double("), std::string("static_cast<float>("),
                                  std::string("static_cast<double>(")}) {
    if (e.rfind(cast, 0) == 0 && e.back() == ')' && cpp_text::closing_bracket(e, cast.size() - 1) == e.size() - 1) {
      e = std::string(trim(e.substr(cast.size(), e.size() - cast.size() - 1)));
    }
  }
  auto ident = [](std::string_view t) {
    t = trim(t);
    return !t.empty() && !std::isdigit(static_cast<unsigned char>(t[0])) &&
           std::all_of(t.begin(), t.end(), [](char ch) { return cpp_text::is_ident_char(ch); });
  };
  static const std::vector<std::pair<std::string, std::string>> calls = {
      {"log", "log"},     {"log1p", "log1p"}, {"sqrt", "sqrt"},
      {"rsqrt", "rsqrt"}, {"exp", "exp"},     {"reciprocal", "reciprocal"},
      {"log2", "log2"},   {"log10", "log10"}, {"acosh", "acosh"},
      {"acos", "acos"},   {"asin", "asin"},   {"atanh", "atanh"},
      {"pow", ""}};
  // a.f()
  if (size_t dot = e.find('.'); dot != std::string::npos && e.ends_with("()") && ident(e.substr(0, dot))) {
    std::string f = e.substr(dot + 1, e.size() - dot - 3);
    for (const auto& [name, op] : calls) {
      if (f == name && !op.empty()) {
        return {op, {std::string(trim(e.substr(0, dot)))}};
      }
    }
  }
  // std::f(a) or f(a), and 1 / std::sqrt(a)
  for (const auto& [name, op] : calls) {
    for (const std::string& prefix : {"std::" + name + "(", name + "(", "1 / std::" + name + "("}) {
      if (op.empty() || !e.starts_with(prefix) || !e.ends_with(")")) {
        continue;
      }
      std::string inner = e.substr(prefix.size(), e.size() - prefix.size() - 1);
      if (ident(inner)) {
        bool reciprocal = prefix.rfind("1 / ", 0) == 0;
        return {reciprocal && op == "sqrt" ? "rsqrt" : reciprocal ? "" : op, {inner}};
      }
    }
  }
  // a OP b, one operator at the top level
  int depth = 0;
  size_t at = std::string::npos;
  int found = 0;
  for (size_t i = 1; i + 1 < e.size(); ++i) {
    char ch = e[i];
    depth += (ch == '(' || ch == '[' || ch == '<') ? 1 : (ch == ')' || ch == ']' || ch == '>') ? -1 : 0;
    if (depth == 0 && e[i - 1] == ' ' && e[i + 1] == ' ' &&
        std::string_view("+-*/").find(ch) != std::string_view::npos) {
      at = i;
      ++found;
    }
  }
  if (found == 1) {
    std::string a(trim(e.substr(0, at))), b(trim(e.substr(at + 1)));
    static const std::map<char, std::string> names = {{'+', "add"}, {'-', "sub"}, {'*', "mul"}, {'/', "div"}};
    if (ident(a) && ident(b)) {
      return {names.at(e[at]), {a, b}};
    }
  }
  return {"", {}};
}

// What the operands make of the operation, where that is plain arithmetic:
// "0/0", "log of a negative value", "inf - inf", "exp overflows"; "".
std::string operation_text(const std::string& op, const std::vector<std::optional<double>>& x, bool made_nan) {
  auto is = [&](size_t i, auto pred) { return i < x.size() && x[i] && pred(*x[i]); };
  auto zero = [](double v) { return v == 0; };
  auto negative = [](double v) { return v < 0 && std::isfinite(v); };
  auto finite = [](double v) { return std::isfinite(v); };
  auto infinite = [](double v) { return std::isinf(v); };
  bool all_finite = !x.empty() && std::all_of(x.begin(), x.end(), [](const auto& v) { return v && std::isfinite(*v); });
  if (op == "log" || op == "log2" || op == "log10") {
    return is(0, negative) ? "log of a negative value" : is(0, zero) ? "log of 0" : "";
  }
  if (op == "log1p") {
    return is(0, [](double v) { return v < -1; })    ? "log1p of a value below -1"
           : is(0, [](double v) { return v == -1; }) ? "log1p of -1"
                                                     : "";
  }
  if (op == "sqrt") {
    return is(0, negative) ? "square root of a negative value" : "";
  }
  if (op == "rsqrt") {
    return is(0, zero) ? "1/sqrt(0)" : is(0, negative) ? "reciprocal square root of a negative value" : "";
  }
  if (op == "reciprocal") {
    return is(0, zero) ? "1/0" : "";
  }
  if (op == "exp") {
    return !made_nan && all_finite ? "exp of a finite value overflows" : "";
  }
  if (op == "acosh") {
    return is(0, [](double v) { return v < 1; }) ? "acosh of a value below 1" : "";
  }
  if (op == "acos" || op == "asin") {
    return is(0, [](double v) { return std::fabs(v) > 1 && std::isfinite(v); }) ? op + " of a value outside [-1, 1]"
                                                                                : "";
  }
  if (op == "atanh") {
    return is(0, [](double v) { return std::fabs(v) > 1 && std::isfinite(v); }) ? "atanh of a value outside [-1, 1]"
           : is(0, [](double v) { return std::fabs(v) == 1; })                  ? "atanh of 1 or -1"
                                                                                : "";
  }
  if (op == "to_float16" || op == "to_bfloat16") {
    double largest = op == "to_float16" ? 65504.0 : 3.3895313892515355e38;
    return !made_nan && is(0, [&](double v) { return std::isfinite(v) && std::fabs(v) > largest; })
               ? fmt::format("a finite value past {}'s range (largest {}) converted to it", op.substr(3),
                             op == "to_float16" ? "65504" : "3.39e38")
               : "";
  }
  if (x.size() != 2 || !x[0] || !x[1]) {
    return "";
  }
  double a = *x[0], b = *x[1];
  if (op == "div") {
    if (a == 0 && b == 0) {
      return "0/0";
    }
    if (std::isinf(a) && std::isinf(b)) {
      return "inf/inf";
    }
    return b == 0 ? "division by zero" : "";
  }
  if (op == "sub" && std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0)) {
    return "inf - inf";
  }
  if (op == "add" && std::isinf(a) && std::isinf(b) && (a > 0) != (b > 0)) {
    return "inf + (-inf)";
  }
  if (op == "mul" && ((is(0, zero) && is(1, infinite)) || (is(0, infinite) && is(1, zero)))) {
    return "0 × inf";
  }
  if (!made_nan && finite(a) && finite(b) && (op == "mul" || op == "add" || op == "sub")) {
    return op == "mul" ? "a product of finite values overflows" : "a sum of finite values overflows";
  }
  return "";
}

IntermediateStep step_of(const IntermediateHit& hit, const Culprit& c) {
  IntermediateStep st;
  st.expression = hit.text;
  st.kind = hit.kind;
  st.value = hit.value;
  st.element = hit.element;
  st.output_tensor = hit.output_tensor;
  st.output_index = hit.output_index;
  st.operands = hit.operands;
  st.elements = hit.count;
  auto [op, names] =
      operation_shape(hit.text.substr(hit.text.find('=') == std::string::npos ? 0 : hit.text.find('=') + 1));
  std::vector<std::optional<double>> values;
  for (const auto& n : names) {
    std::optional<double> v;
    for (const auto& [name, value] : hit.operands) {
      if (name == n) {
        v = value_of(value);
      }
    }
    values.push_back(v);
  }
  st.operation = op.empty() ? "" : operation_text(op, values, hit.kind == "nan");
  // The graph op: the kernel's only ATen op (or post-grad node) of the
  // operation's name, where the package lists them.
  if (!op.empty()) {
    std::vector<std::string> matches;
    for (const auto& a : root_cause_detail::bracketed_list(c.aten_ops)) {
      if (a == "aten." + op || a.rfind("aten." + op + ".", 0) == 0) {
        matches.push_back(a);
      }
    }
    if (matches.empty()) {
      for (const auto& n : c.post_grad_nodes) {
        std::string_view rest = std::string_view(n).substr(std::min(n.size(), op.size()));
        if (n.rfind(op, 0) == 0 && (rest.empty() || (rest[0] == '_' && rest.size() > 1 &&
                                                     std::all_of(rest.begin() + 1, rest.end(), [](char ch) {
                                                       return std::isdigit(static_cast<unsigned char>(ch));
                                                     })))) {
          matches.push_back("graph node " + n);
        }
      }
    }
    st.op = matches.size() == 1 ? matches[0] : "";
  }
  return st;
}

// "`tmp9 = tmp5 / tmp8` made NaN at x0=3, x1=12 (buf7[3, 12]) from tmp5 = 0, tmp8 = 0: 0/0, in aten.div (12 elements)".
std::string step_text(const IntermediateStep& st) {
  std::vector<std::string> at, from, index;
  for (const auto& [name, value] : st.element) {
    at.push_back(fmt::format("{}={}", name, value));
  }
  for (const auto& [name, value] : st.operands) {
    from.push_back(fmt::format("{} = {}", name, value));
  }
  for (auto i : st.output_index) {
    index.push_back(std::to_string(i));
  }
  std::string where = at.empty() ? "" : " at " + join(at, ", ");
  if (!st.output_tensor.empty()) {
    where += fmt::format(" ({}[{}])", st.output_tensor, join(index, ", "));
  }
  std::string made = st.kind == "nan" ? "NaN" : st.value == "-inf" ? "-Inf" : "Inf";
  return fmt::format("`{}` made {}{}{}{}{} ({} time{})", st.expression, made, where,
                     from.empty() ? ", from no intermediate" : " from " + join(from, ", "),
                     st.operation.empty() ? "" : ": " + st.operation, st.op.empty() ? "" : ", in " + st.op, st.elements,
                     st.elements == 1 ? "" : "s");
}

}  // namespace

void explain_intermediate(RootCause& r, const std::vector<const IntermediateHit*>& chain, const Culprit& c) {
  if (chain.empty()) {
    return;
  }
  RootCause before = r;
  r = RootCause{};
  r.basis = "intermediate";
  std::vector<std::string> texts;
  for (const IntermediateHit* hit : chain) {
    r.intermediates.push_back(step_of(*hit, c));
    texts.push_back(step_text(r.intermediates.back()));
  }
  r.operation = r.intermediates.front().operation;
  r.op = r.intermediates.front().op;
  r.sentence = join(texts, "; then ");
  if (before.basis == "constant") {
    r.sentence = before.sentence + "; " + r.sentence;
  }
}

}  // namespace aoti_bisect
