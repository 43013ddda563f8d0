#include "evidence/root_cause.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "package/hooks.hpp"

namespace aoti_bisect {

namespace {

std::string graph_input_label(const WrapperInfo& w, const std::string& name) {
  for (const auto& in : w.inputs) {
    if (in.name == name) {
      return fmt::format("graph input {}", in.index);
    }
  }
  return is_graph_input_name(name) ? "graph input" : "";
}

// What a name holds, through the wrapper's moves and a subgraph's inputs
// (`true_graph_0_arg1_1` holds `emb_weight`): a constant or a graph input
// of the model where the chain is unambiguous, else the name itself.
std::string resolved(const WrapperInfo& w, std::string name) {
  name = base_tensor_name(name);
  for (int hop = 0; hop < 16; ++hop) {
    if (find_constant(w.constant_info, name) || (is_graph_input_name(name) && name.rfind("arg", 0) == 0)) {
      return name;
    }
    std::string from;
    int sources = 0;
    for (const auto& [to, f] : w.value_moves) {
      if (to == name) {
        from = f;
        ++sources;
      }
    }
    if (sources != 1) {
      return name;
    }
    name = from;
  }
  return name;
}

// How a report names a tensor: "parameter emb.weight", "graph input 1 (arg8_1)", "buf3".
std::string label(const WrapperInfo& w, const std::string& tensor) {
  std::string r = resolved(w, tensor);
  if (const ConstantInfo* c = find_constant(w.constant_info, r)) {
    return describe_constant(*c);
  }
  std::string in = graph_input_label(w, r);
  return in.empty() ? tensor : fmt::format("{} ({})", in, r);
}

bool integral(const std::string& dtype) {
  return dtype.rfind("int", 0) == 0 || dtype.rfind("uint", 0) == 0;
}

std::string nonfinite_text(const TensorStats& s) {
  std::vector<std::string> parts;
  if (s.nan_count) {
    parts.push_back(fmt::format("{} NaN", s.nan_count));
  }
  if (s.inf_count) {
    parts.push_back(fmt::format("{} Inf", s.inf_count));
  }
  return join(parts, " and ");
}

bool has_token(std::string_view text, const std::string& token) {
  for (size_t at = text.find(token); at != std::string_view::npos; at = text.find(token, at + 1)) {
    bool left = at == 0 || !cpp_text::is_ident_char(text[at - 1]);
    size_t end = at + token.size();
    bool right = end >= text.size() || !cpp_text::is_ident_char(text[end]);
    if (left && right) {
      return true;
    }
  }
  return false;
}

// `auto tmpN = ...` -> "tmpN".
std::string assigned_tmp(std::string_view line) {
  line = trim(line);
  if (line.rfind("auto ", 0) != 0) {
    return "";
  }
  size_t end = line.find(' ', 5);
  return end == std::string_view::npos ? "" : std::string(line.substr(5, end - 5));
}

// The stride multiplying `tmp` in an index expression ("x1 + 16L*tmp1" -> 16).
int64_t stride_of(std::string_view expr, const std::string& tmp) {
  size_t at = expr.find("*" + tmp);
  if (at == std::string_view::npos) {
    return 1;
  }
  size_t digits_end = at;
  if (digits_end > 0 && expr[digits_end - 1] == 'L') {
    --digits_end;
  }
  size_t digits_start = digits_end;
  while (digits_start > 0 && std::isdigit(static_cast<unsigned char>(expr[digits_start - 1]))) {
    --digits_start;
  }
  if (digits_start == digits_end || digits_end - digits_start > 15) {
    return 1;
  }
  return std::stoll(std::string(expr.substr(digits_start, digits_end - digits_start)));
}

// The largest finite value of a floating dtype, as people write it.
std::string largest_finite(const std::string& dtype) {
  if (dtype == "float16") {
    return "65504";
  }
  if (dtype == "bfloat16" || dtype == "float32") {
    return "3.4e38";
  }
  if (dtype == "float64") {
    return "1.8e308";
  }
  return "";
}

// "[aten.addmm]" -> {"aten.addmm"}.
std::vector<std::string> bracketed_list(std::string text) {
  std::vector<std::string> out;
  text = std::string(trim(text));
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  for (size_t start = 0; start <= text.size();) {
    size_t comma = text.find(',', start);
    std::string item(
        trim(std::string_view(text).substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (!item.empty()) {
      out.push_back(item);
    }
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 1;
  }
  return out;
}

// An extern call's NaN/Inf from finite inputs: its op, what it read and
// what it wrote, measured by the probes. "Overflowed" only for Inf (and
// no NaN) out of finite inputs: values past the dtype's finite range.
RootCause extern_cause(const Culprit& c, const WrapperInfo& w) {
  RootCause r;
  std::vector<std::string> ranges;
  for (const auto& a : c.args) {
    if (!a.initialized || !a.before) {
      continue;
    }
    if (a.before->nonfinite() > 0) {
      return r;  // not from finite inputs: the reach and the producer say where they come from
    }
    if (a.before->min && a.before->max && ranges.size() < 4) {
      ranges.push_back(
          fmt::format("{} in [{}, {}]", label(w, a.tensor), number_text(*a.before->min), number_text(*a.before->max)));
    }
  }
  const ProbeStats* out = nullptr;
  for (const auto& a : c.args) {
    int64_t had = a.initialized && a.before ? a.before->nonfinite() : 0;
    if (a.after && a.after->nonfinite() > had) {
      out = out ? out : &a;
    }
  }
  if (out == nullptr) {
    return r;
  }
  // Its ATen op: the one of the comment's the C shim's name is for
  // (aoti_torch_cpu_addmm_out: aten.addmm), else the only one listed.
  auto ops = bracketed_list(c.aten_ops);
  std::string stem = c.kernel;
  for (std::string_view prefix : {"aoti_torch_cpu_", "aoti_torch_cuda_", "aoti_torch_xpu_", "aoti_torch_mps_"}) {
    if (stem.rfind(prefix, 0) == 0) {
      stem = stem.substr(prefix.size());
    }
  }
  if (stem.ends_with("_out")) {
    stem = stem.substr(0, stem.size() - 4);
  }
  r.op = ops.size() == 1 ? ops[0] : "";
  for (const auto& o : ops) {
    r.op = o == "aten." + stem ? o : r.op;
  }
  std::string op = r.op.empty() ? c.kernel : r.op;
  r.basis = "extern_inputs";
  std::string read = ranges.empty() ? "finite inputs" : fmt::format("finite inputs ({})", join(ranges, ", "));
  std::string dtype = out->after->dtype;
  if (out->after->nan_count == 0 && !largest_finite(dtype).empty()) {
    r.operation = "overflow";
    r.sentence = fmt::format("{} overflowed {}: it wrote {} into {} from {}; the largest finite {} is {}", op, dtype,
                             nonfinite_text(*out->after), out->tensor, read, dtype, largest_finite(dtype));
  } else {
    r.sentence = fmt::format("{} wrote {} into {} from {}", op, nonfinite_text(*out->after), out->tensor, read);
  }
  return r;
}

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

}  // namespace

void annotate_origins(Culprit& c, const WrapperInfo& w) {
  // A frozen weight has lost its module path; the one bias the same call
  // reads, where the package names it ("b.bias"), is said beside it as what
  // was measured: read with it, not a guess at the weight's name.
  std::string bias_fqn;
  for (const auto& a : c.args) {
    const ConstantInfo* k = find_constant(w.constant_info, resolved(w, a.tensor));
    if (k && k->fqn.size() > 5 && k->fqn.ends_with(".bias")) {
      bias_fqn = bias_fqn.empty() ? k->fqn : "?";
    }
  }
  for (auto& a : c.args) {
    std::string r = resolved(w, a.tensor);
    if (const ConstantInfo* k = find_constant(w.constant_info, r)) {
      a.fqn = k->fqn;
      a.origin = describe_constant(*k);
      if (k->frozen() && !bias_fqn.empty() && bias_fqn != "?") {
        a.origin += fmt::format(", read with {}", bias_fqn);
      }
    } else if (std::string in = graph_input_label(w, r); !in.empty()) {
      a.origin = r == base_tensor_name(a.tensor) ? in : fmt::format("{} ({})", in, r);
    }
  }
  if (c.producer && !c.producer->call_index) {
    if (const ConstantInfo* k = find_constant(w.constant_info, resolved(w, c.producer->tensor))) {
      std::string rest = c.producer->why;
      if (rest.rfind(c.producer->tensor, 0) == 0) {
        rest = rest.substr(c.producer->tensor.size());
      }
      c.producer->why = fmt::format("{} ({}){}", describe_constant(*k), c.producer->tensor, rest);
    }
  }
}

std::optional<WildIndex> wild_index(const Culprit& c, const std::string& def, const CallSite* site) {
  if (def.empty() || site == nullptr) {
    return std::nullopt;
  }
  auto declared = kernel_declarations(def);
  auto found = declared.find(c.kernel);
  if (found == declared.end()) {
    return std::nullopt;
  }
  std::vector<std::pair<std::string, std::string>> params;  // (type, name), in order
  for (const auto& p : found->second) {
    params.emplace_back(p.type, p.name);
  }
  auto arg_of = [&](const std::string& param) -> const ProbeStats* {
    for (size_t i = 0; i < params.size() && i < site->args.size(); ++i) {
      if (params[i].second == param) {
        for (const auto& a : c.args) {
          if (a.tensor == site->args[i] || base_tensor_name(a.tensor) == base_tensor_name(site->args[i])) {
            return &a;
          }
        }
      }
    }
    return nullptr;
  };
  std::set<std::string> index_params;
  for (const auto& [type, name] : params) {
    if (type.find("int64_t*") != std::string::npos || type.find("int32_t*") != std::string::npos) {
      index_params.insert(name);
    }
  }
  if (index_params.empty()) {
    return std::nullopt;
  }
  // Values loaded from an index pointer, and what is computed from them.
  std::map<std::string, std::string> tainted;  // tmp -> index param
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < def.size();) {
    size_t end = def.find('\n', pos);
    lines.push_back(std::string_view(def).substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    pos = end == std::string::npos ? def.size() : end + 1;
  }
  for (auto line : lines) {
    std::string tmp = assigned_tmp(line);
    if (tmp.empty()) {
      continue;
    }
    for (const auto& p : index_params) {
      if (has_token(line, p)) {
        tainted[tmp] = p;
      }
    }
    for (const auto& [t, p] : std::map<std::string, std::string>(tainted)) {
      if (t != tmp && has_token(line.substr(line.find('=')), t)) {
        tainted[tmp] = p;
      }
    }
  }
  // Pointers indexed with them: `in_ptrJ[static_cast<int64_t>(EXPR)]` or `in_ptrJ + static_cast<int64_t>(EXPR)`.
  for (auto line : lines) {
    for (const auto& [type, ptr] : params) {
      if (index_params.count(ptr)) {
        continue;
      }
      for (const std::string& open : {ptr + "[static_cast<int64_t>(", ptr + " + static_cast<int64_t>("}) {
        size_t at = line.find(open);
        if (at == std::string_view::npos) {
          continue;
        }
        std::string_view expr = line.substr(at + open.size());
        expr = expr.substr(0, expr.find(')'));
        for (const auto& [tmp, index_param] : tainted) {
          if (!has_token(expr, tmp)) {
            continue;
          }
          const ProbeStats* index = arg_of(index_param);
          const ProbeStats* table = arg_of(ptr);
          const std::optional<TensorStats>& is = index ? index->before : std::nullopt;
          const std::optional<TensorStats>& ts = table ? (table->before ? table->before : table->after) : std::nullopt;
          if (!is || !ts || !is->max || !is->min || ts->numel <= 0) {
            continue;
          }
          int64_t stride = std::max<int64_t>(1, stride_of(expr, tmp));
          int64_t rows = ts->numel / stride;
          auto hi = static_cast<int64_t>(*is->max);
          auto lo = static_cast<int64_t>(*is->min);
          if (hi >= rows || lo < -rows) {
            return WildIndex{index->tensor, hi >= rows ? hi : lo, table->tensor, rows};
          }
        }
      }
    }
  }
  return std::nullopt;
}

RootCause root_cause(const Culprit& c, Predicate predicate, const std::optional<WildIndex>& wild, const WrapperInfo& w,
                     std::optional<int64_t> named_bound) {
  RootCause r;
  auto producer_text = [&](const std::string& tensor) -> std::string {
    if (c.producer && base_tensor_name(c.producer->tensor) == base_tensor_name(tensor) && c.producer->call_index) {
      return fmt::format("call site {} {}", *c.producer->call_index, c.producer->kernel);
    }
    return label(w, tensor);
  };
  if (!c.unwritten.empty()) {
    std::string from = c.producer && c.producer->call_index
                           ? fmt::format("; call site {} {} wrote only part of {}", *c.producer->call_index,
                                         c.producer->kernel, c.producer->tensor)
                           : "";
    r.basis = "unwritten";
    r.sentence = c.unwritten + from;
    return r;
  }
  if (wild) {
    std::string cmp = wild->value < 0 ? fmt::format("< -{}", wild->bound) : fmt::format("≥ {}", wild->bound);
    r.basis = "index";
    r.sentence = fmt::format("index {} {} rows of {}, from {}", wild->value, cmp, label(w, wild->indexed_tensor),
                             producer_text(wild->index_tensor));
    return r;
  }
  if (named_bound && c.producer) {
    for (const auto& a : c.args) {
      if (a.tensor == c.producer->tensor && a.before && integral(a.before->dtype) && a.before->max && a.before->min) {
        auto hi = static_cast<int64_t>(*a.before->max);
        auto lo = static_cast<int64_t>(*a.before->min);
        int64_t value = hi >= *named_bound ? hi : lo;
        r.basis = "index";
        r.sentence = fmt::format("index {} outside [0, {}) (the bound the error names), from {}", value, *named_bound,
                                 producer_text(a.tensor));
        return r;
      }
    }
  }
  if (predicate != Predicate::nonfinite && predicate != Predicate::mismatch) {
    return r;
  }
  // A constant the culprit reads holds NaN/Inf: measured before the launch
  // (behind wrong but finite values too, where the kernel makes them finite).
  for (const auto& a : c.args) {
    if (a.fqn.empty() && a.origin.rfind("parameter", 0) != 0 && a.origin.rfind("buffer", 0) != 0) {
      continue;
    }
    // Behind wrong values, NaN only: Inf is held on purpose (a mask).
    bool bad =
        predicate == Predicate::mismatch ? a.before && a.before->nan_count > 0 : a.before && a.before->nonfinite() > 0;
    if (bad) {
      r.basis = "constant";
      r.sentence = fmt::format("reads {}, which holds {} before the launch (a constant of the package)",
                               a.origin.empty() ? label(w, a.tensor) : a.origin, nonfinite_text(*a.before));
      return r;
    }
  }
  if (c.kind == "extern" && predicate == Predicate::nonfinite) {
    return extern_cause(c, w);
  }
  return r;
}

}  // namespace aoti_bisect

namespace aoti_bisect {

namespace {

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
    for (const auto& a : bracketed_list(c.aten_ops)) {
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
