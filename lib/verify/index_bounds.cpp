// Integer inputs that index a table, and the bound the package's own index check names.
#include "verify/index_bounds.hpp"

#include <algorithm>
#include <map>
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

}  // namespace

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
    for (const auto& [param, bound] : checked_parameters(def)) {
      auto p = std::find_if(params.begin(), params.end(), [&](const HookParam& h) { return h.name == param; });
      if (p == params.end() || !integer_pointer(p->type)) {
        continue;
      }
      const size_t pos = static_cast<size_t>(p - params.begin());
      if (pos >= site.args.size()) {
        continue;
      }
      for (const InputSpec& in : wrapper.inputs) {
        if (in.name.empty() || in.name != site.args[pos]) {
          continue;
        }
        auto [it, fresh] = by_input.emplace(in.index, IndexBound{in.index, bound, site.index, site.kernel});
        if (!fresh && bound < it->second.bound) {
          it->second = IndexBound{in.index, bound, site.index, site.kernel};
        }
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
