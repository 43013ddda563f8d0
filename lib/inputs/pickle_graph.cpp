// A pickle read as data, never run: its opcodes as a graph of values (written back in pickle_graph_write.cpp).
#include "inputs/pickle_graph.hpp"

#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"

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

}  // namespace aoti_bisect::pickle
