#pragma once
// A pickle read as data, never run: its opcodes decoded into a graph of
// values (calls and objects kept as what they name, never evaluated), and
// that graph written back as the protocol-2 pickle LibTorch's unpickler
// reads: tensors, storages, tuples, lists, dicts and scalars. What users
// save around their tensors is taken apart on the way: a mapping object
// (a tokenizer's BatchEncoding, an OrderedDict, a dict subclass) becomes
// the dict it holds, an nn.Parameter its tensor, a tensor subclass a plain
// tensor. Anything whose value would need its code to run (a call of
// another function, an object that is not a mapping) is refused where the
// value is needed, and only there: what is left out is never looked at.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect::pickle {

inline constexpr uint32_t k_no_node = UINT32_MAX;

struct Node {
  enum class Kind : uint8_t {
    none,
    boolean,
    integer,
    big_integer,
    floating,
    text,
    bytes,
    tuple,
    list,
    dict,
    set,
    global,  // a name: text is "module name"
    call,    // REDUCE: items = {callable, args}
    object,  // NEWOBJ: items = {class, args}
    persid,  // BINPERSID: items = {the id}
  };
  Kind kind = Kind::none;
  int64_t number = 0;               // integer, boolean
  double real = 0;                  // floating
  std::string text;                 // text, global, big_integer (its bytes)
  std::vector<uint32_t> items;      // tuple/list/set items; dict: key, value, key, value ...
  std::vector<uint32_t> set_items;  // call/object: SETITEM(S) on it (a dict subclass): key, value ...
  std::vector<uint32_t> appended;   // call/object: APPEND(S) on it (a list subclass)
  uint32_t state = k_no_node;       // BUILD's argument
  size_t offset = 0;                // where in the pickle it was made (for messages)
};

struct Graph {
  std::vector<Node> nodes;
  uint32_t root = k_no_node;
  size_t end = 0;  // the offset just past STOP
};

// Decodes the pickle starting at `start` of `data`, up to its STOP.
// `bad(why, offset)` is called (and must throw) for anything that is not a
// well-formed pickle: an unknown opcode, a truncated stream, a bad memo
// reference. Memory follows the pickle's size.
using BadFn = std::function<void(const std::string& why, size_t offset)>;
Graph decode(std::string_view data, size_t start, const BadFn& bad);

// The global a node names ("torch._utils _rebuild_tensor_v2"); "" when it is not one.
std::string global_name(const Graph& g, uint32_t node);

// Writing the graph back. `who` starts every refusal ("inputs file
// 'batch.pt'"); refusals throw Error(cannot_test). `notes` gets one line
// per object read as something else ("a transformers.tokenization_utils_base
// .BatchEncoding read as the dict it holds"). `storage_id` rewrites each
// persistent id's tuple (the legacy format's 6-tuples) before it is written;
// by default ids are written as they are.
struct EmitOptions {
  std::string who;
  std::function<void(std::vector<uint32_t>& id_items, Graph& g)> storage_id;
};
std::string emit(Graph& g, const EmitOptions& options, std::vector<std::string>& notes);

// Building graphs by hand (a safetensors file's dict of tensors).
uint32_t add_node(Graph& g, Node n);
uint32_t add_text(Graph& g, std::string text);
uint32_t add_integer(Graph& g, int64_t v);
uint32_t add_global(Graph& g, const std::string& module, const std::string& name);
uint32_t add_tuple(Graph& g, std::vector<uint32_t> items);

}  // namespace aoti_bisect::pickle
