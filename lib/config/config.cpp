// Reading backend profiles and the user's config file (--config) from YAML: variants, findings,
// tolerances and timeouts, unknown keys and wrong types refused at file:line:col; the built-in profiles.

#include "config/config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "config/yaml_read.hpp"

namespace aoti_bisect {
namespace {

using namespace yaml_read;

bool is_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

bool is_env_name(std::string_view s) {
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  return !s.empty() && alpha(s[0]) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

// A YAML scalar as the JSON value Inductor's config expects: true/false,
// null, integers and floats as such, anything else (and quoted text) a string.
nlohmann::json scalar_json(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") {
    return s;
  }
  if (s == "true" || s == "True") {
    return true;
  }
  if (s == "false" || s == "False") {
    return false;
  }
  if (s == "null" || s == "~" || s == "None") {
    return nullptr;
  }
  long long i = 0;
  auto [iend, iec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (iec == std::errc() && iend == s.data() + s.size()) {
    return i;
  }
  double d = 0;
  auto [dend, dec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (dec == std::errc() && dend == s.data() + s.size()) {
    return d;
  }
  return s;
}

nlohmann::json inductor_configs_of(const Field& f) {
  if (!f.node.IsMap()) {
    fail(f, fmt::format("'{}' must be a map of Inductor config names to values, got {}", f.key, describe(f.node)));
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& kv : f.node) {
    Field value{f.source, kv.first.Scalar(), kv.first, kv.second};
    if (!kv.second.IsScalar()) {
      fail(value, fmt::format("'{}' must be a scalar, got {}", value.key, describe(kv.second)));
    }
    out[kv.first.Scalar()] = scalar_json(kv.second);
  }
  return out;
}

std::map<std::string, std::string> env_of(const Field& f) {
  std::map<std::string, std::string> env;
  for_each_pair(f.source, f.node, &f, "'env'", [&](const YAML::Node& key, const YAML::Node& value) {
    const std::string& name = key.Scalar();
    if (!is_env_name(name)) {
      fail_at(f.source, key.Mark(), fmt::format("'{}' is not an environment variable name", name));
    }
    Field field{f.source, name, key, value};
    if (value.IsNull()) {
      fail(field, fmt::format("'{}' has no value (write \"\" for an empty one)", name));
    }
    env[name] = string_of(field);  // scalars such as 1 or true are taken as their text
  });
  return env;
}

std::string variant_name_of(const Field& f) {
  std::string name = string_of(f);
  if (!is_name(name)) {
    fail(f, fmt::format("variant name '{}' must match [a-z0-9_]+", name));
  }
  if (name == "baseline") {
    fail(f, "variant name 'baseline' is reserved for the run without variant flags");
  }
  return name;
}

RunWhen run_when_of(const Field& f) {
  std::string name = string_of(f);
  for (RunWhen w : {RunWhen::always, RunWhen::failure, RunWhen::fault, RunWhen::flaky, RunWhen::failure_or_flaky}) {
    if (run_when_name(w) == name) {
      return w;
    }
  }
  fail(f, fmt::format("'when' must be always, failure, fault, flaky or failure_or_flaky, got '{}'", name));
}

const std::vector<std::string>& contrast_names() {
  static const std::vector<std::string> names = {"refuses_inputs", "passes_with",    "fails_with",
                                                 "more_reliable",  "outputs_change", "stable_with"};
  return names;
}

// A finding's sentence may name only the placeholders the reading fills in.
std::string says_of(const Field& f) {
  static const std::set<std::string> known = {"k", "n", "base_k", "base_n", "changed", "line", "env", "base_outputs"};
  std::string text = string_of(f);
  for (size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
    size_t close = text.find('}', open);
    std::string name = close == std::string::npos ? "" : text.substr(open + 1, close - open - 1);
    if (known.count(name) == 0) {
      fail(f, fmt::format("'says' names an unknown placeholder '{{{}}}' (known: {{k}}, {{n}}, {{base_k}}, {{base_n}}, "
                          "{{changed}}, {{line}}, {{env}}, {{base_outputs}})",
                          name));
    }
  }
  return text;
}

const std::vector<KeyRule<FindingRule>>& finding_keys() {
  static const std::vector<KeyRule<FindingRule>> rules = {
      {"variant", [](const Field& f, FindingRule& r) { r.variant = string_of(f); }},
      {"contrast",
       [](const Field& f, FindingRule& r) {
         r.contrast = string_of(f);
         const auto& known = contrast_names();
         if (std::find(known.begin(), known.end(), r.contrast) == known.end()) {
           fail(f, fmt::format("unknown contrast '{}' (known: {})", r.contrast, fmt::join(known, ", ")));
         }
       }},
      {"says", [](const Field& f, FindingRule& r) { r.says = says_of(f); }},
  };
  return rules;
}

std::vector<FindingRule> findings_of(const Field& f) {
  if (!f.node.IsSequence()) {
    fail(f, fmt::format("'findings' must be a list, got {}", describe(f.node)));
  }
  std::vector<FindingRule> out;
  for (const YAML::Node& item : f.node) {
    FindingRule r;
    read_map(f.source, item, nullptr, "a finding", finding_keys(), r);
    if (r.variant.empty() || r.contrast.empty() || r.says.empty()) {
      fail_at(f.source, item.Mark(), "a finding needs 'variant', 'contrast' and 'says'");
    }
    out.push_back(std::move(r));
  }
  return out;
}

const std::vector<KeyRule<Variant>>& variant_keys() {
  static const std::vector<KeyRule<Variant>> rules = {
      {"name", [](const Field& f, Variant& v) { v.name = variant_name_of(f); }},
      {"description", [](const Field& f, Variant& v) { v.description = string_of(f); }},
      {"env", [](const Field& f, Variant& v) { v.env = env_of(f); }},
      {"repeats", [](const Field& f, Variant& v) { v.repeats = positive_int(f); }},
      {"localizes_faults", [](const Field& f, Variant& v) { v.localizes_faults = boolean(f); }},
      {"when", [](const Field& f, Variant& v) { v.when = run_when_of(f); }},
  };
  return rules;
}

std::vector<Variant> variants_of(const Field& f) {
  if (!f.node.IsSequence()) {
    fail(f, fmt::format("'variants' must be a list, got {}", describe(f.node)));
  }
  std::vector<Variant> variants;
  for (const YAML::Node& item : f.node) {
    Variant v;
    read_map(f.source, item, nullptr, "a variant", variant_keys(), v);
    if (v.localizes_faults && item.IsMap() && !item["when"]) {
      v.when = RunWhen::fault;
    }
    if (v.name.empty()) {
      fail_at(f.source, item.Mark(), "a variant needs a 'name'");
    }
    if (item.IsMap() && item["name"] && !item["name"].Mark().is_null()) {
      v.line = item["name"].Mark().line + 1;
      v.column = item["name"].Mark().column + 1;
    }
    for (const Variant& earlier : variants) {
      if (earlier.name == v.name) {
        fail_at(f.source, item["name"].Mark(), fmt::format("duplicate variant name '{}'", v.name));
      }
    }
    variants.push_back(std::move(v));
  }
  return variants;
}

const std::vector<KeyRule<Tolerance>>& tolerance_keys() {
  static const std::vector<KeyRule<Tolerance>> rules = {
      {"atol", [](const Field& f, Tolerance& t) { t.atol = number(f, true, "non-negative number"); }},
      {"rtol", [](const Field& f, Tolerance& t) { t.rtol = number(f, true, "non-negative number"); }},
  };
  return rules;
}

bool known_dtype(const std::string& name) {
  static const std::set<std::string> names = {
      "default",         "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
      "float8_e5m2fnuz", "int8",    "uint8",   "int16",   "int32",    "int64",         "bool",        "complex64",
      "complex128"};
  return names.count(name) > 0;
}

// `tolerances:` (profiles) and `tolerance:` (user configs): a map of dtype
// names to {atol, rtol}; a user config may also give atol/rtol directly,
// for every dtype.
void read_tolerances(const Field& f, ToleranceTable& table, std::optional<double>* atol, std::optional<double>* rtol) {
  for_each_pair(f.source, f.node, &f, fmt::format("'{}'", f.key), [&](const YAML::Node& key, const YAML::Node& value) {
    const std::string& name = key.Scalar();
    Field item{f.source, name, key, value};
    if (atol != nullptr && name == "atol") {
      *atol = number(item, true, "non-negative number");
    } else if (rtol != nullptr && name == "rtol") {
      *rtol = number(item, true, "non-negative number");
    } else if (known_dtype(name)) {
      if (value.IsMap() && (!value["atol"] || !value["rtol"])) {
        fail(item, fmt::format("'{}' needs both 'atol' and 'rtol'", name));
      }
      Tolerance t;
      read_map(f.source, value, &item, fmt::format("'{}'", name), tolerance_keys(), t);
      table.by_dtype[name] = t;
    } else {
      fail_at(f.source, key.Mark(),
              fmt::format("unknown key '{}' in '{}' (a dtype such as float32, bfloat16, float16, default{})", name,
                          f.key, atol != nullptr ? ", or atol/rtol for every dtype" : ""));
    }
  });
}

double timeout_of(const Field& f) {
  return number(f, false, "positive number of seconds");
}

const std::vector<KeyRule<UserConfig>>& user_keys() {
  static const std::vector<KeyRule<UserConfig>> rules = {
      {"env", [](const Field& f, UserConfig& c) { c.env = env_of(f); }},
      {"repeats", [](const Field& f, UserConfig& c) { c.repeats = positive_int(f); }},
      {"timeout", [](const Field& f, UserConfig& c) { c.timeout_s = timeout_of(f); }},
      {"jobs", [](const Field& f, UserConfig& c) { c.jobs = positive_int(f); }},
      {"variants", [](const Field& f, UserConfig& c) { c.variants = variants_of(f); }},
      {"findings", [](const Field& f, UserConfig& c) { c.findings = findings_of(f); }},
      {"variants_mode",
       [](const Field& f, UserConfig& c) {
         std::string mode = string_of(f);
         if (mode != "add" && mode != "replace") {
           fail(f, fmt::format("'variants_mode' must be 'add' or 'replace', got '{}'", mode));
         }
         c.replace_variants = mode == "replace";
       }},
      {"inductor_configs", [](const Field& f, UserConfig& c) { c.inductor_configs = inductor_configs_of(f); }},
      {"tolerance",
       [](const Field& f, UserConfig& c) { read_tolerances(f, c.tolerance, &c.tolerance_atol, &c.tolerance_rtol); }},
  };
  return rules;
}

const std::vector<KeyRule<Profile>>& profile_keys() {
  static const std::vector<KeyRule<Profile>> rules = {
      {"backend", [](const Field& f, Profile& p) { p.backend = string_of(f); }},
      {"description", [](const Field& f, Profile& p) { p.description = string_of(f); }},
      {"repeats", [](const Field& f, Profile& p) { p.repeats = positive_int(f); }},
      {"timeout", [](const Field& f, Profile& p) { p.timeout_s = timeout_of(f); }},
      {"variants", [](const Field& f, Profile& p) { p.variants = variants_of(f); }},
      {"findings", [](const Field& f, Profile& p) { p.findings = findings_of(f); }},
      {"tolerances", [](const Field& f, Profile& p) { read_tolerances(f, p.tolerances, nullptr, nullptr); }},
  };
  return rules;
}

}  // namespace

std::string_view run_when_name(RunWhen when) {
  switch (when) {
    case RunWhen::always: return "always";
    case RunWhen::failure: return "failure";
    case RunWhen::fault: return "fault";
    case RunWhen::flaky: return "flaky";
    case RunWhen::failure_or_flaky: return "failure_or_flaky";
  }
  return "always";
}

Profile parse_profile(const std::string& yaml_text, const std::string& source_name) {
  YAML::Node root = load_yaml(yaml_text, source_name);
  Profile profile;
  if (!root.IsNull()) {
    read_map(source_name, root, nullptr, "a profile", profile_keys(), profile);
  }
  if (profile.backend.empty()) {
    fail_at(source_name, root.Mark(), "a profile needs a 'backend'");
  }
  return profile;
}

UserConfig parse_user_config(const std::string& yaml_text, const std::string& source_name) {
  YAML::Node root = load_yaml(yaml_text, source_name);
  UserConfig config;
  config.path = source_name;
  if (!root.IsNull()) {
    read_map(source_name, root, nullptr, "a config", user_keys(), config);
  }
  return config;
}

UserConfig load_user_config(const std::string& path) {
  std::string text;
  try {
    text = read_file(path, "config file");
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, e.what());  // a bad --config is a usage error (exit 2)
  }
  return parse_user_config(text, path);
}

std::vector<std::string> builtin_backends() {
  std::vector<std::string> names;
  for (const BuiltinProfileText& p : builtin_profile_texts()) {
    names.emplace_back(p.backend);
  }
  return names;
}

Profile builtin_profile(const std::string& backend) {
  for (const BuiltinProfileText& p : builtin_profile_texts()) {
    if (p.backend == backend) {
      return parse_profile(std::string(p.yaml), fmt::format("configs/{}.yaml", backend));
    }
  }
  throw Error(ErrorKind::usage,
              fmt::format("unknown backend '{}' (known backends: {})", backend, fmt::join(builtin_backends(), ", ")));
}

}  // namespace aoti_bisect
