// Text helpers of the wrapper parser, and the parser of the generated input checks.
#include "wrapper/wrapper_text.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "common/text.hpp"

namespace aoti_bisect::wrapper_text {

// Finds `prefix` at an identifier boundary and returns the whole identifier
// starting there, if it is followed by '('.
std::optional<std::string> called_ident_with_prefix(std::string_view line, std::string_view prefix) {
  for (size_t pos = line.find(prefix); pos != std::string_view::npos; pos = line.find(prefix, pos + 1)) {
    if (pos > 0 && is_ident_char(line[pos - 1])) {
      continue;
    }
    std::string id = ident_at(line, pos);
    size_t after = pos + id.size();
    // `std::vector<C10IValueHandle> aoti_torch_cpu_addmm_out_inputs_({...})`
    // (torch 2.15's record-function arguments) declares a variable: the
    // name follows a type, where a call follows `(`, `,`, `=` or nothing.
    size_t before = pos;
    while (before > 0 && (line[before - 1] == ' ' || line[before - 1] == '\t')) {
      --before;
    }
    bool declared = before > 0 && before < pos &&
                    (is_ident_char(line[before - 1]) || line[before - 1] == '>' || line[before - 1] == '*' ||
                     line[before - 1] == '&');
    if (declared && before >= 6 && line.substr(before - 6, 6) == "return" &&
        (before == 6 || !is_ident_char(line[before - 7]))) {
      declared = false;
    }
    if (after < line.size() && line[after] == '(' && !declared) {
      return id;
    }
  }
  return std::nullopt;
}

std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  while (!s.empty() && (s.back() == 'L' || s.back() == 'l' || s.back() == 'U' || s.back() == 'u')) {
    s.remove_suffix(1);
  }
  if (s.empty()) {
    return std::nullopt;
  }
  try {
    size_t used = 0;
    int64_t v = std::stoll(std::string(s), &used);
    return used == s.size() ? std::optional<int64_t>(v) : std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

// [first, last) lines of the function whose signature line contains `marker`.
std::pair<size_t, size_t> function_range(const std::vector<std::string_view>& lines, std::string_view marker) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(marker) == std::string_view::npos) {
      continue;
    }
    int depth = 0;
    bool opened = false;
    for (size_t j = i; j < lines.size(); ++j) {
      for (char c : lines[j]) {
        if (c == '{') {
          ++depth;
          opened = true;
        } else if (c == '}') {
          --depth;
        }
      }
      if (opened && depth <= 0) {
        return {i, j + 1};
      }
    }
    return {i, lines.size()};
  }
  return {0, 0};
}

namespace {

void parse_input_check(const std::vector<std::string_view>& lines, size_t first, size_t last, InputSpec& spec) {
  size_t rank = 0;
  std::vector<std::pair<size_t, int64_t>> sizes, strides, mins, maxs;
  for (size_t i = first; i < last; ++i) {
    auto t = trim(lines[i]);
    if (t.find("_expected_dtype = aoti_torch_dtype_") != std::string_view::npos) {
      size_t p = t.find("aoti_torch_dtype_") + 17;
      spec.dtype = ident_at(t, p);
      if (spec.name.empty()) {
        spec.name = std::string(t.substr(8, t.find("_expected_dtype") - 8));
      }
    } else if (t.find("_expected_device_type = ") != std::string_view::npos) {
      auto v = parse_int(t.substr(t.find('=') + 1, t.find(';') - t.find('=') - 1));
      if (v) {
        spec.device_type = static_cast<int>(*v);
      }
    }
    for (std::string_view kind : {"_size[", "_stride["}) {
      size_t p = t.find(kind);
      if (p == std::string_view::npos) {
        continue;
      }
      auto d = parse_int(t.substr(p + kind.size(), t.find(']', p) - p - kind.size()));
      if (!d) {
        continue;
      }
      size_t dim = static_cast<size_t>(*d);
      rank = std::max(rank, dim + 1);
      // "if (arg4_1_size[0] < 2) {" and "> 64" bound a dynamic dim.
      size_t close = t.find(']', p);
      if (kind == "_size[" && t.rfind("if (", 0) == 0 && close != std::string_view::npos && close + 4 < t.size() &&
          (t.compare(close + 1, 3, " < ") == 0 || t.compare(close + 1, 3, " > ") == 0)) {
        auto v = parse_int(t.substr(close + 4, t.find(')', close) - close - 4));
        if (v) {
          (t[close + 2] == '<' ? mins : maxs).push_back({dim, *v});
        }
      }
      // "if (4 != arg4_1_size[0]) {" pins the value.
      if (t.rfind("if (", 0) == 0) {
        size_t ne = t.find(" != ");
        if (ne != std::string_view::npos && ne < p) {
          if (auto v = parse_int(t.substr(4, ne - 4))) {
            (kind == "_size[" ? sizes : strides).push_back({dim, *v});
          }
        }
      }
    }
  }
  auto fill = [rank](std::vector<std::optional<int64_t>>& dims, const auto& found) {
    dims.assign(rank, std::nullopt);
    for (auto [d, v] : found) {
      dims[d] = v;
    }
  };
  fill(spec.shape, sizes);
  fill(spec.strides, strides);
  fill(spec.dim_min, mins);
  fill(spec.dim_max, maxs);
}

}  // namespace

void parse_inputs(const std::vector<std::string_view>& lines, size_t run_first, size_t run_last, WrapperInfo& info) {
  for (size_t i = run_first; i < run_last; ++i) {
    auto t = trim(lines[i]);
    size_t p = t.find("steal_from_raw_handles_to_raii_handles(input_handles,");
    if (p != std::string_view::npos) {
      size_t comma = t.find(',', p);
      info.num_inputs = static_cast<int>(parse_int(t.substr(comma + 1, t.find(')', comma) - comma - 1)).value_or(-1));
    }
    // "auto arg4_1 = std::move(inputs[0]);"
    size_t mv = t.find(" = std::move(inputs[");
    if (t.rfind("auto ", 0) == 0 && mv != std::string_view::npos) {
      auto idx = parse_int(t.substr(mv + 20, t.find(']', mv) - mv - 20));
      if (idx && *idx >= 0) {
        if (info.inputs.size() <= static_cast<size_t>(*idx)) {
          info.inputs.resize(static_cast<size_t>(*idx) + 1);
        }
        info.inputs[*idx].index = static_cast<int>(*idx);
        info.inputs[*idx].name = std::string(t.substr(5, mv - 5));
      }
    }
  }
  if (info.num_inputs && *info.num_inputs >= 0 && info.inputs.size() < static_cast<size_t>(*info.num_inputs)) {
    size_t old = info.inputs.size();
    info.inputs.resize(static_cast<size_t>(*info.num_inputs));
    for (size_t i = old; i < info.inputs.size(); ++i) {
      info.inputs[i].index = static_cast<int>(i);
    }
  }
  for (auto& spec : info.inputs) {
    auto [first, last] = function_range(lines, "void check_input_" + std::to_string(spec.index) + "(");
    if (first != last) {
      parse_input_check(lines, first, last, spec);
    }
  }
}

// "output_handles[2] = buf4.release();" -> (2, "buf4"); a name declared as a
// view of another (`auto var_0 = ...reinterpret_tensor_wrapper(buf5, ...)`)
// is resolved through `views`.
std::optional<std::pair<size_t, std::string>> output_release(std::string_view t,
                                                             const std::map<std::string, std::string>& views) {
  constexpr std::string_view head = "output_handles[";
  if (t.rfind(head, 0) != 0) {
    return std::nullopt;
  }
  auto index = parse_int(t.substr(head.size(), t.find(']') - head.size()));
  size_t eq = t.find("= ");
  if (!index || *index < 0 || eq == std::string_view::npos) {
    return std::nullopt;
  }
  std::string name = ident_at(t, eq + 2);
  if (name.empty() || t.substr(eq + 2 + name.size()).rfind(".release()", 0) != 0) {
    return std::make_pair(static_cast<size_t>(*index), std::string());
  }
  for (int hops = 0; hops < 8; ++hops) {
    auto v = views.find(name);
    if (v == views.end()) {
      break;
    }
    name = v->second;
  }
  return std::make_pair(static_cast<size_t>(*index), name);
}

// "auto var_0 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf5, 3, ...));" -> (var_0, buf5).
std::optional<std::pair<std::string, std::string>> view_declaration(std::string_view t) {
  if (t.rfind("auto ", 0) != 0) {
    return std::nullopt;
  }
  std::string to = ident_at(t, 5);
  constexpr std::string_view view = "reinterpret_tensor_wrapper(";
  size_t v = t.find(view);
  if (to.empty() || v == std::string_view::npos || t.find(" = ") != 5 + to.size()) {
    return std::nullopt;
  }
  std::string from = ident_at(t, v + view.size());
  return from.empty() ? std::nullopt : std::optional(std::make_pair(to, from));
}

}  // namespace aoti_bisect::wrapper_text
