#include <doctest/doctest.h>

#include "inputs/call_spec.hpp"
#include "package_fixture.hpp"
#include "wrapper/constants.hpp"
#include "wrapper/wrapper.hpp"

using namespace aoti_bisect;

namespace {

// Treespec JSON as torch writes it (treespec_dumps, protocol 1).
const std::string k_leaf = R"({"type": null, "context": null, "children_spec": []})";

std::string tuple_of(const std::vector<std::string>& children) {
  std::string out = R"({"type": "builtins.tuple", "context": "null", "children_spec": [)";
  for (size_t i = 0; i < children.size(); ++i) {
    out += (i ? ", " : "") + children[i];
  }
  return out + "]}";
}

std::string dict_of(const std::vector<std::string>& keys, const std::vector<std::string>& children) {
  std::string ctx = "[";
  for (size_t i = 0; i < keys.size(); ++i) {
    ctx += (i ? ", " : "") + std::string("\\\"") + keys[i] + "\\\"";
  }
  ctx += "]";
  std::string out = R"({"type": "builtins.dict", "context": ")" + ctx + R"(", "children_spec": [)";
  for (size_t i = 0; i < children.size(); ++i) {
    out += (i ? ", " : "") + children[i];
  }
  return out + "]}";
}

TreeSpec spec(const std::string& args, const std::string& kwargs) {
  auto s = parse_treespec("[1, " + tuple_of({args, kwargs}) + "]");
  REQUIRE(s.has_value());
  return *s;
}

InputValue tensor(int i) {
  InputValue v;
  v.kind = InputValue::Kind::tensor;
  v.tensor = i;
  return v;
}

InputValue seq(std::vector<InputValue> children, bool list = false) {
  InputValue v;
  v.kind = list ? InputValue::Kind::list : InputValue::Kind::tuple;
  v.children = std::move(children);
  return v;
}

InputValue dict(std::vector<std::string> keys, std::vector<InputValue> children) {
  InputValue v;
  v.kind = InputValue::Kind::dict;
  v.keys = std::move(keys);
  v.children = std::move(children);
  return v;
}

InputValue scalar(const std::string& type) {
  InputValue v;
  v.kind = InputValue::Kind::scalar;
  v.type = type;
  return v;
}

const std::vector<std::string> k_keys = {"input_ids", "attention_mask", "token_type_ids"};

}  // namespace

TEST_SUITE_BEGIN("inputs/call_spec");

TEST_CASE("parse_treespec and call_spec_text read what the wrapper records") {
  std::string in = "[1, " + tuple_of({tuple_of({}), dict_of(k_keys, {k_leaf, k_leaf, k_leaf})}) + "]";
  std::string source = "    in_spec_ = R\"(" + in + ")\";\n    out_spec_ = R\"([1, " + tuple_of({k_leaf}) + "])\";\n";
  CallSpecText text = call_spec_text(source);
  CHECK(text.in == in);
  auto s = parse_treespec(text.in);
  REQUIRE(s.has_value());
  CHECK(s->kind == TreeSpec::Kind::tuple);
  REQUIRE(s->children.size() == 2);
  CHECK(s->children[1].kind == TreeSpec::Kind::dict);
  CHECK(s->children[1].keys == k_keys);
  CHECK(s->leaves() == 3);
  CHECK(s->has_names());
  CHECK(describe_inputs(s) == "keyword arguments input_ids, attention_mask, token_type_ids");
  CHECK(input_names(s) == k_keys);
  CHECK(input_names(parse_treespec("[1, " + tuple_of({tuple_of({k_leaf, tuple_of({k_leaf})}), dict_of({}, {})}) +
                                   "]")) == std::vector<std::string>{"args[0]", "args[1][0]"});
  CHECK(describe_inputs(parse_treespec("[1, " + tuple_of({tuple_of({k_leaf, k_leaf}), dict_of({}, {})}) + "]")) ==
        "2 positional arguments");
  CHECK_FALSE(parse_treespec("[2, {}]").has_value());  // another protocol
  CHECK_FALSE(parse_treespec("not json").has_value());
  CHECK(call_spec_text("no spec here").in.empty());
}

TEST_CASE("the call spec of real wrappers (torch 2.11 CUDA, 2.13 CPU) is read, one leaf per tensor input") {
  for (const char* name :
       {"cuda211_relu_accuracy.wrapper.cpp", "cuda211_cond.wrapper.cpp", "cond_level1.wrapper.cpp"}) {
    CAPTURE(name);
    WrapperInfo w = parse_wrapper(fixture::text(name));
    REQUIRE_FALSE(w.in_spec.empty());
    auto s = parse_treespec(w.in_spec);
    REQUIRE(s.has_value());
    REQUIRE(w.num_inputs.has_value());
    CHECK(s->leaves() == *w.num_inputs);
    CHECK(describe_inputs(s) ==
          std::to_string(*w.num_inputs) + " positional argument" + (*w.num_inputs == 1 ? "" : "s"));
    CHECK(parse_treespec(w.out_spec).has_value());
  }
}

TEST_CASE("a dict of keyword arguments in another order is bound by name") {
  TreeSpec s = spec(tuple_of({}), dict_of(k_keys, {k_leaf, k_leaf, k_leaf}));
  // A tokenizer's order: input_ids, token_type_ids, attention_mask.
  auto b =
      bind_inputs(s, dict({"input_ids", "token_type_ids", "attention_mask"}, {tensor(0), tensor(1), tensor(2)}), 3);
  CHECK(b.error.empty());
  CHECK(b.by_call_spec);
  CHECK(b.form == "keyword dict");
  CHECK(b.order == std::vector<int>{0, 2, 1});
  CHECK(b.names == k_keys);
  // (args, kwargs): the same.
  auto pair = bind_inputs(
      s, seq({seq({}), dict({"token_type_ids", "attention_mask", "input_ids"}, {tensor(0), tensor(1), tensor(2)})}), 3);
  CHECK(pair.error.empty());
  CHECK(pair.form == "(args, kwargs)");
  CHECK(pair.order == std::vector<int>{2, 1, 0});
}

TEST_CASE("a missing, extra or unnamed keyword is refused with its name") {
  TreeSpec s = spec(tuple_of({}), dict_of(k_keys, {k_leaf, k_leaf, k_leaf}));
  auto missing = bind_inputs(s, dict({"input_ids", "attention_mask"}, {tensor(0), tensor(1)}), 3);
  CHECK(missing.error ==
        "the inputs file has no 'token_type_ids': the package takes keyword arguments input_ids, "
        "attention_mask, token_type_ids (its call spec)");
  auto extra = bind_inputs(
      s,
      dict({"input_ids", "attention_mask", "token_type_ids", "labels"}, {tensor(0), tensor(1), tensor(2), tensor(3)}),
      3);
  CHECK(extra.error ==
        "the inputs file has 'labels', which the package does not take (its keyword arguments: "
        "input_ids, attention_mask, token_type_ids)");
  auto tuple = bind_inputs(s, seq({tensor(0), tensor(1), tensor(2)}), 3);
  CHECK(tuple.error ==
        "the package takes keyword arguments input_ids, attention_mask, token_type_ids (its call spec) "
        "and the inputs file holds a tuple of 3: save a dict with those keys, or (args, kwargs)");
  CHECK(tuple.order.empty());
}

TEST_CASE("positional arguments: a tuple, nested structure, the one argument itself, a flat list") {
  TreeSpec s = spec(tuple_of({k_leaf, tuple_of({k_leaf, k_leaf})}), dict_of({}, {}));
  auto nested = bind_inputs(s, seq({tensor(0), seq({tensor(1), tensor(2)}, true)}), 3);
  CHECK(nested.error.empty());
  CHECK(nested.form == "positional tuple");
  CHECK(nested.names == std::vector<std::string>{"args[0]", "args[1][0]", "args[1][1]"});
  // The flat list a C++ program passes: neither side names anything.
  auto flat = bind_inputs(s, seq({tensor(0), tensor(1), tensor(2)}), 3);
  CHECK(flat.error.empty());
  CHECK(flat.form == "positional (flattened)");
  CHECK(flat.order == std::vector<int>{0, 1, 2});
  // ...but not with a tensor short.
  CHECK(bind_inputs(s, seq({tensor(0), tensor(1)}), 3).error == "the inputs file holds 2 tensors, the model takes 3");

  TreeSpec one = spec(tuple_of({k_leaf}), dict_of({}, {}));
  auto bare = bind_inputs(one, tensor(0), 1);
  CHECK(bare.error.empty());
  CHECK(bare.form == "single argument");
}

TEST_CASE("a dict argument is bound by its keys; a dict file for unnamed positional arguments is refused") {
  TreeSpec s = spec(tuple_of({k_leaf, dict_of({"a", "b"}, {k_leaf, k_leaf})}), dict_of({}, {}));
  auto b = bind_inputs(s, seq({tensor(0), dict({"b", "a"}, {tensor(1), tensor(2)})}), 3);
  CHECK(b.error.empty());
  CHECK(b.order == std::vector<int>{0, 2, 1});
  CHECK(b.names == std::vector<std::string>{"args[0]", "args[1]['a']", "args[1]['b']"});
  auto wrong = bind_inputs(s, seq({tensor(0), dict({"a", "c"}, {tensor(1), tensor(2)})}), 3);
  CHECK(wrong.error == "args[1]: no key 'b' in the inputs file (the package takes a, b)");

  TreeSpec two = spec(tuple_of({k_leaf, k_leaf}), dict_of({}, {}));
  auto named = bind_inputs(two, dict({"x", "y"}, {tensor(0), tensor(1)}), 2);
  CHECK(named.error ==
        "the inputs file is a dict (keys x, y), but the package takes 2 positional arguments its call "
        "spec does not name: save a tuple in the order of forward's arguments");
  auto regrouped = bind_inputs(two, seq({tensor(0), seq({tensor(1)})}), 2);
  CHECK(regrouped.form == "positional (flattened)");  // the same tensors in the same order
  auto shape = bind_inputs(two, seq({tensor(0), seq({tensor(1), tensor(2)})}), 2);
  CHECK(shape.error == "the inputs file holds 3 tensors, the model takes 2");
}

TEST_CASE("constants torch.export specialized on are dropped; without a spec, every tensor in file order") {
  TreeSpec s = spec(tuple_of({k_leaf, k_leaf}), dict_of({}, {}));
  auto b = bind_inputs(s, seq({tensor(0), scalar("Int")}), 1);  // forward(x, n: int): one tensor input
  CHECK(b.error.empty());
  CHECK(b.order == std::vector<int>{0});
  auto none = bind_inputs(std::nullopt, dict({"b", "a"}, {tensor(0), seq({tensor(1), tensor(2)})}), std::nullopt);
  CHECK_FALSE(none.by_call_spec);
  CHECK(none.form == "positional (no call spec)");
  CHECK(none.order == std::vector<int>{0, 1, 2});
  CHECK(none.names == std::vector<std::string>{"input0", "input1", "input2"});
}

TEST_CASE("output_names: from a dict out_spec, none from a tuple") {
  auto dict_out = parse_treespec("[1, " + dict_of({"logits", "loss"}, {k_leaf, k_leaf}) + "]");
  CHECK(output_names(dict_out) == std::vector<std::string>{"logits", "loss"});
  auto tuple_out = parse_treespec("[1, " + tuple_of({k_leaf, k_leaf}) + "]");
  CHECK(output_names(tuple_out).empty());
}

TEST_CASE("frozen constants are described by shape and layout") {
  ConstantInfo c;
  c.name = "_frozen_param4";
  c.fqn = "_frozen_param4";
  c.kind = "buffer";
  c.shape = {32, 16};
  c.opaque = true;
  CHECK(c.frozen());
  CHECK(describe_constant(c) == "frozen weight [32, 16] in oneDNN layout");
  c.opaque = false;  // dense: it may be a folded bias as well as a weight
  CHECK(describe_constant(c) == "frozen constant [32, 16]");
  c.name = "fc_weight";
  c.fqn = "fc.weight";
  CHECK_FALSE(c.frozen());
  CHECK(describe_constant(c) == "buffer fc.weight");
  c.opaque = true;
  CHECK(describe_constant(c) == "buffer fc.weight (oneDNN layout)");
}

TEST_SUITE_END();
