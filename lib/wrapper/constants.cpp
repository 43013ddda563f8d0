// The model's constants as the wrapper's constructor declares them, by their names in its code.
#include "wrapper/constants.hpp"

#include <cctype>
#include <map>

#include "common/text.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

namespace {

// `constants_info_[12].field = value;` -> (12, "field", "value").
struct Assignment {
  int index = 0;
  std::string field;
  std::string value;
};

std::optional<Assignment> assignment_of(std::string_view line) {
  constexpr std::string_view prefix = "constants_info_[";
  size_t at = line.find(prefix);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  size_t close = line.find("].", at);
  size_t eq = line.find(" = ", at);
  if (close == std::string_view::npos || eq == std::string_view::npos || eq < close) {
    return std::nullopt;
  }
  Assignment a;
  std::string_view idx = line.substr(at + prefix.size(), close - at - prefix.size());
  if (idx.empty() || idx.size() > 7) {
    return std::nullopt;
  }
  for (char c : idx) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
    a.index = a.index * 10 + (c - '0');
  }
  a.field = std::string(trim(line.substr(close + 2, eq - close - 2)));
  std::string_view value = trim(line.substr(eq + 3));
  if (!value.empty() && value.back() == ';') {
    value.remove_suffix(1);
  }
  a.value = std::string(trim(value));
  return a;
}

std::string unquote(const std::string& v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    return v.substr(1, v.size() - 2);
  }
  return "";
}

std::string kind_of(const std::string& v) {
  static const std::map<std::string, std::string> kinds = {{"Parameter", "parameter"},
                                                           {"Buffer", "buffer"},
                                                           {"TensorConstant", "tensor constant"},
                                                           {"FoldedConstant", "folded constant"}};
  for (const auto& [key, kind] : kinds) {
    if (v.find("ConstantType::" + key) != std::string::npos) {
      return kind;
    }
  }
  return "";
}

std::vector<int64_t> shape_of(const std::string& v) {  // "{16, 8}"
  std::vector<int64_t> out;
  std::string digits;
  for (char c : v) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
    } else if (!digits.empty()) {
      out.push_back(std::stoll(digits.substr(0, 18)));
      digits.clear();
    }
  }
  return out;
}

}  // namespace

std::vector<ConstantInfo> parse_constants(std::string_view source) {
  std::map<int, ConstantInfo> by_index;
  size_t pos = 0;
  while (pos < source.size()) {
    size_t end = source.find('\n', pos);
    std::string_view line = source.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? source.size() : end + 1;
    if (line.find("constants_info_[") == std::string_view::npos) {
      continue;
    }
    auto a = assignment_of(line);
    if (!a || a->index > 1000000) {
      continue;
    }
    ConstantInfo& c = by_index[a->index];
    c.index = a->index;
    if (a->field == "name") {
      c.name = unquote(a->value);
    } else if (a->field == "original_fqn") {
      c.fqn = unquote(a->value);
    } else if (a->field == "type") {
      c.kind = kind_of(a->value);
    } else if (a->field == "shape") {
      c.shape = shape_of(a->value);
    } else if (a->field == "data_size") {
      auto n = shape_of(a->value + ";");  // the digits of "1728"
      c.data_size = n.empty() ? 0 : static_cast<uint64_t>(n.front());
    } else if (a->field == "from_folded") {
      c.from_folded = a->value == "true";
    } else if (a->field == "layout") {
      c.opaque = a->value.find("layout__mkldnn") != std::string::npos;
    }
  }
  std::vector<ConstantInfo> out;
  for (auto& [index, c] : by_index) {
    if (!c.name.empty()) {
      out.push_back(std::move(c));
    }
  }
  return out;
}

const ConstantInfo* find_constant(const std::vector<ConstantInfo>& constants, const std::string& tensor) {
  std::string base = base_tensor_name(tensor);
  for (const auto& c : constants) {
    if (c.name == base) {
      return &c;
    }
  }
  return nullptr;
}

std::string missing_weights(const std::vector<ConstantInfo>& constants, std::optional<uint64_t> embedded,
                            bool weights_file) {
  uint64_t declared = 0;
  size_t count = 0;
  for (const auto& c : constants) {
    if (!c.from_folded && c.data_size > 0) {
      declared += c.data_size;
      ++count;
    }
  }
  if (weights_file || declared == 0 || !embedded || *embedded >= declared) {
    return "";
  }
  return std::to_string(count) + " constant" + (count == 1 ? "" : "s") + " (" + std::to_string(declared) +
         " bytes) declared, but the package holds no weights: the library embeds " + std::to_string(*embedded) +
         " bytes and no weights file is packaged (a build with aot_inductor.package_constants_in_so=False; also "
         "set aot_inductor.package_constants_on_disk_format, or package them with the model), so every run would "
         "read uninitialized memory as weights";
}

std::string describe_constant(const ConstantInfo& c) {
  if (c.frozen()) {
    // Its original name is lost: said by its shape and layout.
    std::string shape;
    for (size_t i = 0; i < c.shape.size(); ++i) {
      shape += (i ? ", " : "") + std::to_string(c.shape[i]);
    }
    // Packed for oneDNN, it is a weight; a dense one may be a folded bias.
    return c.opaque ? "frozen weight [" + shape + "] in oneDNN layout" : "frozen constant [" + shape + "]";
  }
  std::string kind = c.kind.empty() ? "constant" : c.kind;
  return kind + " " + (c.fqn.empty() ? c.name : c.fqn) + (c.opaque ? " (oneDNN layout)" : "");
}

}  // namespace aoti_bisect
