// A pickle graph written back as the protocol-2 pickle LibTorch reads, refusing what would need code to run.
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"
#include "inputs/pickle_graph.hpp"

namespace aoti_bisect::pickle {

namespace {

using Kind = Node::Kind;

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

std::string emit(Graph& g, const EmitOptions& options, std::vector<std::string>& notes) {
  return Emitter(g, options, notes).run();
}

}  // namespace aoti_bisect::pickle
