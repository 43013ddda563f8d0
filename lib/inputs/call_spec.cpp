// The package's call spec: how torch.export flattened the model's inputs, and the inputs bound to it.
#include "inputs/call_spec.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "common/text.hpp"

namespace aoti_bisect {

int TreeSpec::leaves() const {
  if (kind == Kind::leaf) {
    return 1;
  }
  int n = 0;
  for (const auto& c : children) {
    n += c.leaves();
  }
  return n;
}

bool TreeSpec::has_names() const {
  return kind == Kind::dict ||
         std::any_of(children.begin(), children.end(), [](const TreeSpec& c) { return c.has_names(); });
}

namespace {

std::optional<TreeSpec> spec_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("children_spec") || !j["children_spec"].is_array()) {
    return std::nullopt;
  }
  TreeSpec s;
  const auto& type = j.value("type", nlohmann::json());
  if (type.is_null()) {
    s.kind = TreeSpec::Kind::leaf;
    return s;
  }
  if (!type.is_string()) {
    return std::nullopt;
  }
  s.type = type.get<std::string>();
  static const std::set<std::string> tuples = {"builtins.tuple", "collections.namedtuple"};
  static const std::set<std::string> lists = {"builtins.list", "torch.fx.immutable_collections.immutable_list"};
  static const std::set<std::string> dicts = {"builtins.dict", "collections.OrderedDict",
                                              "torch.fx.immutable_collections.immutable_dict"};
  if (tuples.count(s.type)) {
    s.kind = TreeSpec::Kind::tuple;
  } else if (lists.count(s.type)) {
    s.kind = TreeSpec::Kind::list;
  } else if (dicts.count(s.type)) {
    s.kind = TreeSpec::Kind::dict;
    // The context is the JSON text of the key list.
    const auto& ctx = j.value("context", nlohmann::json());
    if (!ctx.is_string()) {
      return std::nullopt;
    }
    auto keys = nlohmann::json::parse(ctx.get<std::string>(), nullptr, false);
    if (!keys.is_array()) {
      return std::nullopt;
    }
    for (const auto& k : keys) {
      s.keys.push_back(k.is_string() ? k.get<std::string>() : k.dump());
    }
  } else if (s.type == "builtins.NoneType") {
    s.kind = TreeSpec::Kind::none;
  } else {
    s.kind = TreeSpec::Kind::other;
  }
  for (const auto& c : j["children_spec"]) {
    auto child = spec_from_json(c);
    if (!child) {
      return std::nullopt;
    }
    s.children.push_back(std::move(*child));
  }
  if (s.kind == TreeSpec::Kind::dict && s.keys.size() != s.children.size()) {
    return std::nullopt;
  }
  return s;
}

}  // namespace

std::optional<TreeSpec> parse_treespec(std::string_view json_text) {
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer() || j[0].get<int>() != 1) {
    return std::nullopt;
  }
  return spec_from_json(j[1]);
}

CallSpecText call_spec_text(const std::string& source) {
  CallSpecText out;
  auto read = [&](const std::string& key) -> std::string {
    const std::string open = key + " = R\"(";
    size_t pos = source.find(open);
    if (pos == std::string::npos) {
      return "";
    }
    pos += open.size();
    size_t end = source.find(")\";", pos);
    return end == std::string::npos ? "" : source.substr(pos, end - pos);
  };
  out.in = read("in_spec_");
  out.out = read("out_spec_");
  return out;
}

namespace {

// "a tensor", "a tuple of 3", "None", "an int (3)": one wording for both
// sides (a scalar's type comes with its article).
std::string describe(std::string_view container, size_t children, bool tensor, bool none, const std::string& type) {
  if (tensor) {
    return "a tensor";
  }
  if (none) {
    return "None";
  }
  if (container.empty()) {
    return type.rfind("a ", 0) == 0 || type.rfind("an ", 0) == 0 ? type : "a " + type;
  }
  return "a " + std::string(container) + " of " + std::to_string(children);
}

std::string describe(const InputValue& v) {
  using K = InputValue::Kind;
  std::string_view container = v.kind == K::tuple  ? "tuple"
                               : v.kind == K::list ? "list"
                               : v.kind == K::dict ? "dict"
                                                   : "";
  return describe(container, v.children.size(), v.kind == K::tensor, v.kind == K::none, v.type);
}

std::string describe(const TreeSpec& s) {
  using K = TreeSpec::Kind;
  std::string_view container = s.kind == K::tuple  ? "tuple"
                               : s.kind == K::list ? "list"
                               : s.kind == K::dict ? "dict"
                                                   : "";
  return describe(container, s.children.size(), s.kind == K::leaf, s.kind == K::none, s.type);
}

std::string key_list(const std::vector<std::string>& keys) {
  return keys.empty() ? "none" : join(keys, ", ");
}

bool is_sequence(const InputValue& v) {
  return v.kind == InputValue::Kind::tuple || v.kind == InputValue::Kind::list;
}

struct Matcher {
  bool leaves_are_tensors = true;
  InputBinding& out;

  // Matches `v` against `s` at `path` ("attention_mask", "args[1]"); on a
  // difference sets out.error and returns false.
  bool match(const TreeSpec& s, const InputValue& v, const std::string& path) {
    auto differs = [&](const std::string& why) {
      out.error = path + ": " + why;
      return false;
    };
    switch (s.kind) {
      case TreeSpec::Kind::leaf:
        if (v.kind == InputValue::Kind::tensor) {
          out.order.push_back(v.tensor);
          out.names.push_back(path);
          return true;
        }
        if (!leaves_are_tensors && (v.kind == InputValue::Kind::scalar || v.kind == InputValue::Kind::none)) {
          return true;  // a constant torch.export specialized on: not a model input
        }
        return differs("the inputs file has " + describe(v) + " there, the package takes a tensor");
      case TreeSpec::Kind::none:
        if (v.kind == InputValue::Kind::none) {
          return true;
        }
        return differs("the inputs file has " + describe(v) + " there, the package's call spec None");
      case TreeSpec::Kind::tuple:
      case TreeSpec::Kind::list:
        if (!is_sequence(v) || v.children.size() != s.children.size()) {
          return differs("the inputs file has " + describe(v) + " there, the package's call spec " + describe(s));
        }
        for (size_t i = 0; i < s.children.size(); ++i) {
          if (!match(s.children[i], v.children[i], path + "[" + std::to_string(i) + "]")) {
            return false;
          }
        }
        return true;
      case TreeSpec::Kind::dict: {
        if (v.kind != InputValue::Kind::dict) {
          return differs("the inputs file has " + describe(v) + " there, the package takes a dict with keys " +
                         key_list(s.keys));
        }
        for (const auto& k : s.keys) {
          if (std::find(v.keys.begin(), v.keys.end(), k) == v.keys.end()) {
            return differs("no key '" + k + "' in the inputs file (the package takes " + key_list(s.keys) + ")");
          }
        }
        for (const auto& k : v.keys) {
          if (std::find(s.keys.begin(), s.keys.end(), k) == s.keys.end()) {
            return differs("the inputs file has key '" + k + "', which the package does not take (it takes " +
                           key_list(s.keys) + ")");
          }
        }
        for (size_t i = 0; i < s.keys.size(); ++i) {
          size_t at = static_cast<size_t>(std::find(v.keys.begin(), v.keys.end(), s.keys[i]) - v.keys.begin());
          if (!match(s.children[i], v.children[at], path + "['" + s.keys[i] + "']")) {
            return false;
          }
        }
        return true;
      }
      case TreeSpec::Kind::other:
        return differs("the package's call spec has a " + s.type + " there, which this tool cannot bind");
    }
    return false;
  }
};

void all_tensors(const InputValue& v, std::vector<int>& out) {
  if (v.kind == InputValue::Kind::tensor) {
    out.push_back(v.tensor);
  }
  for (const auto& c : v.children) {
    all_tensors(c, out);
  }
}

bool holds_dict(const InputValue& v) {
  return v.kind == InputValue::Kind::dict ||
         std::any_of(v.children.begin(), v.children.end(), [](const InputValue& c) { return holds_dict(c); });
}

InputBinding positional(const InputValue& value, const std::string& form) {
  InputBinding b;
  b.form = form;
  all_tensors(value, b.order);
  for (size_t i = 0; i < b.order.size(); ++i) {
    b.names.push_back("input" + std::to_string(i));
  }
  return b;
}

// One form tried in binding: what it bound (or its error), and whether it held.
struct CallSpecAttempt {
  InputBinding binding;
  bool ok = false;
};

// Binding an inputs file's value to the package's (args, kwargs) spec: the
// forms a user may save, tried in turn, each kept for the message if none holds.
struct CallSpecBinder {
  const TreeSpec& args;
  const TreeSpec& kwargs;
  const InputValue& value;
  std::optional<int> num_inputs;
  bool leaves_are_tensors = true;
  std::vector<CallSpecAttempt> tried;

  // One form: a fresh binding that `body` fills through a Matcher.
  CallSpecAttempt attempt(const std::string& form, const std::function<bool(Matcher&)>& body) const {
    CallSpecAttempt a;
    a.binding.by_call_spec = true;
    a.binding.form = form;
    Matcher m{leaves_are_tensors, a.binding};
    a.ok = body(m);
    return a;
  }

  // `v`'s children against the spec's positional arguments.
  bool match_args(Matcher& m, const InputValue& v) const {
    if (v.children.size() != args.children.size()) {
      m.out.error = "the inputs file has " + describe(v) + " of positional arguments, the package takes " +
                    std::to_string(args.children.size());
      return false;
    }
    for (size_t i = 0; i < args.children.size(); ++i) {
      if (!m.match(args.children[i], v.children[i], "args[" + std::to_string(i) + "]")) {
        return false;
      }
    }
    return true;
  }

  // `v`'s keys and values against the spec's keyword arguments.
  bool match_kwargs(Matcher& m, const InputValue& v) const {
    for (const auto& k : kwargs.keys) {
      if (std::find(v.keys.begin(), v.keys.end(), k) == v.keys.end()) {
        m.out.error = "the inputs file has no '" + k + "': the package takes keyword arguments " +
                      key_list(kwargs.keys) + " (its call spec)";
        return false;
      }
    }
    for (const auto& k : v.keys) {
      if (std::find(kwargs.keys.begin(), kwargs.keys.end(), k) == kwargs.keys.end()) {
        m.out.error = "the inputs file has '" + k +
                      "', which the package does not take (its keyword arguments: " + key_list(kwargs.keys) + ")";
        return false;
      }
    }
    for (size_t i = 0; i < kwargs.keys.size(); ++i) {
      size_t at = static_cast<size_t>(std::find(v.keys.begin(), v.keys.end(), kwargs.keys[i]) - v.keys.begin());
      if (!m.match(kwargs.children[i], v.children[at], kwargs.keys[i])) {
        return false;
      }
    }
    return true;
  }

  // The forms that carry keyword arguments: (args, kwargs), or a dict of them.
  std::optional<InputBinding> bind_with_kwargs() {
    // (args, kwargs): the form torch.export takes.
    if (is_sequence(value) && value.children.size() == 2 && is_sequence(value.children[0]) &&
        value.children[1].kind == InputValue::Kind::dict) {
      tried.push_back(attempt("(args, kwargs)", [&](Matcher& m) {
        return match_args(m, value.children[0]) && match_kwargs(m, value.children[1]);
      }));
      if (tried.back().ok) {
        return tried.back().binding;
      }
    }
    // A dict of the keyword arguments.
    if (value.kind == InputValue::Kind::dict && args.children.empty()) {
      tried.push_back(attempt("keyword dict", [&](Matcher& m) { return match_kwargs(m, value); }));
      if (tried.back().ok) {
        return tried.back().binding;
      }
    }
    return std::nullopt;
  }

  // The forms for a package without keyword arguments: the positional
  // arguments as a sequence, as a safetensors file's keys, as the one
  // argument itself, or flattened.
  std::optional<InputBinding> bind_positional_only() {
    // The positional arguments as a tuple or list.
    if (is_sequence(value)) {
      tried.push_back(attempt("positional tuple", [&](Matcher& m) { return match_args(m, value); }));
      if (tried.back().ok) {
        return tried.back().binding;
      }
    }
    // A safetensors file for positional arguments: its keys (in natural
    // order, inputs/tensor_file.hpp) stand for positions.
    if (value.kind == InputValue::Kind::dict && value.keys_are_positions && !args.children.empty() &&
        value.children.size() == args.children.size()) {
      InputValue seq = value;
      seq.kind = InputValue::Kind::tuple;
      tried.push_back(attempt("keys in order as positional arguments", [&](Matcher& m) { return match_args(m, seq); }));
      if (tried.back().ok) {
        for (size_t i = 0; i < tried.back().binding.names.size() && i < value.keys.size(); ++i) {
          tried.back().binding.names[i] = "'" + value.keys[i] + "' as " + tried.back().binding.names[i];
        }
        return tried.back().binding;
      }
    }
    // The one positional argument itself (a tensor, a dict of tensors).
    if (args.children.size() == 1) {
      tried.push_back(
          attempt("single argument", [&](Matcher& m) { return m.match(args.children[0], value, "args[0]"); }));
      if (tried.back().ok) {
        return tried.back().binding;
      }
    }
    // Neither side names anything: the tensors in order are what the package
    // takes, whatever the nesting (the flat list a C++ program passes).
    if (!args.has_names() && !holds_dict(value)) {
      InputBinding b = positional(value, "positional (flattened)");
      b.by_call_spec = true;
      if (!num_inputs || static_cast<int>(b.order.size()) == *num_inputs) {
        return b;
      }
      // Nothing named on either side: the count is what differs.
      b.error = "the inputs file holds " + std::to_string(b.order.size()) + " tensor" +
                (b.order.size() == 1 ? "" : "s") + ", the model takes " + std::to_string(*num_inputs);
      b.order.clear();
      b.names.clear();
      return b;
    }
    return std::nullopt;
  }

  // No form held: the one message that says what the file and the package differ in.
  InputBinding refusal() const {
    InputBinding refused;
    refused.by_call_spec = true;
    if (value.kind == InputValue::Kind::dict && !args.children.empty()) {
      refused.error = "the inputs file is a dict (keys " + key_list(value.keys) + "), but the package takes " +
                      std::to_string(args.children.size()) + " positional argument" +
                      (args.children.size() == 1 ? "" : "s") +
                      " its call spec does not name: save a tuple in the order of forward's arguments" +
                      (kwargs.keys.empty() ? "" : ", or (args, kwargs)");
    } else if (value.kind != InputValue::Kind::dict && args.children.empty() && !kwargs.keys.empty() && tried.empty()) {
      refused.error = "the package takes keyword arguments " + key_list(kwargs.keys) +
                      " (its call spec) and the inputs file holds " + describe(value) +
                      ": save a dict with those keys, or (args, kwargs)";
    } else if (!tried.empty()) {
      refused.error = tried.front().binding.error;
    } else {
      refused.error = "the inputs file holds " + describe(value) + ", the package's call spec takes " + describe(args) +
                      " of positional arguments and keyword arguments " + key_list(kwargs.keys);
    }
    return refused;
  }
};

}  // namespace

InputBinding bind_inputs(const std::optional<TreeSpec>& in_spec, const InputValue& value,
                         std::optional<int> num_inputs) {
  // The spec of a package is (args, kwargs); anything else is not bound by it.
  if (!in_spec || in_spec->kind != TreeSpec::Kind::tuple || in_spec->children.size() != 2 ||
      (in_spec->children[0].kind != TreeSpec::Kind::tuple && in_spec->children[0].kind != TreeSpec::Kind::list) ||
      in_spec->children[1].kind != TreeSpec::Kind::dict) {
    return positional(value, "positional (no call spec)");
  }
  CallSpecBinder binder{in_spec->children[0],
                        in_spec->children[1],
                        value,
                        num_inputs,
                        !num_inputs || *num_inputs == in_spec->leaves(),
                        {}};
  if (auto bound = binder.bind_with_kwargs()) {
    return *bound;
  }
  if (binder.kwargs.keys.empty()) {
    if (auto bound = binder.bind_positional_only()) {
      return *bound;
    }
  }
  return binder.refusal();
}

std::string describe_inputs(const std::optional<TreeSpec>& in_spec) {
  if (!in_spec || in_spec->kind != TreeSpec::Kind::tuple || in_spec->children.size() != 2 ||
      in_spec->children[1].kind != TreeSpec::Kind::dict) {
    return "";
  }
  size_t n = in_spec->children[0].children.size();
  const auto& keys = in_spec->children[1].keys;
  std::string out;
  if (n > 0 || keys.empty()) {
    out = std::to_string(n) + " positional argument" + (n == 1 ? "" : "s");
  }
  if (!keys.empty()) {
    out += (out.empty() ? "" : " and ") + std::string("keyword arguments ") + join(keys, ", ");
  }
  return out;
}

namespace {

void leaf_paths(const TreeSpec& s, const std::string& path, std::vector<std::string>& out) {
  if (s.kind == TreeSpec::Kind::leaf) {
    out.push_back(path);
    return;
  }
  for (size_t i = 0; i < s.children.size(); ++i) {
    leaf_paths(s.children[i],
               s.kind == TreeSpec::Kind::dict ? path + "['" + s.keys[i] + "']" : path + "[" + std::to_string(i) + "]",
               out);
  }
}

}  // namespace

std::vector<std::string> input_names(const std::optional<TreeSpec>& in_spec) {
  std::vector<std::string> out;
  if (describe_inputs(in_spec).empty()) {
    return out;
  }
  const TreeSpec& args = in_spec->children[0];
  const TreeSpec& kwargs = in_spec->children[1];
  for (size_t i = 0; i < args.children.size(); ++i) {
    leaf_paths(args.children[i], "args[" + std::to_string(i) + "]", out);
  }
  for (size_t i = 0; i < kwargs.children.size(); ++i) {
    leaf_paths(kwargs.children[i], kwargs.keys[i], out);
  }
  return out;
}

std::vector<std::string> output_names(const std::optional<TreeSpec>& out_spec) {
  std::vector<std::string> names;
  if (!out_spec || !out_spec->has_names()) {
    return names;
  }
  std::function<void(const TreeSpec&, const std::string&)> walk = [&](const TreeSpec& s, const std::string& path) {
    if (s.kind == TreeSpec::Kind::leaf) {
      names.push_back(path);
      return;
    }
    for (size_t i = 0; i < s.children.size(); ++i) {
      std::string sub = s.kind == TreeSpec::Kind::dict ? (path.empty() ? s.keys[i] : path + "['" + s.keys[i] + "']")
                                                       : (path.empty() ? "" : path + "[" + std::to_string(i) + "]");
      walk(s.children[i], sub);
    }
  };
  walk(*out_spec, "");
  return names;
}

}  // namespace aoti_bisect
