#pragma once
// Reading YAML maps with one message per mistake, located as FILE:LINE:COL
// ("nightly.yaml:3:1: error: unknown key 'tolerence' (known keys: ...)"):
// the helpers the config reader and the triage manifest reader share.
// Every failure throws Error(usage).

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/error.hpp"
#include "common/text.hpp"

namespace aoti_bisect::yaml_read {
// One value in a YAML map, with what a message about it needs.
struct Field {
  const std::string& source;
  std::string_view key;
  const YAML::Node& key_node;
  const YAML::Node& node;
};

[[noreturn]] inline void fail_at(const std::string& source, const YAML::Mark& mark, const std::string& msg) {
  if (mark.is_null()) {
    throw ConfigError(fmt::format("{}: error: {}", source, printable_name(msg)));
  }
  throw ConfigError(fmt::format("{}:{}:{}: error: {}", source, mark.line + 1, mark.column + 1, printable_name(msg)));
}

// A null value has no text of its own; yaml-cpp marks it where the next token
// starts, so the message points at its key instead.
[[noreturn]] inline void fail(const Field& f, const std::string& msg) {
  fail_at(f.source, f.node.IsNull() ? f.key_node.Mark() : f.node.Mark(), msg);
}

inline std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "nothing";
  }
}

inline std::string string_of(const Field& f) {
  if (!f.node.IsScalar()) {
    fail(f, fmt::format("'{}' must be a string, got {}", f.key, describe(f.node)));
  }
  return f.node.Scalar();
}

inline int positive_int(const Field& f) {
  int value = 0;
  if (f.node.IsScalar()) {
    const std::string& s = f.node.Scalar();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec == std::errc() && end == s.data() + s.size() && value > 0) {
      return value;
    }
  }
  fail(f, fmt::format("'{}' must be a positive integer, got {}", f.key, describe(f.node)));
}

// A finite number, > 0 or >= 0; `what` completes "must be a ...".
inline double number(const Field& f, bool allow_zero, std::string_view what) {
  double value = 0;
  if (f.node.IsScalar()) {
    const std::string& s = f.node.Scalar();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec == std::errc() && end == s.data() + s.size() && std::isfinite(value) &&
        (value > 0 || (allow_zero && value == 0))) {
      return value;
    }
  }
  fail(f, fmt::format("'{}' must be a {}, got {}", f.key, what, describe(f.node)));
}

inline bool boolean(const Field& f) {
  if (f.node.IsScalar()) {
    const std::string& s = f.node.Scalar();
    if (s == "true" || s == "True") {
      return true;
    }
    if (s == "false" || s == "False") {
      return false;
    }
  }
  fail(f, fmt::format("'{}' must be true or false, got {}", f.key, describe(f.node)));
}

// How to read one key of a map into T. Each map's keys are one table: adding
// a key is one line, and "known keys" in messages comes from the table.
template <class T>
struct KeyRule {
  std::string_view key;
  void (*read)(const Field& field, T& out);
};

template <class T>
std::string known_keys(const std::vector<KeyRule<T>>& rules) {
  std::string out;
  for (const auto& rule : rules) {
    out += out.empty() ? "" : ", ";
    out += rule.key;
  }
  return out;
}

// Calls `each(key_node, value_node)` for every pair of `node`, which must be
// a map; rejects duplicate and non-scalar keys. `what` names the map.
template <class Each>
void for_each_pair(const std::string& source, const YAML::Node& node, const Field* self, std::string_view what,
                   Each each) {
  if (!node.IsMap()) {
    std::string msg = fmt::format("{} must be a map, got {}", what, describe(node));
    if (self != nullptr) {
      fail(*self, msg);
    }
    fail_at(source, node.Mark(), msg);
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies (a Node is a handle): `it->` returns a proxy by value, and a
    // reference to its member dangles past this line (ASan: stack-use-after-scope).
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      fail_at(source, key.Mark(), fmt::format("keys of {} must be strings, got {}", what, describe(key)));
    }
    if (!seen.insert(key.Scalar()).second) {
      fail_at(source, key.Mark(), fmt::format("duplicate key '{}'", key.Scalar()));
    }
    each(key, value);
  }
}

template <class T>
void read_map(const std::string& source, const YAML::Node& node, const Field* self, std::string_view what,
              const std::vector<KeyRule<T>>& rules, T& out) {
  for_each_pair(source, node, self, what, [&](const YAML::Node& key, const YAML::Node& value) {
    auto rule = std::find_if(rules.begin(), rules.end(), [&](const KeyRule<T>& r) { return r.key == key.Scalar(); });
    if (rule == rules.end()) {
      fail_at(source, key.Mark(), fmt::format("unknown key '{}' (known keys: {})", key.Scalar(), known_keys(rules)));
    }
    rule->read(Field{source, rule->key, key, value}, out);
  });
}

// The document's root; null for an empty file (or one of comments only).
inline YAML::Node load_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail_at(source, e.mark, e.msg);
  }
}

}  // namespace aoti_bisect::yaml_read
