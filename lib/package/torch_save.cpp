#include "package/torch_save.hpp"

#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <zip.h>

#include "common/error.hpp"
#include "package/zip.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// Element sizes of the storage types a pickle names ("torch FloatStorage"),
// by LibTorch's scalar type names.
uint64_t storage_item_size(const std::string& type) {
  static const std::map<std::string, uint64_t> sizes = {
      {"Byte", 1},          {"Char", 1},           {"Short", 2},           {"Int", 4},
      {"Long", 8},          {"Half", 2},           {"Float", 4},           {"Double", 8},
      {"ComplexHalf", 4},   {"ComplexFloat", 8},   {"ComplexDouble", 16},  {"Bool", 1},
      {"QInt8", 1},         {"QUInt8", 1},         {"QInt32", 4},          {"BFloat16", 2},
      {"QUInt4x2", 1},      {"QUInt2x4", 1},       {"Bits1x8", 1},         {"Bits2x4", 1},
      {"Bits4x2", 1},       {"Bits8", 1},          {"Bits16", 2},          {"Float8_e5m2", 1},
      {"Float8_e4m3fn", 1}, {"Float8_e5m2fnuz", 1}, {"Float8_e4m3fnuz", 1}, {"Float8_e8m0fnu", 1},
      {"Float4_e2m1fn_x2", 1}, {"UInt16", 2},      {"UInt32", 4},          {"UInt64", 8},
      {"UInt1", 1},         {"UInt2", 1},          {"UInt3", 1},           {"UInt4", 1},
      {"UInt5", 1},         {"UInt6", 1},          {"UInt7", 1},           {"Int1", 1},
      {"Int2", 1},          {"Int3", 1},           {"Int4", 1},            {"Int5", 1},
      {"Int6", 1},          {"Int7", 1},           {"Untyped", 1}};
  const std::string suffix = "Storage";
  if (type == "torch.storage UntypedStorage") {
    return 1;  // what _rebuild_tensor_v3 reads: a count of bytes
  }
  if (type.rfind("torch ", 0) != 0 || type.size() <= 6 + suffix.size() ||
      !type.ends_with(suffix)) {
    return 0;
  }
  auto it = sizes.find(type.substr(6, type.size() - 6 - suffix.size()));
  return it == sizes.end() ? 0 : it->second;
}

// Element sizes of the dtypes _rebuild_tensor_v3 names ("torch float8_e4m3fn").
uint64_t dtype_item_size(const std::string& global) {
  static const std::map<std::string, uint64_t> sizes = {
      {"uint8", 1},          {"int8", 1},           {"int16", 2},          {"short", 2},
      {"int32", 4},          {"int", 4},            {"int64", 8},          {"long", 8},
      {"float16", 2},        {"half", 2},           {"float32", 4},        {"float", 4},
      {"float64", 8},        {"double", 8},         {"complex32", 4},      {"chalf", 4},
      {"complex64", 8},      {"cfloat", 8},         {"complex128", 16},    {"cdouble", 16},
      {"bool", 1},           {"qint8", 1},          {"quint8", 1},         {"qint32", 4},
      {"bfloat16", 2},       {"quint4x2", 1},       {"quint2x4", 1},       {"bits1x8", 1},
      {"bits2x4", 1},        {"bits4x2", 1},        {"bits8", 1},          {"bits16", 2},
      {"float8_e5m2", 1},    {"float8_e4m3fn", 1},  {"float8_e5m2fnuz", 1}, {"float8_e4m3fnuz", 1},
      {"float8_e8m0fnu", 1}, {"float4_e2m1fn_x2", 1}, {"uint16", 2},       {"uint32", 4},
      {"uint64", 8},         {"uint1", 1},          {"uint2", 1},          {"uint3", 1},
      {"uint4", 1},          {"uint5", 1},          {"uint6", 1},          {"uint7", 1},
      {"int1", 1},           {"int2", 1},           {"int3", 1},           {"int4", 1},
      {"int5", 1},           {"int6", 1},           {"int7", 1}};
  if (global.rfind("torch ", 0) != 0) {
    return 0;
  }
  auto it = sizes.find(global.substr(6));
  return it == sizes.end() ? 0 : it->second;
}

// The callables that rebuild a tensor from (storage, offset, size, stride,
// ...): its elements are the storage's, except for _rebuild_tensor_v3,
// whose seventh argument names the dtype over an untyped storage.
bool rebuilds_tensor(const std::string& global) {
  return global == "torch._utils _rebuild_tensor_v2" || global == "torch._utils _rebuild_tensor" ||
         global == "torch._utils _rebuild_qtensor" || global == "torch._utils _rebuild_tensor_v3";
}

enum class Kind : uint8_t { none, boolean, integer, big_integer, floating, text, bytes, tuple, list, dict, set,
                            global, storage, tensor, other };

// One value of the pickle machine. Containers other than tuples keep no
// items: only tuples are ever read back (storage ids, tensor arguments).
struct Value {
  Kind kind = Kind::other;
  int64_t number = 0;       // integer; storage: element count
  uint32_t item_size = 0;   // storage
  uint32_t text = 0;        // index in texts: text, global "module name", storage key
  uint32_t first = 0;       // tuple: items [first, first + count)
  uint32_t count = 0;
};

constexpr uint64_t k_over = UINT64_MAX;  // a saturated size

uint64_t mul_sat(uint64_t a, uint64_t b) {
  unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return r > k_over ? k_over : static_cast<uint64_t>(r);
}
uint64_t add_sat(uint64_t a, uint64_t b) { return a > k_over - b ? k_over : a + b; }

// LibTorch's unpickler, as far as memory goes: the same opcodes, no code,
// every value kept in flat arrays (no recursion, whatever the nesting).
class PickleScan {
 public:
  PickleScan(const std::string& data, const std::function<int64_t(const std::string&)>& record_size,
             uint64_t archive_bytes, const std::string& what, const fs::path& path)
      : m_data(data),
        m_record_size(record_size),
        m_archive_bytes(archive_bytes),
        m_cap(zip_expansion_cap(archive_bytes)),
        m_what(what),
        m_path(path) {}

  void run() {
    while (true) {
      uint8_t op = byte();
      if (op == '.') {
        return;  // STOP
      }
      step(op);
    }
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    throw Error(ErrorKind::cannot_test,
                fmt::format("{} '{}' is not in torch.save's format ({} at byte {} of its data.pkl); save it again "
                            "with torch.save",
                            m_what, m_path.string(), why, m_pos));
  }
  [[noreturn]] void refuse(const std::string& problem, const std::string& remedy) const {
    throw Error(ErrorKind::cannot_test, fmt::format("{} '{}': {}; {}", m_what, m_path.string(), problem, remedy));
  }

  uint8_t byte() {
    if (m_pos >= m_data.size()) {
      bad("the pickle ends without STOP");
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
      bad(fmt::format("a length of {} bytes past the pickle's end", n));
    }
    std::string s = m_data.substr(m_pos, n);
    m_pos += n;
    return s;
  }
  void skip(uint64_t n) {
    if (n > m_data.size() - m_pos) {
      bad(fmt::format("a length of {} bytes past the pickle's end", n));
    }
    m_pos += n;
  }
  std::string line() {
    size_t end = m_data.find('\n', m_pos);
    if (end == std::string::npos) {
      bad("a GLOBAL without its newline");
    }
    std::string s = m_data.substr(m_pos, end - m_pos);
    m_pos = end + 1;
    return s;
  }

  uint32_t add(Value v) {
    m_values.push_back(v);
    return static_cast<uint32_t>(m_values.size() - 1);
  }
  uint32_t add_text(Kind kind, std::string s) {
    m_texts.push_back(std::move(s));
    Value v;
    v.kind = kind;
    v.text = static_cast<uint32_t>(m_texts.size() - 1);
    return add(v);
  }
  void push_new(Kind kind, int64_t number = 0) {
    Value v;
    v.kind = kind;
    v.number = number;
    m_stack.push_back(add(v));
  }
  uint32_t pop() {
    if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back())) {
      bad("a pop from an empty stack");
    }
    uint32_t v = m_stack.back();
    m_stack.pop_back();
    return v;
  }
  uint32_t top() {
    if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back())) {
      bad("an empty stack");
    }
    return m_stack.back();
  }
  std::vector<uint32_t> pop_to_mark() {
    if (m_marks.empty()) {
      bad("no MARK");
    }
    std::vector<uint32_t> items(m_stack.begin() + static_cast<std::ptrdiff_t>(m_marks.back()), m_stack.end());
    m_stack.resize(m_marks.back());
    m_marks.pop_back();
    return items;
  }
  void push_tuple(const std::vector<uint32_t>& items) {
    Value v;
    v.kind = Kind::tuple;
    v.first = static_cast<uint32_t>(m_items.size());
    v.count = static_cast<uint32_t>(items.size());
    m_items.insert(m_items.end(), items.begin(), items.end());
    m_stack.push_back(add(v));
  }
  const Value& at(uint32_t i) const { return m_values[i]; }
  const Value& item(const Value& tuple, uint32_t i) const { return m_values[m_items[tuple.first + i]]; }
  const std::string& text(const Value& v) const { return m_texts[v.text]; }

  // Memo ids must count up from 0: LibTorch's unpickler appends whatever id
  // is written, so other numbering means other values to it than to Python.
  void memo_put(uint64_t id) {
    if (id != m_memo.size()) {
      bad(fmt::format("memo id {} where {} comes next", id, m_memo.size()));
    }
    m_memo.push_back(top());
  }
  void memo_get(uint64_t id) {
    if (id >= m_memo.size()) {
      bad(fmt::format("memo id {} never stored", id));
    }
    m_stack.push_back(m_memo[id]);
  }

  void step(uint8_t op);
  void persistent_id();
  void reduce();
  void rebuild_tensor(const Value& args, bool with_dtype);

  const std::string& m_data;
  const std::function<int64_t(const std::string&)>& m_record_size;
  uint64_t m_archive_bytes;
  uint64_t m_cap;
  const std::string& m_what;
  const fs::path& m_path;
  size_t m_pos = 0;
  std::vector<Value> m_values;
  std::vector<std::string> m_texts;
  std::vector<uint32_t> m_items;
  std::vector<uint32_t> m_stack;
  std::vector<size_t> m_marks;
  std::vector<uint32_t> m_memo;
  uint64_t m_tensor_bytes = 0;
};

void PickleScan::step(uint8_t op) {
  switch (op) {
    case 0x80: byte(); break;                    // PROTO
    case 0x95: little(8); break;                 // FRAME
    case '(': m_marks.push_back(m_stack.size()); break;
    case '0': pop(); break;                      // POP
    case '1': pop_to_mark(); break;              // POP_MARK
    case '2': m_stack.push_back(top()); break;   // DUP
    case 'N': push_new(Kind::none); break;
    case 0x88: push_new(Kind::boolean, 1); break;
    case 0x89: push_new(Kind::boolean, 0); break;
    case 'J': push_new(Kind::integer, static_cast<int32_t>(little(4))); break;
    case 'K': push_new(Kind::integer, static_cast<int64_t>(little(1))); break;
    case 'M': push_new(Kind::integer, static_cast<int64_t>(little(2))); break;
    case 0x8a:                                   // LONG1
    case 0x8b: {                                 // LONG4
      uint64_t n = op == 0x8a ? little(1) : little(4);
      std::string digits = take(n);
      if (n > 8) {
        push_new(Kind::big_integer);
        break;
      }
      uint64_t v = 0;
      for (size_t i = 0; i < n; ++i) {
        v |= static_cast<uint64_t>(static_cast<uint8_t>(digits[i])) << (8 * i);
      }
      if (n > 0 && n < 8 && (static_cast<uint8_t>(digits[n - 1]) & 0x80) != 0) {
        v |= ~uint64_t{0} << (8 * n);  // sign extension
      }
      push_new(Kind::integer, static_cast<int64_t>(v));
      break;
    }
    case 'G': little(8); push_new(Kind::floating); break;
    case 'X': m_stack.push_back(add_text(Kind::text, take(little(4)))); break;        // BINUNICODE
    case 0x8c: m_stack.push_back(add_text(Kind::text, take(little(1)))); break;       // SHORT_BINUNICODE
    case 0x8d: m_stack.push_back(add_text(Kind::text, take(little(8)))); break;       // BINUNICODE8
    case 'T': m_stack.push_back(add_text(Kind::text, take(little(4)))); break;        // BINSTRING
    case 'U': m_stack.push_back(add_text(Kind::text, take(little(1)))); break;        // SHORT_BINSTRING
    case 'B': skip(little(4)); push_new(Kind::bytes); break;                          // BINBYTES
    case 'C': skip(little(1)); push_new(Kind::bytes); break;                          // SHORT_BINBYTES
    case 0x8e: skip(little(8)); push_new(Kind::bytes); break;                         // BINBYTES8
    case ')': push_tuple({}); break;
    case 't': push_tuple(pop_to_mark()); break;
    case 0x85: { uint32_t a = pop(); push_tuple({a}); break; }
    case 0x86: { uint32_t b = pop(); uint32_t a = pop(); push_tuple({a, b}); break; }
    case 0x87: { uint32_t c = pop(); uint32_t b = pop(); uint32_t a = pop(); push_tuple({a, b, c}); break; }
    case ']': push_new(Kind::list); break;
    case 'l': pop_to_mark(); push_new(Kind::list); break;
    case 'a': pop(); top(); break;               // APPEND
    case 'e': pop_to_mark(); top(); break;       // APPENDS
    case '}': push_new(Kind::dict); break;
    case 'd': pop_to_mark(); push_new(Kind::dict); break;
    case 's': pop(); pop(); top(); break;        // SETITEM
    case 'u': {                                  // SETITEMS
      if (pop_to_mark().size() % 2 != 0) {
        bad("SETITEMS with an odd number of items");
      }
      top();
      break;
    }
    case 0x8f: push_new(Kind::set); break;       // EMPTY_SET
    case 0x90: pop_to_mark(); top(); break;      // ADDITEMS
    case 0x91: pop_to_mark(); push_new(Kind::set); break;  // FROZENSET
    case 'q': memo_put(little(1)); break;        // BINPUT
    case 'r': memo_put(little(4)); break;        // LONG_BINPUT
    case 0x94: memo_put(m_memo.size()); break;   // MEMOIZE
    case 'h': memo_get(little(1)); break;        // BINGET
    case 'j': memo_get(little(4)); break;        // LONG_BINGET
    case 'c': {                                  // GLOBAL
      std::string module = line();
      std::string name = line();
      m_stack.push_back(add_text(Kind::global, module + " " + name));
      break;
    }
    case 0x93: {                                 // STACK_GLOBAL
      const Value& name = at(pop());
      const Value& module = at(pop());
      if (name.kind != Kind::text || module.kind != Kind::text) {
        bad("STACK_GLOBAL of other than two strings");
      }
      std::string g = text(module) + " " + text(name);
      m_stack.push_back(add_text(Kind::global, g));
      break;
    }
    case 'Q': persistent_id(); break;            // BINPERSID
    case 'R': reduce(); break;
    case 'b': pop(); top(); break;               // BUILD
    case 0x81: pop(); pop(); push_new(Kind::other); break;         // NEWOBJ
    case 0x92: pop(); pop(); pop(); push_new(Kind::other); break;  // NEWOBJ_EX
    default: bad(fmt::format("opcode 0x{:02x}, which LibTorch does not read", op));
  }
}

// ('storage', torch.<Type>Storage, key, location, element count): the
// record data/<key> must hold exactly count x element size bytes, since
// LibTorch's storage gets the count whatever the record holds.
void PickleScan::persistent_id() {
  const Value& pid = at(pop());
  if (pid.kind != Kind::tuple || pid.count != 5 || item(pid, 0).kind != Kind::text ||
      text(item(pid, 0)) != "storage" || item(pid, 1).kind != Kind::global || item(pid, 2).kind != Kind::text ||
      item(pid, 3).kind != Kind::text || item(pid, 4).kind != Kind::integer) {
    bad("a persistent id other than ('storage', type, key, location, count)");
  }
  const std::string& type = text(item(pid, 1));
  uint64_t item_size = storage_item_size(type);
  if (item_size == 0) {
    bad(fmt::format("a storage of unknown type '{}'", printable_name(type)));
  }
  const std::string& raw_key = text(item(pid, 2));
  const std::string key = printable_name(raw_key);
  int64_t count = item(pid, 4).number;
  if (count < 0) {
    bad(fmt::format("storage '{}' of {} elements", key, count));
  }
  if (count > 0) {
    int64_t record = m_record_size(raw_key);
    if (record < 0) {
      refuse(fmt::format("storage '{}' has no record data/{}", key, key), "save it again with torch.save");
    }
    uint64_t bytes = mul_sat(static_cast<uint64_t>(count), item_size);
    if (bytes != static_cast<uint64_t>(record)) {
      refuse(fmt::format("storage '{}' claims {} elements of {} bytes, but its record holds {} bytes", key, count,
                         item_size, record),
             "save it again with torch.save");
    }
  }
  Value v;
  v.kind = Kind::storage;
  v.number = count;
  v.item_size = static_cast<uint32_t>(item_size);
  v.text = item(pid, 2).text;
  m_stack.push_back(add(v));
}

void PickleScan::reduce() {
  const Value args = at(pop());
  const Value callable = at(pop());
  if (callable.kind == Kind::global && rebuilds_tensor(text(callable))) {
    rebuild_tensor(args, text(callable) == "torch._utils _rebuild_tensor_v3");
  } else if (callable.kind == Kind::global && text(callable) == "torch._tensor _rebuild_from_type_v2" &&
             args.kind == Kind::tuple && args.count >= 3 && item(args, 0).kind == Kind::global &&
             rebuilds_tensor(text(item(args, 0)))) {
    // (func, type, args, state): func(*args) rebuilds the tensor.
    if (item(args, 2).kind != Kind::tuple) {
      bad("_rebuild_from_type_v2 without an argument tuple");
    }
    rebuild_tensor(item(args, 2), text(item(args, 0)) == "torch._utils _rebuild_tensor_v3");
  } else {
    push_new(Kind::other);
    return;
  }
  push_new(Kind::tensor);
}

// (storage, offset, size, stride, ...): the view must stay inside its storage,
// and its elements (a contiguous copy) within the cap.
void PickleScan::rebuild_tensor(const Value& args, bool with_dtype) {
  if (args.kind != Kind::tuple || args.count < (with_dtype ? 7u : 4u) || item(args, 0).kind != Kind::storage ||
      item(args, 1).kind != Kind::integer || item(args, 2).kind != Kind::tuple ||
      item(args, 3).kind != Kind::tuple || item(args, 2).count != item(args, 3).count ||
      (with_dtype && item(args, 6).kind != Kind::global)) {
    bad("a tensor rebuilt from other than (storage, offset, size, stride)");
  }
  const Value& storage = item(args, 0);
  uint64_t item_size = storage.item_size;
  if (with_dtype) {
    item_size = dtype_item_size(text(item(args, 6)));
    if (item_size == 0) {
      bad(fmt::format("a tensor of unknown dtype '{}'", printable_name(text(item(args, 6)))));
    }
  }
  const Value& size = item(args, 2);
  const Value& stride = item(args, 3);
  int64_t offset = item(args, 1).number;
  uint64_t numel = 1;
  uint64_t last = offset < 0 ? k_over : static_cast<uint64_t>(offset);  // the furthest element it reads
  std::vector<int64_t> dims;
  for (uint32_t i = 0; i < size.count; ++i) {
    const Value& d = item(size, i);
    const Value& s = item(stride, i);
    if (d.kind != Kind::integer || s.kind != Kind::integer || d.number < 0 || s.number < 0) {
      bad("a tensor size or stride that is not a non-negative integer");
    }
    dims.push_back(d.number);
    numel = mul_sat(numel, static_cast<uint64_t>(d.number));
    if (d.number > 0) {
      last = add_sat(last, mul_sat(static_cast<uint64_t>(d.number - 1), static_cast<uint64_t>(s.number)));
    }
  }
  const std::string key = printable_name(m_texts[storage.text]);
  const uint64_t storage_bytes = mul_sat(static_cast<uint64_t>(storage.number), storage.item_size);
  if (numel > 0 && mul_sat(add_sat(last, 1), item_size) > storage_bytes) {
    refuse(fmt::format("a tensor of shape [{}] reaches past the {} bytes of its storage '{}'", fmt::join(dims, ", "),
                       storage_bytes, key),
           "save it again with torch.save");
  }
  uint64_t bytes = mul_sat(numel, item_size);
  if (bytes > m_cap) {
    refuse(fmt::format("a tensor of shape [{}] takes {} bytes, more than a {}-byte file can hold (at most {})",
                       fmt::join(dims, ", "), bytes == k_over ? std::string("2^64 or more") : std::to_string(bytes),
                       m_archive_bytes, m_cap),
           "save real tensors (.contiguous().clone()), not expanded views");
  }
  m_tensor_bytes = add_sat(m_tensor_bytes, bytes);
  if (m_tensor_bytes > m_cap) {
    refuse(fmt::format("its tensors take more than {} bytes in all, more than a {}-byte file can hold", m_cap,
                       m_archive_bytes),
           "save real tensors (.contiguous().clone()), not expanded views");
  }
}

}  // namespace

void check_torch_pickle(const std::string& pickle, const std::function<int64_t(const std::string&)>& record_size,
                        uint64_t archive_bytes, const std::string& what, const fs::path& path) {
  PickleScan(pickle, record_size, archive_bytes, what, path).run();
}

void check_torch_save(const fs::path& path, const std::string& what) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (z == nullptr) {
    if (err == ZIP_ER_NOZIP) {
      return;  // no end of central directory: LibTorch's reader finds none either and says so
    }
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    std::string why = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    bool unreadable = err == ZIP_ER_NOENT || err == ZIP_ER_OPEN || err == ZIP_ER_READ;
    throw Error(ErrorKind::cannot_test,
                unreadable ? fmt::format("{} '{}' cannot be read ({})", what, path.string(), why)
                           : fmt::format("{} '{}' is a damaged zip archive ({}); save it again with torch.save", what,
                                         path.string(), why));
  }
  const std::string remedy = "save it again with torch.save";
  ZipReader reader(z, path, what, remedy);
  reader.check_declared_sizes();
  // LibTorch finds records by name: one name twice could be read either way.
  std::map<std::string, uint64_t> sizes;
  for (uint64_t i = 0, n = reader.count(); i < n; ++i) {
    std::string name = reader.name(i);
    if (!sizes.emplace(name, reader.declared_size(i)).second) {
      reader.fail(name, "appears twice");
    }
  }
  // LibTorch's reader: the first entry's folder is the archive's name.
  std::string first = reader.count() > 0 ? reader.name(0) : std::string();
  size_t slash = first.find('/');
  if (slash == std::string::npos) {
    return;  // LibTorch refuses it ("not in a subdirectory") before reading anything
  }
  const std::string prefix = first.substr(0, slash + 1);
  if (sizes.count(prefix + "data.pkl") == 0) {
    return;  // nothing LibTorch would unpickle: it says so
  }
  std::string pickle = reader.read(prefix + "data.pkl");
  auto record_size = [&](const std::string& key) -> int64_t {
    auto it = sizes.find(prefix + "data/" + key);
    return it == sizes.end() ? -1 : static_cast<int64_t>(it->second);
  };
  std::error_code ec;
  uint64_t archive_bytes = fs::file_size(path, ec);
  check_torch_pickle(pickle, record_size, ec ? 0 : archive_bytes, what, path);
}

}  // namespace aoti_bisect
