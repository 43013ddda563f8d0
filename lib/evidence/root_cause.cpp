#include "evidence/root_cause.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
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


bool integral(const std::string& dtype) { return dtype.rfind("int", 0) == 0 || dtype.rfind("uint", 0) == 0; }

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

}  // namespace

void annotate_origins(Culprit& c, const WrapperInfo& w) {
  // A frozen weight read with a bias the package names ("b.bias") is that
  // module's weight, most likely: said so, as a likelihood.
  std::string bias_module;
  for (const auto& a : c.args) {
    const ConstantInfo* k = find_constant(w.constant_info, resolved(w, a.tensor));
    if (k && k->fqn.size() > 5 && k->fqn.ends_with(".bias")) {
      bias_module = bias_module.empty() ? k->fqn.substr(0, k->fqn.size() - 5) : "?";
    }
  }
  for (auto& a : c.args) {
    std::string r = resolved(w, a.tensor);
    if (const ConstantInfo* k = find_constant(w.constant_info, r)) {
      a.fqn = k->fqn;
      a.origin = describe_constant(*k);
      if (k->frozen() && !bias_module.empty() && bias_module != "?") {
        a.origin += fmt::format(", likely {}.weight (read with {}.bias)", bias_module, bias_module);
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

std::string root_cause(const Culprit& c, Predicate predicate, const std::optional<WildIndex>& wild,
                       const WrapperInfo& w, std::optional<int64_t> named_bound) {
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
    return c.unwritten + from;
  }
  if (wild) {
    std::string cmp = wild->value < 0 ? fmt::format("< -{}", wild->bound) : fmt::format("≥ {}", wild->bound);
    return fmt::format("index {} {} rows of {}, from {}", wild->value, cmp, label(w, wild->indexed_tensor),
                       producer_text(wild->index_tensor));
  }
  if (named_bound && c.producer) {
    for (const auto& a : c.args) {
      if (a.tensor == c.producer->tensor && a.before && integral(a.before->dtype) && a.before->max && a.before->min) {
        auto hi = static_cast<int64_t>(*a.before->max);
        auto lo = static_cast<int64_t>(*a.before->min);
        int64_t value = hi >= *named_bound ? hi : lo;
        return fmt::format("index {} outside [0, {}) (the bound the error names), from {}", value, *named_bound,
                           producer_text(a.tensor));
      }
    }
  }
  if (predicate != Predicate::nonfinite) {
    return "";
  }
  // A constant the culprit reads: non-finite, or a negative variance.
  for (const auto& a : c.args) {
    if (a.fqn.empty() && a.origin.rfind("parameter", 0) != 0 && a.origin.rfind("buffer", 0) != 0) {
      continue;
    }
    if (a.before && a.before->nonfinite() > 0) {
      return fmt::format("reads {}, which holds {}: the non-finite values come from the model's weights",
                         a.origin.empty() ? label(w, a.tensor) : a.origin, nonfinite_text(*a.before));
    }
  }
  std::string kernel = c.kernel;
  bool takes_root = kernel.find("sqrt") != std::string::npos || kernel.find("batch_norm") != std::string::npos ||
                    kernel.find("native_layer_norm") != std::string::npos || kernel.find("var") != std::string::npos;
  for (const auto& a : c.args) {
    if (a.fqn.empty() || !a.before || !a.before->min || *a.before->min >= 0) {
      continue;
    }
    std::string name = a.fqn;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (name.find("var") != std::string::npos && takes_root) {
      return fmt::format("reads {}, min {}: square root of a negative variance", label(w, a.tensor),
                         number_text(*a.before->min));
    }
  }
  // Computed inputs out of the domain of log / sqrt.
  bool logs = kernel.find("log") != std::string::npos && kernel.find("log_softmax") == std::string::npos &&
              kernel.find("_log_softmax") == std::string::npos;
  bool roots = kernel.find("sqrt") != std::string::npos && kernel.find("rsqrt") == std::string::npos;
  if ((logs || roots) && c.kind == "cpp") {
    for (const auto& a : c.args) {
      if (a.initialized && a.before && a.before->min && *a.before->min < 0 && a.before->nonfinite() == 0 &&
          !integral(a.before->dtype)) {
        return fmt::format("{} of negative values: {} holds values down to {}", logs ? "log" : "square root",
                           label(w, a.tensor), number_text(*a.before->min));
      }
    }
  }
  // Finite inputs, Inf out: an overflow of the output's dtype.
  const ProbeStats* out = nullptr;
  double largest_in = 0;
  for (const auto& a : c.args) {
    const auto& after = a.after;
    if (after && after->inf_count > 0 && (!a.before || !a.initialized || a.before->inf_count == 0)) {
      out = out ? out : &a;
    }
    if (a.initialized && a.before && a.before->nonfinite() == 0 && a.before->max && a.before->min) {
      largest_in = std::max({largest_in, std::fabs(*a.before->max), std::fabs(*a.before->min)});
    }
  }
  if (out != nullptr && largest_in > 0) {
    std::string dtype = out->after->dtype;
    std::string limit = dtype == "float16" ? " (largest finite 65504)" : dtype == "bfloat16" ? " (largest finite 3.4e38)"
                        : dtype == "float32"                            ? " (largest finite 3.4e38)"
                                                                        : "";
    return fmt::format("{} overflows {}{}: its inputs are finite, up to |x| = {}, and {} holds {}", c.kernel, dtype,
                       limit, number_text(largest_in), out->tensor, nonfinite_text(*out->after));
  }
  return "";
}

}  // namespace aoti_bisect
