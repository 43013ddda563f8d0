// A pickle read as data, never run: its opcodes as a graph of values, written back as protocol 2.
#include "package/pickle_graph.hpp"

#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"

namespace aoti_bisect::pickle {

namespace {

using Kind = Node::Kind;

class Decoder {
 public:
  Decoder(std::string_view data, size_t start, const BadFn& bad) : m_data(data), m_pos(start), m_bad(bad) {}

  Graph run() {
    while (true) {
      uint8_t op = byte();
      if (op == '.') {
        if (m_stack.size() != 1 || !m_marks.empty()) {
          fail(fmt::format("STOP with {} values on the stack", m_stack.size()));
        }
        m_graph.root = m_stack.back();
        m_graph.end = m_pos;
        return std::move(m_graph);
      }
      step(op);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    m_bad(why, m_pos);
    throw Error(ErrorKind::internal, "pickle: " + why);  // bad() must throw; never reached
  }
  uint8_t byte() {
    if (m_pos >= m_data.size()) {
      fail("the pickle ends without STOP");
    }
    return static_cast<uint8_t>(m_data[m_pos++]);
  }
  uint64_t little(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      v |= static_cast<uint64_t>(byte()) << (8 * i);
    }
    return v;
  }
  std::string take(uint64_t n) {
    if (n > m_data.size() - m_pos) {
      fail(fmt::format("a length of {} bytes past the pickle's end", n));
    }
    std::string s(m_data.substr(m_pos, n));
    m_pos += n;
    return s;
  }
  std::string line() {
    size_t end = m_data.find('\n', m_pos);
    if (end == std::string_view::npos) {
      fail("a GLOBAL without its newline");
    }
    std::string s(m_data.substr(m_pos, end - m_pos));
    m_pos = end + 1;
    return s;
  }

  uint32_t push(Node n) {
    n.offset = m_pos;
    uint32_t id = add_node(m_graph, std::move(n));
    m_stack.push_back(id);
    return id;
  }
  void push_kind(Kind kind, int64_t number = 0) {
    Node n;
    n.kind = kind;
    n.number = number;
    push(std::move(n));
  }
  size_t floor() const { return m_marks.empty() ? 0 : m_marks.back(); }
  uint32_t pop() {
    if (m_stack.size() <= floor()) {
      fail("a pop from an empty stack");
    }
    uint32_t v = m_stack.back();
    m_stack.pop_back();
    return v;
  }
  uint32_t top() {
    if (m_stack.size() <= floor()) {
      fail("an empty stack");
    }
    return m_stack.back();
  }
  std::vector<uint32_t> pop_to_mark() {
    if (m_marks.empty()) {
      fail("no MARK");
    }
    std::vector<uint32_t> items(m_stack.begin() + static_cast<std::ptrdiff_t>(m_marks.back()), m_stack.end());
    m_stack.resize(m_marks.back());
    m_marks.pop_back();
    return items;
  }
  Node& node(uint32_t id) { return m_graph.nodes[id]; }

  // SETITEM(S) and APPEND(S) add to the value below them: a dict or list,
  // or an object being built (a dict or list subclass).
  void set_items(const std::vector<uint32_t>& kv) {
    if (kv.size() % 2 != 0) {
      fail("SETITEMS with an odd number of items");
    }
    Node& target = node(top());
    if (target.kind == Kind::dict) {
      target.items.insert(target.items.end(), kv.begin(), kv.end());
    } else if (target.kind == Kind::call || target.kind == Kind::object) {
      target.set_items.insert(target.set_items.end(), kv.begin(), kv.end());
    } else {
      fail("SETITEMS on a value that is not a dict");
    }
  }
  void append(const std::vector<uint32_t>& items) {
    Node& target = node(top());
    if (target.kind == Kind::list) {
      target.items.insert(target.items.end(), items.begin(), items.end());
    } else if (target.kind == Kind::call || target.kind == Kind::object) {
      target.appended.insert(target.appended.end(), items.begin(), items.end());
    } else {
      fail("APPENDS on a value that is not a list");
    }
  }
  void memo_put(uint64_t id) {
    if (id > m_memo.size() + (1u << 20)) {
      fail(fmt::format("memo id {} far past the {} stored", id, m_memo.size()));
    }
    if (id >= m_memo.size()) {
      m_memo.resize(id + 1, k_no_node);
    }
    m_memo[id] = top();
  }
  void memo_get(uint64_t id) {
    if (id >= m_memo.size() || m_memo[id] == k_no_node) {
      fail(fmt::format("memo id {} never stored", id));
    }
    m_stack.push_back(m_memo[id]);
  }
  void text(std::string s) {
    Node n;
    n.kind = Kind::text;
    n.text = std::move(s);
    push(std::move(n));
  }
  void global(std::string module, std::string name) {
    Node n;
    n.kind = Kind::global;
    n.text = module + " " + name;
    push(std::move(n));
  }
  void tuple(std::vector<uint32_t> items) {
    uint32_t id = add_tuple(m_graph, std::move(items));
    m_graph.nodes[id].offset = m_pos;
    m_stack.push_back(id);
  }

  void step(uint8_t op);

  std::string_view m_data;
  size_t m_pos;
  const BadFn& m_bad;
  Graph m_graph;
  std::vector<uint32_t> m_stack;
  std::vector<size_t> m_marks;
  std::vector<uint32_t> m_memo;
};

// NOLINTNEXTLINE(readability-function-size): data: one case per pickle opcode
void Decoder::step(uint8_t op) {
  switch (op) {
    case 0x80: byte(); break;     // PROTO
    case 0x95: little(8); break;  // FRAME
    case '(': m_marks.push_back(m_stack.size()); break;
    case '0': pop(); break;                     // POP
    case '1': pop_to_mark(); break;             // POP_MARK
    case '2': m_stack.push_back(top()); break;  // DUP
    case 'N': push_kind(Kind::none); break;
    case 0x88: push_kind(Kind::boolean, 1); break;
    case 0x89: push_kind(Kind::boolean, 0); break;
    case 'J': push_kind(Kind::integer, static_cast<int32_t>(little(4))); break;
    case 'K': push_kind(Kind::integer, static_cast<int64_t>(little(1))); break;
    case 'M': push_kind(Kind::integer, static_cast<int64_t>(little(2))); break;
    case 0x8a:    // LONG1
    case 0x8b: {  // LONG4
      uint64_t n = op == 0x8a ? little(1) : little(4);
      Node v;
      v.kind = Kind::big_integer;
      v.text = take(n);
      push(std::move(v));
      break;
    }
    case 'G': {  // BINFLOAT, big-endian
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) {
        bits = (bits << 8) | byte();
      }
      Node v;
      v.kind = Kind::floating;
      std::memcpy(&v.real, &bits, sizeof bits);
      push(std::move(v));
      break;
    }
    case 'X': text(take(little(4))); break;   // BINUNICODE
    case 0x8c: text(take(little(1))); break;  // SHORT_BINUNICODE
    case 0x8d: text(take(little(8))); break;  // BINUNICODE8
    case 'T': text(take(little(4))); break;   // BINSTRING
    case 'U': text(take(little(1))); break;   // SHORT_BINSTRING
    case 'B':
      take(little(4));
      push_kind(Kind::bytes);
      break;  // BINBYTES
    case 'C':
      take(little(1));
      push_kind(Kind::bytes);
      break;  // SHORT_BINBYTES
    case 0x8e:
      take(little(8));
      push_kind(Kind::bytes);
      break;  // BINBYTES8
    case 0x96:
      take(little(8));
      push_kind(Kind::bytes);
      break;  // BYTEARRAY8
    case ')': tuple({}); break;
    case 't': tuple(pop_to_mark()); break;
    case 0x85: {
      uint32_t a = pop();
      tuple({a});
      break;
    }
    case 0x86: {
      uint32_t b = pop();
      uint32_t a = pop();
      tuple({a, b});
      break;
    }
    case 0x87: {
      uint32_t c = pop();
      uint32_t b = pop();
      uint32_t a = pop();
      tuple({a, b, c});
      break;
    }
    case ']': push_kind(Kind::list); break;
    case 'l': {  // LIST
      std::vector<uint32_t> items = pop_to_mark();
      push_kind(Kind::list);
      node(top()).items = std::move(items);
      break;
    }
    case 'a': {
      uint32_t v = pop();
      append({v});
      break;
    }
    case 'e': append(pop_to_mark()); break;  // APPENDS
    case '}': push_kind(Kind::dict); break;
    case 'd': {  // DICT
      std::vector<uint32_t> items = pop_to_mark();
      if (items.size() % 2 != 0) {
        fail("DICT with an odd number of items");
      }
      push_kind(Kind::dict);
      node(top()).items = std::move(items);
      break;
    }
    case 's': {
      uint32_t v = pop();
      uint32_t k = pop();
      set_items({k, v});
      break;
    }
    case 'u': set_items(pop_to_mark()); break;  // SETITEMS
    case 0x8f: push_kind(Kind::set); break;     // EMPTY_SET
    case 0x90: {                                // ADDITEMS
      std::vector<uint32_t> items = pop_to_mark();
      Node& s = node(top());
      if (s.kind != Kind::set) {
        fail("ADDITEMS on a value that is not a set");
      }
      s.items.insert(s.items.end(), items.begin(), items.end());
      break;
    }
    case 0x91: {  // FROZENSET
      std::vector<uint32_t> items = pop_to_mark();
      push_kind(Kind::set);
      node(top()).items = std::move(items);
      break;
    }
    case 'q': memo_put(little(1)); break;       // BINPUT
    case 'r': memo_put(little(4)); break;       // LONG_BINPUT
    case 0x94: memo_put(m_memo.size()); break;  // MEMOIZE
    case 'h': memo_get(little(1)); break;       // BINGET
    case 'j': memo_get(little(4)); break;       // LONG_BINGET
    case 'c': {                                 // GLOBAL
      std::string module = line();
      std::string name = line();
      global(std::move(module), std::move(name));
      break;
    }
    case 0x93: {  // STACK_GLOBAL
      const Node name = node(pop());
      const Node module = node(pop());
      if (name.kind != Kind::text || module.kind != Kind::text) {
        fail("STACK_GLOBAL of other than two strings");
      }
      global(module.text, name.text);
      break;
    }
    case 'Q': {  // BINPERSID
      uint32_t id = pop();
      Node n;
      n.kind = Kind::persid;
      n.items = {id};
      push(std::move(n));
      break;
    }
    case 'R':     // REDUCE
    case 0x81: {  // NEWOBJ
      uint32_t args = pop();
      uint32_t callable = pop();
      Node n;
      n.kind = op == 'R' ? Kind::call : Kind::object;
      n.items = {callable, args};
      push(std::move(n));
      break;
    }
    case 0x92: {  // NEWOBJ_EX
      pop();      // kwargs
      uint32_t args = pop();
      uint32_t cls = pop();
      Node n;
      n.kind = Kind::object;
      n.items = {cls, args};
      push(std::move(n));
      break;
    }
    case 'b': {  // BUILD
      uint32_t state = pop();
      node(top()).state = state;
      break;
    }
    default: fail(fmt::format("opcode 0x{:02x}", op));
  }
}

// What a call of `name` gives, as far as LibTorch's unpickler goes.
enum class Callee { tensor, tensor_v1, tensor_v3, parameter, typed_tensor, ordered_dict, passthrough, other };

Callee callee_of(const std::string& name) {
  if (name == "torch._utils _rebuild_tensor_v2" || name == "torch._utils _rebuild_qtensor" ||
      name == "torch._utils _rebuild_sparse_tensor") {
    return Callee::tensor;
  }
  if (name == "torch._utils _rebuild_tensor") {
    return Callee::tensor_v1;
  }
  if (name == "torch._utils _rebuild_tensor_v3") {
    return Callee::tensor_v3;
  }
  if (name == "torch._utils _rebuild_parameter" || name == "torch._utils _rebuild_parameter_with_state") {
    return Callee::parameter;
  }
  if (name == "torch._tensor _rebuild_from_type_v2") {
    return Callee::typed_tensor;
  }
  if (name == "collections OrderedDict") {
    return Callee::ordered_dict;
  }
  if (name == "torch device" || name == "builtins complex") {
    return Callee::passthrough;
  }
  return Callee::other;
}

// "torch._utils _rebuild_tensor_v2" -> "torch._utils._rebuild_tensor_v2"
std::string dotted(const std::string& global) {
  std::string s = global;
  size_t sp = s.find(' ');
  if (sp != std::string::npos) {
    s[sp] = '.';
  }
  return printable_name(s);
}

class Emitter {
 public:
  Emitter(Graph& g, const EmitOptions& options, std::vector<std::string>& notes)
      : m_g(g), m_opt(options), m_notes(notes), m_progress(g.nodes.size(), 0) {}

  std::string run() {
    m_out = std::string("\x80\x02", 2);
    value(m_g.root, 0);
    m_out += '.';
    return std::move(m_out);
  }

 private:
  static constexpr int k_max_depth = 1000;

  [[noreturn]] void refuse(const std::string& problem, const std::string& remedy) const {
    throw Error(ErrorKind::cannot_test, m_opt.who + " " + problem + "; " + remedy);
  }
  void note(const std::string& line) {
    for (const auto& n : m_notes) {
      if (n == line) {
        return;
      }
    }
    m_notes.push_back(line);
  }

  void little(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      m_out += static_cast<char>((v >> (8 * i)) & 0xff);
    }
  }
  void integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      m_out += 'J';
      little(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    } else {
      m_out += "\x8a\x08";  // LONG1 of 8 bytes: the only LONG1 LibTorch reads
      little(static_cast<uint64_t>(v), 8);
    }
  }
  void text(const std::string& s) {
    m_out += 'X';
    little(s.size(), 4);
    m_out += s;
  }
  void global(const std::string& module_and_name) {
    size_t sp = module_and_name.find(' ');
    m_out += 'c';
    m_out += module_and_name.substr(0, sp);
    m_out += '\n';
    m_out += module_and_name.substr(sp + 1);
    m_out += '\n';
  }
  void put(uint32_t node) {
    uint32_t id = static_cast<uint32_t>(m_memo.size());
    m_memo[node] = id;
    if (id < 256) {
      m_out += 'q';
      little(id, 1);
    } else {
      m_out += 'r';
      little(id, 4);
    }
  }
  // A node written before: read back from the memo, so that values shared
  // in the file stay shared and a shared subtree is written once.
  bool get(uint32_t node) {
    auto it = m_memo.find(node);
    if (it == m_memo.end()) {
      return false;
    }
    if (it->second < 256) {
      m_out += 'h';
      little(it->second, 1);
    } else {
      m_out += 'j';
      little(it->second, 4);
    }
    return true;
  }

  const Node& at(uint32_t n) const { return m_g.nodes[n]; }

  void value(uint32_t n, int depth) {
    if (depth > k_max_depth) {
      refuse(fmt::format("nests its values more than {} levels deep", k_max_depth),
             "save a flat tuple or dict of tensors");
    }
    if (get(n)) {
      return;
    }
    if (m_progress[n] != 0) {
      refuse("holds a container that contains itself", "save a tuple or dict of tensors");
    }
    m_progress[n] = 1;
    write(n, depth);
    m_progress[n] = 0;
  }

  void items(const std::vector<uint32_t>& list, int depth) {
    for (uint32_t item : list) {
      value(item, depth + 1);
    }
  }

  void dict_of(uint32_t n, const std::vector<uint32_t>& kv, int depth) {
    m_out += '}';
    put(n);
    if (!kv.empty()) {
      m_out += '(';
      items(kv, depth);
      m_out += 'u';
    }
  }

  void write(uint32_t n, int depth) {
    const Node& v = at(n);
    switch (v.kind) {
      case Kind::none: m_out += 'N'; return;
      case Kind::boolean: m_out += v.number ? '\x88' : '\x89'; return;
      case Kind::integer: integer(v.number); return;
      case Kind::big_integer: big_integer(v); return;
      case Kind::floating: {
        uint64_t bits = 0;
        std::memcpy(&bits, &v.real, sizeof bits);
        m_out += 'G';
        for (int i = 7; i >= 0; --i) {
          m_out += static_cast<char>((bits >> (8 * i)) & 0xff);
        }
        return;
      }
      case Kind::text: text(v.text); return;
      case Kind::bytes: refuse("holds a bytes value", "save tensors, not bytes");
      case Kind::set: refuse("holds a set", "save a tuple, list or dict of tensors");
      case Kind::tuple:
        if (v.items.empty()) {
          m_out += ')';
        } else {
          m_out += '(';
          items(v.items, depth);
          m_out += 't';
        }
        put(n);
        return;
      case Kind::list:
        m_out += ']';
        put(n);
        if (!v.items.empty()) {
          m_out += '(';
          items(v.items, depth);
          m_out += 'e';
        }
        return;
      case Kind::dict: dict_of(n, v.items, depth); return;
      case Kind::global: {
        // A storage type stands alone in a persistent id, a quantization
        // scheme in a quantized tensor's arguments; nothing else may.
        if (v.text.rfind("torch ", 0) == 0 && (v.text.ends_with("Storage") || v.text.rfind("torch per_", 0) == 0)) {
          global(v.text);
          return;
        }
        refuse(fmt::format("holds a reference to {}", dotted(v.text)), "save tensors and plain containers only");
      }
      case Kind::persid: persid(n, depth); return;
      case Kind::call: call(n, depth); return;
      case Kind::object: object(n, depth); return;
    }
  }

  void big_integer(const Node& v) {
    if (v.text.size() > 8) {
      refuse("holds an integer wider than 64 bits", "save tensors and plain containers only");
    }
    uint64_t bits = 0;
    for (size_t i = 0; i < v.text.size(); ++i) {
      bits |= static_cast<uint64_t>(static_cast<uint8_t>(v.text[i])) << (8 * i);
    }
    if (!v.text.empty() && v.text.size() < 8 && (static_cast<uint8_t>(v.text.back()) & 0x80) != 0) {
      bits |= ~uint64_t{0} << (8 * v.text.size());
    }
    integer(static_cast<int64_t>(bits));
  }

  void persid(uint32_t n, int depth) {
    uint32_t id = at(n).items[0];
    if (at(id).kind != Kind::tuple) {
      refuse("holds a persistent id other than a storage's", "save it again with torch.save");
    }
    std::vector<uint32_t> id_items = at(id).items;
    if (m_opt.storage_id) {
      m_opt.storage_id(id_items, m_g);
    }
    m_out += '(';
    items(id_items, depth);
    m_out += "tQ";
    put(n);
  }

  // The callable's args tuple, checked to be one.
  const std::vector<uint32_t>& call_args(const Node& v, const std::string& name) {
    if (at(v.items[1]).kind != Kind::tuple) {
      refuse(fmt::format("calls {} with arguments that are not a tuple", dotted(name)),
             "save it again with torch.save");
    }
    return at(v.items[1]).items;
  }

  void call(uint32_t n, int depth) {
    const Node& v = at(n);
    std::string name = global_name(m_g, v.items[0]);
    switch (callee_of(name)) {
      case Callee::tensor:
      case Callee::passthrough:
        global(name);
        value(v.items[1], depth + 1);
        m_out += 'R';
        put(n);
        return;
      case Callee::tensor_v1: {
        // (storage, offset, size, stride): as _rebuild_tensor_v2 with no grad and no hooks.
        std::vector<uint32_t> args = call_args(v, name);
        global("torch._utils _rebuild_tensor_v2");
        m_out += '(';
        items(args, depth);
        m_out += "\x89}t";
        m_out += 'R';
        put(n);
        return;
      }
      case Callee::tensor_v3:
        refuse(
            "holds a tensor torch.save wrote with _rebuild_tensor_v3 (a dtype such as float8 or uint16), which "
            "LibTorch's loader does not read",
            "save it with safetensors.torch.save_file, which aoti-bisect reads for these dtypes");
      case Callee::parameter: {
        const auto& args = call_args(v, name);
        if (args.empty()) {
          refuse("holds an nn.Parameter without its tensor", "save it again with torch.save");
        }
        note("an nn.Parameter read as its tensor");
        value(args[0], depth + 1);
        return;
      }
      case Callee::typed_tensor: {
        // (func, type, args, state): func(*args) is the tensor; the type and
        // the Python attributes go, as LibTorch itself drops them.
        const auto& args = call_args(v, name);
        if (args.size() < 3 || at(args[2]).kind != Kind::tuple ||
            callee_of(global_name(m_g, args[0])) != Callee::tensor) {
          refuse("holds a tensor subclass rebuilt by other than a tensor function", "save plain tensors");
        }
        std::string type = global_name(m_g, args[1]);
        if (type != "torch Tensor" && type != "torch.nn.parameter Parameter") {
          note(fmt::format("a {} (a tensor subclass) read as a plain tensor", dotted(type)));
        }
        global(global_name(m_g, args[0]));
        value(args[2], depth + 1);
        m_out += 'R';
        put(n);
        return;
      }
      case Callee::ordered_dict: {
        std::vector<uint32_t> kv;
        const auto& args = call_args(v, name);
        if (!args.empty()) {
          // OrderedDict([(k, v), ...])
          const Node& pairs = at(args[0]);
          if (pairs.kind != Kind::list && pairs.kind != Kind::tuple) {
            refuse("builds an OrderedDict from other than pairs", "save a dict of tensors");
          }
          for (uint32_t p : pairs.items) {
            if (at(p).kind != Kind::tuple || at(p).items.size() != 2) {
              refuse("builds an OrderedDict from other than pairs", "save a dict of tensors");
            }
            kv.push_back(at(p).items[0]);
            kv.push_back(at(p).items[1]);
          }
        }
        kv.insert(kv.end(), v.set_items.begin(), v.set_items.end());
        dict_of(n, kv, depth);
        return;
      }
      case Callee::other: break;
    }
    if (name.empty()) {
      refuse("calls a value that is not a named function", "save tensors and plain containers only");
    }
    refuse(fmt::format("would call {} when loaded (a pickle that runs code)", dotted(name)),
           "aoti-bisect reads only tensors and plain containers: save the tensors themselves (a tuple or dict) with "
           "torch.save or safetensors");
  }

  // An object made by NEWOBJ (Python's default pickling of an instance): a
  // dict or list subclass carries its items; a UserDict-style mapping (a
  // transformers BatchEncoding) its dict under "data" in its state.
  void object(uint32_t n, int depth) {
    const Node& v = at(n);
    std::string cls = global_name(m_g, v.items[0]);
    std::string shown = cls.empty() ? "an object" : "a " + dotted(cls);
    if (!v.set_items.empty()) {
      note(shown + " (a dict subclass) read as a dict");
      dict_of(n, v.set_items, depth);
      return;
    }
    if (!v.appended.empty()) {
      note(shown + " (a list subclass) read as a list");
      m_out += ']';
      put(n);
      m_out += '(';
      items(v.appended, depth);
      m_out += 'e';
      return;
    }
    if (v.state != k_no_node && at(v.state).kind == Kind::dict) {
      const auto& st = at(v.state).items;
      for (size_t i = 0; i + 1 < st.size(); i += 2) {
        const Node& key = at(st[i]);
        const Node& data = at(st[i + 1]);
        bool mapping = data.kind == Kind::dict ||
                       ((data.kind == Kind::call || data.kind == Kind::object) && !data.set_items.empty());
        if (key.kind == Kind::text && key.text == "data" && mapping) {
          note(shown + " read as the dict it holds");
          value(st[i + 1], depth + 1);
          return;
        }
      }
    }
    if (cls == "collections OrderedDict") {
      dict_of(n, {}, depth);
      return;
    }
    refuse(fmt::format("holds {} object, which is not a mapping of tensors", shown),
           "save its tensors as a tuple or dict with torch.save");
  }

  Graph& m_g;
  const EmitOptions& m_opt;
  std::vector<std::string>& m_notes;
  std::vector<uint8_t> m_progress;
  std::unordered_map<uint32_t, uint32_t> m_memo;
  std::string m_out;
};

}  // namespace

uint32_t add_node(Graph& g, Node n) {
  g.nodes.push_back(std::move(n));
  return static_cast<uint32_t>(g.nodes.size() - 1);
}

uint32_t add_text(Graph& g, std::string text) {
  Node n;
  n.kind = Kind::text;
  n.text = std::move(text);
  return add_node(g, std::move(n));
}

uint32_t add_integer(Graph& g, int64_t v) {
  Node n;
  n.kind = Kind::integer;
  n.number = v;
  return add_node(g, std::move(n));
}

uint32_t add_global(Graph& g, const std::string& module, const std::string& name) {
  Node n;
  n.kind = Kind::global;
  n.text = module + " " + name;
  return add_node(g, std::move(n));
}

uint32_t add_tuple(Graph& g, std::vector<uint32_t> items) {
  Node n;
  n.kind = Kind::tuple;
  n.items = std::move(items);
  return add_node(g, std::move(n));
}

Graph decode(std::string_view data, size_t start, const BadFn& bad) {
  return Decoder(data, start, bad).run();
}

std::string global_name(const Graph& g, uint32_t node) {
  if (node >= g.nodes.size() || g.nodes[node].kind != Kind::global) {
    return "";
  }
  return g.nodes[node].text;
}

std::string emit(Graph& g, const EmitOptions& options, std::vector<std::string>& notes) {
  return Emitter(g, options, notes).run();
}

}  // namespace aoti_bisect::pickle
