// Which dimension of the inputs is the batch, from the package's own dynamic dimensions.
#include "wrapper/batch_dim.hpp"

#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"

namespace aoti_bisect {

namespace {

struct Declared {
  std::string symbol;
  std::string input;  // "arg4_1"
  int dim = 0;
};

// `int64_t s77 = arg4_1_size[0];` (also `const int64_t`, `auto`).
std::vector<Declared> size_symbols(const std::string& source) {
  static const std::regex decl(R"((?:int64_t|auto)\s+(s\d+)\s*=\s*(\w+)_size\[(\d+)\]\s*;)");
  std::vector<Declared> out;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), decl); it != std::sregex_iterator(); ++it) {
    out.push_back({(*it)[1].str(), (*it)[2].str(), std::stoi((*it)[3].str())});
  }
  return out;
}

// `int64_t s77 = s31;`: a size of another input that the graph knows is
// s31 (export's guard s77 == s31), read from no input. Per symbol, how many.
std::map<std::string, int> aliases(const std::string& source) {
  static const std::regex alias(R"((?:int64_t|auto)\s+(s\d+)\s*=\s*(s\d+)\s*;)");
  std::map<std::string, int> out;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), alias); it != std::sregex_iterator(); ++it) {
    out[(*it)[2].str()]++;
  }
  return out;
}

std::pair<std::optional<int64_t>, std::optional<int64_t>> range_of(const InputSpec& in, size_t d) {
  return {d < in.dim_min.size() ? in.dim_min[d] : std::nullopt, d < in.dim_max.size() ? in.dim_max[d] : std::nullopt};
}

// The declared sizes, and the dynamic dimensions read into no symbol that
// the wrapper ties to one: a symbol another size is aliased to (`s77 =
// s31`) whose compiled range is theirs, where no other aliased symbol has
// that range. (A mask beside its sequence: run_impl reads the sequence's
// sizes and aliases the mask's to them.)
std::vector<Declared> all_sizes(const WrapperInfo& wrapper, const std::string& source) {
  std::vector<Declared> out = size_symbols(source);
  const std::map<std::string, int> aliased = aliases(source);
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < wrapper.inputs.size(); ++i) {
    index_of[wrapper.inputs[i].name] = i;
  }
  using Range = std::pair<std::optional<int64_t>, std::optional<int64_t>>;
  std::map<std::string, Range> range;
  std::set<std::pair<std::string, int>> declared;
  for (const Declared& d : out) {
    declared.insert({d.input, d.dim});
    auto it = index_of.find(d.input);
    if (it != index_of.end() && aliased.count(d.symbol) > 0) {
      range.emplace(d.symbol, range_of(wrapper.inputs[it->second], static_cast<size_t>(d.dim)));
    }
  }
  std::vector<Declared> inferred;
  for (const InputSpec& in : wrapper.inputs) {
    for (size_t d = 0; d < in.shape.size(); ++d) {
      if (in.shape[d] || declared.count({in.name, static_cast<int>(d)}) > 0) {
        continue;
      }
      const Range r = range_of(in, d);
      std::vector<std::string> candidates;
      for (const auto& [symbol, rr] : range) {
        if (rr == r && (r.first || r.second)) {
          candidates.push_back(symbol);
        }
      }
      if (candidates.size() == 1) {
        inferred.push_back({candidates.front(), in.name, static_cast<int>(d)});
      }
    }
  }
  out.insert(out.end(), inferred.begin(), inferred.end());
  return out;
}

}  // namespace

BatchDimension batch_dimension(const WrapperInfo& wrapper, const std::string& wrapper_source) {
  BatchDimension out;
  std::vector<int> dynamic0;
  std::vector<int64_t> fixed0;
  bool any_shape = false;
  for (size_t i = 0; i < wrapper.inputs.size(); ++i) {
    const InputSpec& in = wrapper.inputs[i];
    if (in.shape.empty()) {
      continue;
    }
    any_shape = true;
    if (!in.shape[0]) {
      dynamic0.push_back(static_cast<int>(i));
    } else {
      fixed0.push_back(*in.shape[0]);
    }
  }
  if (!any_shape) {
    out.why = "the package's input checks give no input's shape";
    return out;
  }
  if (dynamic0.empty()) {
    std::set<int64_t> sizes(fixed0.begin(), fixed0.end());
    if (sizes.size() == 1) {
      out.kind = BatchDimension::Kind::fixed;
      out.size = *sizes.begin();
      return out;
    }
    std::vector<std::string> texts;
    for (int64_t n : sizes) {
      texts.push_back(std::to_string(n));
    }
    out.why = fmt::format("no input's dimension 0 is dynamic, and their sizes differ ({})", join(texts, ", "));
    return out;
  }
  // Which symbol each dynamic dimension 0 is, where run_impl declares it.
  std::map<std::string, int> index_of;
  for (size_t i = 0; i < wrapper.inputs.size(); ++i) {
    index_of[wrapper.inputs[i].name] = static_cast<int>(i);
  }
  std::set<std::string> all_symbols, dim0_symbols;
  std::map<int, std::string> symbol_of;
  for (const Declared& d : all_sizes(wrapper, wrapper_source)) {
    all_symbols.insert(d.symbol);
    auto it = index_of.find(d.input);
    if (d.dim == 0 && it != index_of.end()) {
      symbol_of[it->second] = d.symbol;
      dim0_symbols.insert(d.symbol);
    }
  }
  auto names = [&](const std::vector<int>& ids) {
    std::vector<std::string> t;
    for (int i : ids) {
      t.push_back(std::to_string(i) + (wrapper.inputs[static_cast<size_t>(i)].name.empty()
                                           ? ""
                                           : " (" + wrapper.inputs[static_cast<size_t>(i)].name + ")"));
    }
    return join(t, ", ");
  };
  if (dim0_symbols.size() > 1) {
    out.kind = BatchDimension::Kind::ambiguous;
    std::vector<std::string> syms(dim0_symbols.begin(), dim0_symbols.end());
    out.why = fmt::format(
        "the dynamic dimensions 0 of inputs {} are {} different sizes ({}): which is the batch is not "
        "known",
        names(dynamic0), syms.size(), join(syms, ", "));
    return out;
  }
  if (dim0_symbols.empty() ? all_symbols.size() != 1 && dynamic0.size() > 1
                           : symbol_of.size() < dynamic0.size() && all_symbols.size() > 1) {
    out.kind = BatchDimension::Kind::ambiguous;
    out.why = fmt::format("inputs {} have a dynamic dimension 0, and the wrapper does not say they are one size",
                          names(dynamic0));
    return out;
  }
  out.kind = BatchDimension::Kind::dynamic;
  out.inputs = dynamic0;
  out.symbol = !dim0_symbols.empty() ? *dim0_symbols.begin() : all_symbols.size() == 1 ? *all_symbols.begin() : "";
  for (int i : dynamic0) {
    const InputSpec& in = wrapper.inputs[static_cast<size_t>(i)];
    if (!in.dim_min.empty() && in.dim_min[0] && (!out.min || *in.dim_min[0] > *out.min)) {
      out.min = in.dim_min[0];
    }
    if (!in.dim_max.empty() && in.dim_max[0] && (!out.max || *in.dim_max[0] < *out.max)) {
      out.max = in.dim_max[0];
    }
  }
  return out;
}

std::vector<DynamicDimension> dynamic_dimensions(const WrapperInfo& wrapper, const std::string& wrapper_source) {
  std::map<std::pair<std::string, int>, std::string> symbol_of;  // (input name, dim) -> symbol
  for (const Declared& d : all_sizes(wrapper, wrapper_source)) {
    symbol_of.emplace(std::make_pair(d.input, d.dim), d.symbol);
  }
  std::vector<DynamicDimension> out;
  std::map<std::string, size_t> slot;  // symbol -> index in out
  for (size_t i = 0; i < wrapper.inputs.size(); ++i) {
    const InputSpec& in = wrapper.inputs[i];
    for (size_t d = 0; d < in.shape.size(); ++d) {
      if (in.shape[d]) {
        continue;
      }
      auto sym = symbol_of.find({in.name, static_cast<int>(d)});
      const std::string symbol = sym == symbol_of.end() ? "" : sym->second;
      size_t k = out.size();
      if (!symbol.empty() && slot.count(symbol)) {
        k = slot[symbol];
      } else {
        out.push_back({symbol, {}, std::nullopt, std::nullopt});
        if (!symbol.empty()) {
          slot[symbol] = k;
        }
      }
      DynamicDimension& dim = out[k];
      dim.members.emplace_back(static_cast<int>(i), static_cast<int>(d));
      if (d < in.dim_min.size() && in.dim_min[d] && (!dim.min || *in.dim_min[d] > *dim.min)) {
        dim.min = in.dim_min[d];
      }
      if (d < in.dim_max.size() && in.dim_max[d] && (!dim.max || *in.dim_max[d] < *dim.max)) {
        dim.max = in.dim_max[d];
      }
    }
  }
  return out;
}

}  // namespace aoti_bisect
