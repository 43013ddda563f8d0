#pragma once
// The package's call spec: the pytree torch.export flattened the model's
// inputs with (its `in_spec`: the tuple (args, kwargs), with argument names
// where the model was exported with keywords and the keys of dict arguments)
// and its outputs with (`out_spec`). The generated wrapper records both as
// JSON (`in_spec_ = R"(...)"`), in torch's treespec_dumps format:
//   [1, {"type": "builtins.tuple", "context": "null", "children_spec": [...]}]
// where a dict's context is the JSON text of its keys.
//
// bind_inputs binds what an inputs file holds to the package's flat inputs
// by that spec: keys by name, tuples and lists by position, non-tensor leaves
// (constants torch.export specialized on) dropped as the Python runtime drops
// them. Torch-free: the runner turns the file into an InputValue first.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

struct TreeSpec {
  enum class Kind { leaf, tuple, list, dict, none, other };
  Kind kind = Kind::leaf;
  std::string type;               // as the spec names it: "builtins.tuple", "collections.OrderedDict"
  std::vector<std::string> keys;  // dict: its keys, in flat order (strings as written, numbers as text)
  std::vector<TreeSpec> children;
  int leaves() const;      // leaf count (tensors and the constants among them)
  bool has_names() const;  // a dict anywhere below
};

// nullopt when the text is not a treespec this version reads (another
// protocol, malformed JSON).
std::optional<TreeSpec> parse_treespec(std::string_view json_text);

// The `in_spec_` and `out_spec_` strings of a wrapper source; "" when absent.
struct CallSpecText {
  std::string in;
  std::string out;
};
CallSpecText call_spec_text(const std::string& wrapper_source);

// What an inputs file holds, as a tree: tensors numbered in file order.
struct InputValue {
  enum class Kind { tensor, tuple, list, dict, none, scalar, other };
  Kind kind = Kind::tensor;
  std::string type;               // scalar/other: "int", "str", "Object"; for messages
  std::vector<std::string> keys;  // dict: its keys, in file order
  std::vector<InputValue> children;
  int tensor = -1;  // tensor: its index in file order
  // dict: its keys stand for positions where the spec takes positional
  // arguments (a safetensors file, which holds nothing but named tensors)
  bool keys_are_positions = false;
};

struct InputBinding {
  bool by_call_spec = false;       // false: positional, the package carries no call spec it can be bound by
  std::string form;                // "keyword dict", "(args, kwargs)", "positional tuple", "single argument",
                                   // "positional (flattened)", "positional (no call spec)"
  std::vector<int> order;          // order[i]: the file's tensor (file order) that is flat input i
  std::vector<std::string> names;  // names[i]: where flat input i came from: "attention_mask",
                                   // "batch['mask']", "args[1][0]"
  std::string error;               // one line when the file does not fit the spec ("" when bound)
};

// Binds `value` to the package's flat inputs. Without a spec: every tensor in
// file order (tuples, lists, dict values). With one, the first of these that
// fits: (args, kwargs); a dict of the keyword arguments (a model exported with
// keywords only); a tuple or list of the positional arguments; the one
// positional argument itself; and, where neither spec nor file names
// anything, the tensors in order. `num_inputs` (the wrapper's count of
// tensor inputs, when known) tells whether the spec's leaves are all tensors.
InputBinding bind_inputs(const std::optional<TreeSpec>& in_spec, const InputValue& value,
                         std::optional<int> num_inputs);

// What the in_spec takes, for `inspect`: "keyword arguments input_ids,
// attention_mask, token_type_ids", "2 positional arguments", "1 positional
// argument and keyword arguments mask"; "" when it is not (args, kwargs).
std::string describe_inputs(const std::optional<TreeSpec>& in_spec);

// Each leaf's name in flat order ("args[0]", "attention_mask",
// "batch['mask']"); empty when the spec is not (args, kwargs).
std::vector<std::string> input_names(const std::optional<TreeSpec>& in_spec);

// Output names from the out_spec where it has names ("logits", "out['loss']"),
// by flat output index; "" for an output the spec does not name, empty when
// the spec names none.
std::vector<std::string> output_names(const std::optional<TreeSpec>& out_spec);

}  // namespace aoti_bisect
