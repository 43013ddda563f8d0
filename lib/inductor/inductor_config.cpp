// --inductor-config key=value: the value read as one YAML scalar.
#include <cmath>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/error.hpp"
#include "common/text.hpp"
#include "inductor/build.hpp"

namespace aoti_bisect {

namespace {

// A plain YAML scalar read by the YAML 1.2 core schema (yaml-cpp's own
// conversions follow YAML 1.1, where "yes" and "off" are booleans too).
nlohmann::json plain_scalar(const std::string& s) {
  static const std::regex k_int(R"([-+]?[0-9]+)");
  static const std::regex k_float(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") {
    return nullptr;
  }
  if (s == "true" || s == "True" || s == "TRUE") {
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    return false;
  }
  if (std::regex_match(s, k_int)) {
    try {
      return std::stoll(s);
    } catch (const std::out_of_range&) {
      // too big for an int: read as a float below
    }
  }
  if (std::regex_match(s, k_int) || std::regex_match(s, k_float)) {
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) {
      return d;
    }
  }
  return s;
}

}  // namespace

void add_inductor_config(nlohmann::json& configs, const std::string& key_equals_value) {
  auto eq = key_equals_value.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(ErrorKind::usage, fmt::format("--inductor-config expects key=value, got '{}'", key_equals_value));
  }
  std::string key = key_equals_value.substr(0, eq);
  std::string text = key_equals_value.substr(eq + 1);
  if (!configs.is_object()) {
    configs = nlohmann::json::object();
  }
  if (text.empty()) {
    configs[key] = "";
    return;
  }
  // yaml-cpp parses (and unquotes) the value; anything that is not a single
  // scalar ("[1, 2]", "a: b", "#x", a parse error) is kept as the text given.
  try {
    YAML::Node node = YAML::Load(text);
    if (node.IsScalar()) {
      configs[key] = node.Tag() == "!" ? nlohmann::json(node.Scalar()) : plain_scalar(node.Scalar());
      return;
    }
    if (node.IsNull()) {
      configs[key] = plain_scalar(last_nonempty_line(text));
      return;
    }
  } catch (const YAML::Exception&) {
    // fall through: plain text
  }
  configs[key] = text;
}

}  // namespace aoti_bisect
