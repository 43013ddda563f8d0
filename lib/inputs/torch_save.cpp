// A torch-free check of a torch.save file before any child loads it.
#include "inputs/torch_save.hpp"

#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "archive/zip.hpp"
#include "common/error.hpp"
#include "inputs/pickle_graph.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

// Element sizes of the storage types a pickle names ("torch FloatStorage"),
// by LibTorch's scalar type names.
uint64_t storage_item_size(const std::string& type) {
  static const std::map<std::string, uint64_t> sizes = {{"Byte", 1},
                                                        {"Char", 1},
                                                        {"Short", 2},
                                                        {"Int", 4},
                                                        {"Long", 8},
                                                        {"Half", 2},
                                                        {"Float", 4},
                                                        {"Double", 8},
                                                        {"ComplexHalf", 4},
                                                        {"ComplexFloat", 8},
                                                        {"ComplexDouble", 16},
                                                        {"Bool", 1},
                                                        {"QInt8", 1},
                                                        {"QUInt8", 1},
                                                        {"QInt32", 4},
                                                        {"BFloat16", 2},
                                                        {"QUInt4x2", 1},
                                                        {"QUInt2x4", 1},
                                                        {"Bits1x8", 1},
                                                        {"Bits2x4", 1},
                                                        {"Bits4x2", 1},
                                                        {"Bits8", 1},
                                                        {"Bits16", 2},
                                                        {"Float8_e5m2", 1},
                                                        {"Float8_e4m3fn", 1},
                                                        {"Float8_e5m2fnuz", 1},
                                                        {"Float8_e4m3fnuz", 1},
                                                        {"Float8_e8m0fnu", 1},
                                                        {"Float4_e2m1fn_x2", 1},
                                                        {"UInt16", 2},
                                                        {"UInt32", 4},
                                                        {"UInt64", 8},
                                                        {"UInt1", 1},
                                                        {"UInt2", 1},
                                                        {"UInt3", 1},
                                                        {"UInt4", 1},
                                                        {"UInt5", 1},
                                                        {"UInt6", 1},
                                                        {"UInt7", 1},
                                                        {"Int1", 1},
                                                        {"Int2", 1},
                                                        {"Int3", 1},
                                                        {"Int4", 1},
                                                        {"Int5", 1},
                                                        {"Int6", 1},
                                                        {"Int7", 1},
                                                        {"Untyped", 1}};
  const std::string suffix = "Storage";
  if (type == "torch.storage UntypedStorage") {
    return 1;  // what _rebuild_tensor_v3 reads: a count of bytes
  }
  if (type.rfind("torch ", 0) != 0 || type.size() <= 6 + suffix.size() || !type.ends_with(suffix)) {
    return 0;
  }
  auto it = sizes.find(type.substr(6, type.size() - 6 - suffix.size()));
  return it == sizes.end() ? 0 : it->second;
}

namespace {

// Element sizes of the dtypes _rebuild_tensor_v3 names ("torch float8_e4m3fn").
uint64_t dtype_item_size(const std::string& global) {
  static const std::map<std::string, uint64_t> sizes = {{"uint8", 1},
                                                        {"int8", 1},
                                                        {"int16", 2},
                                                        {"short", 2},
                                                        {"int32", 4},
                                                        {"int", 4},
                                                        {"int64", 8},
                                                        {"long", 8},
                                                        {"float16", 2},
                                                        {"half", 2},
                                                        {"float32", 4},
                                                        {"float", 4},
                                                        {"float64", 8},
                                                        {"double", 8},
                                                        {"complex32", 4},
                                                        {"chalf", 4},
                                                        {"complex64", 8},
                                                        {"cfloat", 8},
                                                        {"complex128", 16},
                                                        {"cdouble", 16},
                                                        {"bool", 1},
                                                        {"qint8", 1},
                                                        {"quint8", 1},
                                                        {"qint32", 4},
                                                        {"bfloat16", 2},
                                                        {"quint4x2", 1},
                                                        {"quint2x4", 1},
                                                        {"bits1x8", 1},
                                                        {"bits2x4", 1},
                                                        {"bits4x2", 1},
                                                        {"bits8", 1},
                                                        {"bits16", 2},
                                                        {"float8_e5m2", 1},
                                                        {"float8_e4m3fn", 1},
                                                        {"float8_e5m2fnuz", 1},
                                                        {"float8_e4m3fnuz", 1},
                                                        {"float8_e8m0fnu", 1},
                                                        {"float4_e2m1fn_x2", 1},
                                                        {"uint16", 2},
                                                        {"uint32", 4},
                                                        {"uint64", 8},
                                                        {"uint1", 1},
                                                        {"uint2", 1},
                                                        {"uint3", 1},
                                                        {"uint4", 1},
                                                        {"uint5", 1},
                                                        {"uint6", 1},
                                                        {"uint7", 1},
                                                        {"int1", 1},
                                                        {"int2", 1},
                                                        {"int3", 1},
                                                        {"int4", 1},
                                                        {"int5", 1},
                                                        {"int6", 1},
                                                        {"int7", 1}};
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

constexpr uint64_t k_over = UINT64_MAX;  // a saturated size

uint64_t mul_sat(uint64_t a, uint64_t b) {
  unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return r > k_over ? k_over : static_cast<uint64_t>(r);
}
uint64_t add_sat(uint64_t a, uint64_t b) {
  return a > k_over - b ? k_over : a + b;
}

using pickle::Graph;
using pickle::Node;

struct Storage {
  int64_t count = 0;
  uint64_t item_size = 0;
  std::string key;
};

// What LibTorch's unpickler would allocate for the pickle's storages and
// tensors, checked against the records and the file's size. The pickle is
// decoded as data first (inputs/pickle_graph.hpp); its nodes are visited
// in a flat loop, whatever their nesting.
class TensorCheck {
 public:
  TensorCheck(const Graph& g, const std::function<int64_t(const std::string&)>& record_size, uint64_t archive_bytes,
              const std::string& what, const fs::path& path)
      : m_g(g),
        m_record_size(record_size),
        m_archive_bytes(archive_bytes),
        m_cap(zip_expansion_cap(archive_bytes)),
        m_what(what),
        m_path(path) {}

  void run() {
    for (uint32_t i = 0; i < m_g.nodes.size(); ++i) {
      const Node& n = m_g.nodes[i];
      if (n.kind == Node::Kind::persid) {
        storage(n);
      } else if (n.kind == Node::Kind::call) {
        call(n);
      }
    }
  }

 private:
  [[noreturn]] void bad(const std::string& why, const Node& at) const {
    throw Error(ErrorKind::cannot_test,
                fmt::format("{} '{}' is not in torch.save's format ({} at byte {} of its data.pkl); save it again "
                            "with torch.save",
                            m_what, m_path.string(), why, at.offset));
  }
  [[noreturn]] void refuse(const std::string& problem, const std::string& remedy) const {
    throw Error(ErrorKind::cannot_test, fmt::format("{} '{}': {}; {}", m_what, m_path.string(), problem, remedy));
  }
  const Node& node(uint32_t i) const { return m_g.nodes[i]; }
  bool is(const Node& n, Node::Kind k) const { return n.kind == k; }

  // ('storage', torch.<Type>Storage, key, location, element count): the
  // record data/<key> must hold exactly count x element size bytes, since
  // LibTorch's storage gets the count whatever the record holds.
  Storage storage(const Node& p) const {
    const Node& id = node(p.items[0]);
    if (!is(id, Node::Kind::tuple) || id.items.size() != 5 || !is(node(id.items[0]), Node::Kind::text) ||
        node(id.items[0]).text != "storage" || !is(node(id.items[1]), Node::Kind::global) ||
        !is(node(id.items[2]), Node::Kind::text) || !is(node(id.items[3]), Node::Kind::text) ||
        !is(node(id.items[4]), Node::Kind::integer)) {
      bad("a persistent id other than ('storage', type, key, location, count)", p);
    }
    const std::string& type = node(id.items[1]).text;
    Storage s;
    s.item_size = storage_item_size(type);
    if (s.item_size == 0) {
      bad(fmt::format("a storage of unknown type '{}'", printable_name(type)), p);
    }
    s.key = node(id.items[2]).text;
    const std::string key = printable_name(s.key);
    s.count = node(id.items[4]).number;
    if (s.count < 0) {
      bad(fmt::format("storage '{}' of {} elements", key, s.count), p);
    }
    if (s.count > 0) {
      int64_t record = m_record_size(s.key);
      if (record < 0) {
        refuse(fmt::format("storage '{}' has no record data/{}", key, key), "save it again with torch.save");
      }
      uint64_t bytes = mul_sat(static_cast<uint64_t>(s.count), s.item_size);
      if (bytes != static_cast<uint64_t>(record)) {
        refuse(fmt::format("storage '{}' claims {} elements of {} bytes, but its record holds {} bytes", key, s.count,
                           s.item_size, record),
               "save it again with torch.save");
      }
    }
    return s;
  }

  void call(const Node& c) {
    const std::string callable = pickle::global_name(m_g, c.items[0]);
    const Node& args = node(c.items[1]);
    if (rebuilds_tensor(callable)) {
      tensor(c, args, callable == "torch._utils _rebuild_tensor_v3");
    } else if (callable == "torch._tensor _rebuild_from_type_v2" && is(args, Node::Kind::tuple) &&
               args.items.size() >= 3 && rebuilds_tensor(pickle::global_name(m_g, args.items[0]))) {
      // (func, type, args, state): func(*args) rebuilds the tensor.
      if (!is(node(args.items[2]), Node::Kind::tuple)) {
        bad("_rebuild_from_type_v2 without an argument tuple", c);
      }
      tensor(c, node(args.items[2]), pickle::global_name(m_g, args.items[0]) == "torch._utils _rebuild_tensor_v3");
    }
  }

  // (storage, offset, size, stride, ...): the view must stay inside its storage,
  // and its elements (a contiguous copy) within the cap.
  void tensor(const Node& at, const Node& args, bool with_dtype) {
    const auto& a = args.items;
    if (!is(args, Node::Kind::tuple) || a.size() < (with_dtype ? 7u : 4u) || !is(node(a[0]), Node::Kind::persid) ||
        !is(node(a[1]), Node::Kind::integer) || !is(node(a[2]), Node::Kind::tuple) ||
        !is(node(a[3]), Node::Kind::tuple) || node(a[2]).items.size() != node(a[3]).items.size() ||
        (with_dtype && !is(node(a[6]), Node::Kind::global))) {
      bad("a tensor rebuilt from other than (storage, offset, size, stride)", at);
    }
    const Storage st = storage(node(a[0]));
    uint64_t item_size = st.item_size;
    if (with_dtype) {
      item_size = dtype_item_size(node(a[6]).text);
      if (item_size == 0) {
        bad(fmt::format("a tensor of unknown dtype '{}'", printable_name(node(a[6]).text)), at);
      }
    }
    const Node& size = node(a[2]);
    const Node& stride = node(a[3]);
    int64_t offset = node(a[1]).number;
    uint64_t numel = 1;
    uint64_t last = offset < 0 ? k_over : static_cast<uint64_t>(offset);  // the furthest element it reads
    std::vector<int64_t> dims;
    for (size_t i = 0; i < size.items.size(); ++i) {
      const Node& d = node(size.items[i]);
      const Node& s = node(stride.items[i]);
      if (!is(d, Node::Kind::integer) || !is(s, Node::Kind::integer) || d.number < 0 || s.number < 0) {
        bad("a tensor size or stride that is not a non-negative integer", at);
      }
      dims.push_back(d.number);
      numel = mul_sat(numel, static_cast<uint64_t>(d.number));
      if (d.number > 0) {
        last = add_sat(last, mul_sat(static_cast<uint64_t>(d.number - 1), static_cast<uint64_t>(s.number)));
      }
    }
    const std::string key = printable_name(st.key);
    const uint64_t storage_bytes = mul_sat(static_cast<uint64_t>(st.count), st.item_size);
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

  const Graph& m_g;
  const std::function<int64_t(const std::string&)>& m_record_size;
  uint64_t m_archive_bytes;
  uint64_t m_cap;
  const std::string& m_what;
  const fs::path& m_path;
  uint64_t m_tensor_bytes = 0;
};

}  // namespace

void check_torch_pickle(const std::string& data, const std::function<int64_t(const std::string&)>& record_size,
                        uint64_t archive_bytes, const std::string& what, const fs::path& path) {
  Graph g = pickle::decode(data, 0, [&](const std::string& why, size_t at) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("{} '{}' is not in torch.save's format ({} at byte {} of its data.pkl); save it again "
                            "with torch.save",
                            what, path.string(), why, at));
  });
  TensorCheck(g, record_size, archive_bytes, what, path).run();
}

}  // namespace aoti_bisect
