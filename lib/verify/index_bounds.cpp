// Integer inputs that index a table, and the bound the package's own index check names.
#include "verify/index_bounds.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "classify/signature.hpp"
#include "common/cpp_text.hpp"
#include "wrapper/declarations.hpp"

namespace aoti_bisect {

namespace {

// The tmpN and in_ptrN names an expression reads.
std::vector<std::string> names_read(const std::string& expr) {
  static const std::regex name(R"(\b(tmp\d+|in_ptr\d+)\b)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

// The parameters a value comes from, through the statements seen so far.
std::set<std::string> parameters_of(const std::string& tmp,
                                    const std::map<std::string, std::vector<std::string>>& deps) {
  std::set<std::string> params, seen;
  std::vector<std::string> todo = {tmp};
  while (!todo.empty()) {
    std::string n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) {
      continue;
    }
    if (n.rfind("in_ptr", 0) == 0) {
      params.insert(n);
      continue;
    }
    auto it = deps.find(n);
    if (it != deps.end()) {
      todo.insert(todo.end(), it->second.begin(), it->second.end());
    }
  }
  return params;
}

bool integer_pointer(const std::string& type) {
  return type.find('*') != std::string::npos &&
         (type.find("int64_t") != std::string::npos || type.find("int32_t") != std::string::npos ||
          type.find("int16_t") != std::string::npos || type.find("int8_t") != std::string::npos ||
          type.find("long") != std::string::npos || type.find("int ") != std::string::npos);
}

// The text inside the parentheses that open at `open` (balanced).
std::string inside(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0) {
      return s.substr(open + 1, i - open - 1);
    }
  }
  return "";
}

// A table's bound from the wrapper's constants: its rows, where the load's
// stride is one row (the product of its other dimensions).
std::optional<std::pair<int64_t, std::string>> table_rows(const WrapperInfo& wrapper, const std::string& arg,
                                                          int64_t stride) {
  for (const ConstantInfo& c : wrapper.constant_info) {
    if (c.name != arg || c.shape.empty() || c.shape[0] <= 0) {
      continue;
    }
    int64_t row = 1;
    for (size_t d = 1; d < c.shape.size(); ++d) {
      row *= c.shape[d];
    }
    if (row == stride) {
      return std::make_pair(c.shape[0], c.fqn.empty() ? c.name : c.fqn);
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<TableRead> table_reads(const std::string& definition) {
  static const std::regex statement(R"(\bauto\s+(tmp\d+)\s*=\s*(.*);)");
  static const std::regex load(R"(\b(in_ptr\d+)\s*(?:\[|\+)\s*static_cast<int64_t>\()");
  static const std::regex scaled(R"((?:(\d+)L\s*\*\s*)?\b(tmp\d+)\b(?:\s*\*\s*(\d+)L)?)");
  std::map<std::string, std::vector<std::string>> deps;
  std::vector<TableRead> out;
  for (std::string_view line_view : cpp_text::split_lines(definition)) {
    std::string line(line_view);
    for (auto it = std::sregex_iterator(line.begin(), line.end(), load); it != std::sregex_iterator(); ++it) {
      const std::string table = (*it)[1].str();
      const std::string offset = inside(line, static_cast<size_t>(it->position(0) + it->length(0) - 1));
      for (auto t = std::sregex_iterator(offset.begin(), offset.end(), scaled); t != std::sregex_iterator(); ++t) {
        const int64_t stride = (*t)[1].matched ? std::stoll((*t)[1].str())
                               : (*t)[3].matched ? std::stoll((*t)[3].str())
                                                 : 1;
        for (const auto& p : parameters_of((*t)[2].str(), deps)) {
          if (p != table) {
            out.push_back({p, table, stride});
          }
        }
      }
    }
    std::smatch m;
    if (std::regex_search(line, m, statement)) {
      deps[m[1].str()] = names_read(m[2].str());
    }
  }
  return out;
}

std::vector<std::pair<std::string, int64_t>> checked_parameters(const std::string& definition) {
  static const std::regex statement(R"(\bauto\s+(tmp\d+)\s*=\s*(.*);)");
  static const std::regex check(R"rx(index out of bounds: (?:0 <= )?(tmp\d+) < (\d{1,18})L?")rx");
  std::map<std::string, std::vector<std::string>> deps;  // the latest definition of each tmpN
  std::map<std::string, int64_t> bound_of;
  for (std::string_view line_view : cpp_text::split_lines(definition)) {
    std::string line(line_view);
    std::smatch m;
    if (std::regex_search(line, m, check)) {
      const int64_t bound = std::stoll(m[2].str());
      for (const auto& p : parameters_of(m[1].str(), deps)) {
        auto [it, fresh] = bound_of.emplace(p, bound);
        if (!fresh) {
          it->second = std::min(it->second, bound);
        }
      }
      continue;
    }
    if (std::regex_search(line, m, statement)) {
      deps[m[1].str()] = names_read(m[2].str());
    }
  }
  return {bound_of.begin(), bound_of.end()};
}

std::vector<IndexBound> index_bounds(const WrapperInfo& wrapper, const std::string& kernel_source) {
  std::map<int, IndexBound> by_input;
  for (const CallSite& site : wrapper.call_sites) {
    if (site.kind != KernelKind::cpp) {
      continue;
    }
    const std::string def = kernel_definition(kernel_source, site.kernel);
    if (def.empty()) {
      continue;
    }
    const auto decls = kernel_declarations(def);
    auto decl = decls.find(site.kernel);
    if (decl == decls.end()) {
      continue;
    }
    const std::vector<HookParam>& params = decl->second;
    // The graph input (its flat index) or constant a parameter is given.
    auto arg_of = [&](const std::string& param, bool integer) -> std::string {
      auto p = std::find_if(params.begin(), params.end(), [&](const HookParam& h) { return h.name == param; });
      if (p == params.end() || (integer && !integer_pointer(p->type))) {
        return "";
      }
      const size_t pos = static_cast<size_t>(p - params.begin());
      return pos < site.args.size() ? site.args[pos] : "";
    };
    auto note = [&](const std::string& arg, int64_t bound, const std::string& table) {
      for (const InputSpec& in : wrapper.inputs) {
        if (in.name.empty() || in.name != arg) {
          continue;
        }
        IndexBound b{in.index, bound, site.index, site.kernel, table};
        auto [it, fresh] = by_input.emplace(in.index, b);
        // A check's bound wins over a table's; the smaller of two of a kind.
        if (!fresh && (it->second.table.empty() == table.empty() ? bound < it->second.bound : table.empty())) {
          it->second = b;
        }
      }
    };
    std::set<std::string> checked;
    for (const auto& [param, bound] : checked_parameters(def)) {
      checked.insert(param);
      note(arg_of(param, true), bound, "");
    }
    for (const TableRead& r : table_reads(def)) {
      if (checked.count(r.index_param) > 0) {
        continue;
      }
      if (auto rows = table_rows(wrapper, arg_of(r.table_param, false), r.stride)) {
        note(arg_of(r.index_param, true), rows->first, rows->second);
      }
    }
  }
  std::vector<IndexBound> out;
  for (auto& [i, b] : by_input) {
    out.push_back(b);
  }
  return out;
}

}  // namespace aoti_bisect
