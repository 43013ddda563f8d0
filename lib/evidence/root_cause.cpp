// Tensors named as the user knows them, wild indices and the root cause the probes decide (root_cause.hpp).
#include "evidence/root_cause.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "codegen/hooks.hpp"
#include "common/cpp_text.hpp"
#include "common/text.hpp"

namespace aoti_bisect {

namespace root_cause_detail {

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

}  // namespace root_cause_detail

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
  auto ops = root_cause_detail::bracketed_list(c.aten_ops);
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

namespace {

// A table read on `line` (`in_ptrJ[static_cast<int64_t>(EXPR)]` or
// `in_ptrJ + static_cast<int64_t>(EXPR)`) whose index, loaded from an index
// pointer (`tainted`: tmp -> that pointer), holds values past the table's rows.
template <class ArgOf>
std::optional<WildIndex> wild_read(std::string_view line, const std::vector<std::pair<std::string, std::string>>& params,
                                   const std::set<std::string>& index_params,
                                   const std::map<std::string, std::string>& tainted, const ArgOf& arg_of) {
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
  return std::nullopt;
}

}  // namespace

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
  // One pass in source order: each loop body reuses the names tmp0, tmp1,
  // ..., so a name means what its latest assignment made it. A line's table
  // reads are checked before its own assignment takes effect.
  for (auto line : lines) {
    if (auto wild = wild_read(line, params, index_params, tainted, arg_of)) {
      return wild;
    }
    std::string tmp = assigned_tmp(line);
    if (tmp.empty()) {
      continue;
    }
    std::string source;
    for (const auto& p : index_params) {
      if (has_token(line, p)) {
        source = p;  // `tmp9 = in_ptr3[tmp5]`: its values are in_ptr3's; tmp5 only says where it reads
      }
    }
    if (source.empty()) {
      const std::string_view rhs = line.substr(line.find('='));
      for (const auto& [t, p] : tainted) {
        if (t != tmp && has_token(rhs, t)) {
          source = p;
        }
      }
    }
    if (source.empty()) {
      tainted.erase(tmp);  // redefined from values no index pointer holds
    } else {
      tainted[tmp] = source;
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
