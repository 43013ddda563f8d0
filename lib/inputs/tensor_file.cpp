// A file of tensors as users save them (torch.save, its legacy format, safetensors), read torch-free.
#include "inputs/tensor_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "archive/zip.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "inputs/pickle_graph.hpp"
#include "inputs/torch_save.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

using pickle::Graph;
using pickle::Node;

constexpr std::string_view k_resave_torch = "save it again with torch.save";

[[noreturn]] void refuse_file(const std::string& who, const std::string& problem,
                              std::string_view remedy = k_resave_torch) {
  throw Error(ErrorKind::cannot_test, who + " " + problem + "; " + std::string(remedy));
}

// The magic number the legacy format's first pickle holds (LONG1 of 10 bytes).
constexpr unsigned char k_legacy_start[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                            0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

bool is_legacy_torch_save(std::string_view head) {
  return head.size() >= sizeof k_legacy_start && std::memcmp(head.data(), k_legacy_start, sizeof k_legacy_start) == 0;
}

// safetensors: an 8-byte little-endian header length, then the JSON header.
bool is_safetensors_head(std::string_view head, uint64_t file_size) {
  if (head.size() < 9 || head[8] != '{') {
    return false;
  }
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) {
    n |= static_cast<uint64_t>(static_cast<uint8_t>(head[i])) << (8 * i);
  }
  return n >= 2 && n <= file_size - 8;
}

Graph decode_or_refuse(std::string_view data, size_t start, const std::string& who, const std::string& part) {
  return pickle::decode(data, start, [&](const std::string& why, size_t at) {
    refuse_file(who, fmt::format("is not in torch.save's format ({} at byte {} of {})", why, at, part));
  });
}

std::string emit_normalized(Graph& g, const std::string& who, std::vector<std::string>& notes,
                            std::function<void(std::vector<uint32_t>&, Graph&)> storage_id = {}) {
  pickle::EmitOptions opt{who, std::move(storage_id)};
  return pickle::emit(g, opt, notes);
}

// The most the legacy format's pickles may take (they hold no tensor data).
constexpr uint64_t k_pickles_max = 64ull << 20;

ByteSource bytes_source(std::string_view bytes) {
  return {bytes.size(), [bytes](uint64_t off, uint64_t n) {
            return off >= bytes.size() ? std::string() : std::string(bytes.substr(off, n));
          }};
}

ByteSource file_source(const fs::path& path, uint64_t size, const std::string& who) {
  auto in = std::make_shared<std::ifstream>(path, std::ios::binary);
  if (!*in) {
    throw Error(ErrorKind::cannot_test, who + " cannot be read");
  }
  return {size, [in](uint64_t off, uint64_t n) {
            std::string out(n, '\0');
            in->clear();
            in->seekg(static_cast<std::streamoff>(off));
            in->read(out.data(), static_cast<std::streamsize>(n));
            out.resize(static_cast<size_t>(std::max<std::streamsize>(in->gcount(), 0)));
            return out;
          }};
}

// ---- the zip format ----

TensorFile read_zip(const fs::path& path, const std::string& what, const ZipOpener& open_zip) {
  const std::string who = what + " '" + path.string() + "'";
  std::unique_ptr<ZipEntries> zip = open_zip(path, what, std::string(k_resave_torch));
  ZipEntries& reader = *zip;
  reader.check_declared_sizes();
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
  const std::string prefix = slash == std::string::npos ? "" : first.substr(0, slash + 1);
  if (slash == std::string::npos || sizes.count(prefix + "data.pkl") == 0) {
    // A .pt2 given where the inputs go: an exported program or a package.
    // (torch's .pt2 archives: `archive_format`, an exported program's
    // `models/`, a package's `data/aotinductor/`).
    bool pt2 = false, package = false;
    for (const auto& [name, size] : sizes) {
      pt2 = pt2 || name.ends_with("/archive_format") || name.find("serialized_exported_program") != std::string::npos;
      package = package || name.find("/data/aotinductor/") != std::string::npos;
    }
    if (pt2 || package) {
      refuse_file(who,
                  package ? "is an AOTInductor package (.pt2), not inputs"
                          : "is an exported program (torch.export.save), not inputs",
                  "give the inputs saved with torch.save as --inputs; an exported program goes to "
                  "--exported-program, the package first");
    }
    refuse_file(who, "is a zip archive without torch.save's data.pkl (not a file written by torch.save)");
  }
  std::string data = reader.read(prefix + "data.pkl");
  TensorFile out;
  out.format = TensorFileFormat::torch_zip;
  Graph g = decode_or_refuse(data, 0, who, "its data.pkl");
  out.pickle = emit_normalized(g, who, out.notes);
  const std::string records = prefix + "data/";
  for (const auto& [name, size] : sizes) {
    if (name.size() > records.size() && name.compare(0, records.size(), records) == 0) {
      out.records[name.substr(records.size())] = TensorFile::Record{name, 0, size};
    }
  }
  return out;
}

// ---- the legacy format ----
// Five pickles (magic number, protocol version, system info, the value,
// the storage keys), then each storage in key order: its element count
// (8 bytes, little-endian) and its bytes.

}  // namespace

TensorFile read_legacy_torch_save(const ByteSource& src, const std::string& who) {
  // The pickles come first and are small; the storages' bytes are never read here.
  const std::string head = src.read(0, std::min<uint64_t>(src.size, k_pickles_max));
  std::string_view bytes = head;
  size_t pos = 0;
  std::string part;
  auto next = [&](const char* what_part) {
    part = what_part;
    Graph g = decode_or_refuse(bytes, pos, who, part);
    pos = g.end;
    return g;
  };
  next("its magic number");
  Graph version = next("its protocol version");
  const Node& v = version.nodes[version.root];
  if (v.kind != Node::Kind::integer || v.number != 1001) {
    refuse_file(who, "is in torch.save's legacy format with a protocol version other than 1001");
  }
  next("its system information");
  Graph value = next("its value");
  Graph keys = next("its storage keys");
  const Node& list = keys.nodes[keys.root];
  if (list.kind != Node::Kind::list) {
    refuse_file(who, "is in torch.save's legacy format without its list of storage keys");
  }
  // Each storage's type, from the ids the value names it by.
  std::map<std::string, uint64_t> item_size;
  std::string problem;
  auto storage_id = [&](std::vector<uint32_t>& id, Graph& g) {
    // ('storage', type, key, location, count, view): the view (a storage
    // of a storage, torch before 1.0) is refused; the rest is the zip form.
    if (id.size() == 6) {
      if (g.nodes[id[5]].kind != Node::Kind::none) {
        refuse_file(who, "holds a storage view (torch before 1.0)", "load it with torch.load and save it again");
      }
      id.pop_back();
    }
    if (id.size() == 5 && g.nodes[id[2]].kind == Node::Kind::text) {
      item_size[g.nodes[id[2]].text] = storage_item_size(pickle::global_name(g, id[1]));
    }
  };
  TensorFile out;
  out.format = TensorFileFormat::torch_legacy;
  out.pickle = emit_normalized(value, who, out.notes, storage_id);
  for (uint32_t k : list.items) {
    const Node& key = keys.nodes[k];
    if (key.kind != Node::Kind::text) {
      refuse_file(who, "is in torch.save's legacy format with a storage key that is not a string");
    }
    std::string at = src.size - pos >= 8 ? src.read(pos, 8) : "";
    if (at.size() < 8) {
      refuse_file(who, fmt::format("ends before storage '{}' (truncated)", printable_name(key.text)));
    }
    uint64_t count = 0;
    for (int i = 0; i < 8; ++i) {
      count |= static_cast<uint64_t>(static_cast<uint8_t>(at[i])) << (8 * i);
    }
    pos += 8;
    auto it = item_size.find(key.text);
    uint64_t size = it == item_size.end() ? 1 : it->second;
    if (size == 0 || count > (src.size - pos) / size) {
      refuse_file(who, fmt::format("ends inside storage '{}' (truncated)", printable_name(key.text)));
    }
    out.records[key.text] = TensorFile::Record{"", pos, count * size};
    pos += count * size;
  }
  return out;
}

TensorFile read_legacy_torch_save(std::string_view bytes, const std::string& who) {
  return read_legacy_torch_save(bytes_source(bytes), who);
}

// ---- safetensors ----

namespace {

// A safetensors file's JSON header, and where the tensors' bytes start after it.
struct SafetensorsHeader {
  nlohmann::ordered_json json;
  uint64_t data_start = 0;
};

// The 8-byte header length, checked against the file, and the header it counts.
SafetensorsHeader read_safetensors_header(const ByteSource& src, const std::string& who, const std::string& remedy) {
  if (src.size < 8) {
    refuse_file(who, "is too short for a safetensors file", remedy);
  }
  const std::string length = src.read(0, 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) {
    n |= static_cast<uint64_t>(static_cast<uint8_t>(length[i])) << (8 * i);
  }
  if (n > src.size - 8) {
    refuse_file(who, fmt::format("declares a safetensors header of {} bytes past its end", n), remedy);
  }
  // Only the header is read; the tensors' bytes stay in the file.
  auto header = nlohmann::ordered_json::parse(src.read(8, n), nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    refuse_file(who, "has a safetensors header that is not a JSON object", remedy);
  }
  return {std::move(header), 8 + n};
}

// safetensors dtypes and the storage types LibTorch names them by.
const std::map<std::string, std::pair<std::string, uint64_t>>& safetensors_storage_types() {
  static const std::map<std::string, std::pair<std::string, uint64_t>> types = {{"F64", {"Double", 8}},
                                                                                {"F32", {"Float", 4}},
                                                                                {"F16", {"Half", 2}},
                                                                                {"BF16", {"BFloat16", 2}},
                                                                                {"I64", {"Long", 8}},
                                                                                {"I32", {"Int", 4}},
                                                                                {"I16", {"Short", 2}},
                                                                                {"I8", {"Char", 1}},
                                                                                {"U8", {"Byte", 1}},
                                                                                {"BOOL", {"Bool", 1}},
                                                                                {"F8_E4M3", {"Float8_e4m3fn", 1}},
                                                                                {"F8_E5M2", {"Float8_e5m2", 1}},
                                                                                {"U16", {"UInt16", 2}},
                                                                                {"U32", {"UInt32", 4}},
                                                                                {"U64", {"UInt64", 8}},
                                                                                {"C64", {"ComplexFloat", 8}}};
  return types;
}

// The header's tensor names, without its __metadata__.
std::vector<std::string> safetensors_names(const nlohmann::ordered_json& header) {
  // safetensors writes its entries by dtype size, then name: an order of
  // its own, not the user's. Names in natural order ("x2" before "x10") are
  // the closest to a position the file has.
  std::vector<std::string> names;
  for (const auto& [name, entry] : header.items()) {
    if (name != "__metadata__") {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end(), natural_less);
  return names;
}

// One tensor of a safetensors file, as its header entry gives it.
struct SafetensorsTensor {
  std::string storage;  // the storage type's name: "Float" for torch.FloatStorage
  std::vector<uint64_t> shape;
  uint64_t numel = 1;
  uint64_t begin = 0;  // from the start of the tensors' bytes
  uint64_t size = 0;
};

// A header entry, checked: a dtype aoti-bisect reads, a shape of sizes, and
// data offsets inside the file that hold exactly the shape's bytes.
SafetensorsTensor checked_safetensors_tensor(const nlohmann::ordered_json& entry, const std::string& shown,
                                             uint64_t data_size, const std::string& who, const std::string& remedy) {
  if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() || !entry.contains("shape") ||
      !entry["shape"].is_array() || !entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
      entry["data_offsets"].size() != 2) {
    refuse_file(who, fmt::format("has a safetensors entry '{}' without dtype, shape and data_offsets", shown), remedy);
  }
  const auto& types = safetensors_storage_types();
  auto type = types.find(entry["dtype"].get<std::string>());
  if (type == types.end()) {
    refuse_file(who,
                fmt::format("holds '{}' of dtype {}, which aoti-bisect does not read", shown,
                            printable_name(entry["dtype"].get<std::string>())),
                "save it as another dtype");
  }
  SafetensorsTensor t;
  t.storage = type->second.first;
  for (const auto& d : entry["shape"]) {
    if (!d.is_number_unsigned()) {
      refuse_file(who, fmt::format("has a safetensors entry '{}' whose shape is not of sizes", shown), remedy);
    }
    t.shape.push_back(d.get<uint64_t>());
    t.numel = t.shape.back() != 0 && t.numel > UINT64_MAX / t.shape.back() ? UINT64_MAX : t.numel * t.shape.back();
  }
  const auto& off = entry["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned() || off[0].get<uint64_t>() > off[1].get<uint64_t>() ||
      off[1].get<uint64_t>() > data_size) {
    refuse_file(who, fmt::format("has a safetensors entry '{}' whose data lies outside the file", shown), remedy);
  }
  t.begin = off[0].get<uint64_t>();
  t.size = off[1].get<uint64_t>() - t.begin;
  uint64_t item = type->second.second;
  if (t.numel == UINT64_MAX || t.numel > t.size / item || t.numel * item != t.size) {
    refuse_file(who,
                fmt::format("has a safetensors entry '{}' whose shape takes other than its {} bytes", shown, t.size),
                remedy);
  }
  return t;
}

// The call that rebuilds the tensor from storage `key`, added to `g` but for the call node itself.
Node safetensors_rebuild_call(Graph& g, const SafetensorsTensor& t, const std::string& key) {
  // _rebuild_tensor_v2(('storage', torch.<T>Storage, key, 'cpu', numel), 0, shape, contiguous strides, False, {})
  uint32_t id = pickle::add_tuple(
      g, {pickle::add_text(g, "storage"), pickle::add_global(g, "torch", t.storage + "Storage"),
          pickle::add_text(g, key), pickle::add_text(g, "cpu"), pickle::add_integer(g, static_cast<int64_t>(t.numel))});
  Node persid;
  persid.kind = Node::Kind::persid;
  persid.items = {id};
  std::vector<uint32_t> sizes, strides(t.shape.size());
  uint64_t stride = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    strides[d] = pickle::add_integer(g, static_cast<int64_t>(stride));
    stride *= std::max<uint64_t>(t.shape[d], 1);
  }
  for (uint64_t s : t.shape) {
    sizes.push_back(pickle::add_integer(g, static_cast<int64_t>(s)));
  }
  Node no_grad;
  no_grad.kind = Node::Kind::boolean;
  Node hooks;
  hooks.kind = Node::Kind::dict;
  uint32_t args =
      pickle::add_tuple(g, {pickle::add_node(g, persid), pickle::add_integer(g, 0), pickle::add_tuple(g, sizes),
                            pickle::add_tuple(g, strides), pickle::add_node(g, no_grad), pickle::add_node(g, hooks)});
  Node call;
  call.kind = Node::Kind::call;
  call.items = {pickle::add_global(g, "torch._utils", "_rebuild_tensor_v2"), args};
  return call;
}

}  // namespace

TensorFile read_safetensors(const ByteSource& src, const std::string& who) {
  const std::string remedy = "save it again with safetensors.torch.save_file";
  SafetensorsHeader header = read_safetensors_header(src, who, remedy);
  const uint64_t data_start = header.data_start;
  const uint64_t data_size = src.size - data_start;
  TensorFile out;
  out.format = TensorFileFormat::safetensors;
  Graph g;
  Node dict;
  dict.kind = Node::Kind::dict;
  int index = 0;
  for (const auto& name : safetensors_names(header.json)) {
    const SafetensorsTensor t =
        checked_safetensors_tensor(header.json[name], printable_name(name), data_size, who, remedy);
    const std::string key = std::to_string(index++);
    out.records[key] = TensorFile::Record{"", data_start + t.begin, t.size};
    Node call = safetensors_rebuild_call(g, t, key);
    dict.items.push_back(pickle::add_text(g, name));
    dict.items.push_back(pickle::add_node(g, call));
  }
  g.root = pickle::add_node(g, dict);
  out.pickle = emit_normalized(g, who, out.notes);
  return out;
}

TensorFile read_safetensors(std::string_view bytes, const std::string& who) {
  return read_safetensors(bytes_source(bytes), who);
}

std::string_view tensor_file_format_name(TensorFileFormat format) {
  switch (format) {
    case TensorFileFormat::torch_zip: return "torch.save";
    case TensorFileFormat::torch_legacy: return "torch.save (legacy format)";
    case TensorFileFormat::safetensors: return "safetensors";
  }
  return "?";
}

TensorFile read_tensor_file(const fs::path& path, const std::string& what, const ZipOpener& open_zip) {
  const std::string who = what + " '" + path.string() + "'";
  require_file(path, what);
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  std::string head = read_file_head(path, 16);
  if (head.size() >= 2 && head.compare(0, 2, "PK") == 0) {
    return read_zip(path, what, open_zip);
  }
  if (is_legacy_torch_save(head)) {
    return read_legacy_torch_save(file_source(path, size, who), who);
  }
  if (!ec && is_safetensors_head(head, size)) {
    return read_safetensors(file_source(path, size, who), who);
  }
  throw Error(ErrorKind::cannot_test,
              who +
                  " is not a file of tensors aoti-bisect reads (torch.save's zip or legacy format, or "
                  "safetensors); save it with torch.save or safetensors.torch.save_file");
}

struct TensorRecords::Impl {
  fs::path path;
  const TensorFile& file;
  std::string what;
  std::unique_ptr<ZipEntries> zip;
  std::ifstream raw;
};

TensorRecords::TensorRecords(fs::path path, const TensorFile& file, std::string what, const ZipOpener& open_zip)
    : m_impl(std::make_unique<Impl>(Impl{std::move(path), file, std::move(what), nullptr, {}})) {
  if (file.format == TensorFileFormat::torch_zip) {
    m_impl->zip = open_zip(m_impl->path, m_impl->what, std::string(k_resave_torch));
  } else {
    m_impl->raw.open(m_impl->path, std::ios::binary);
  }
}

TensorRecords::~TensorRecords() = default;

uint64_t TensorRecords::size(const std::string& key) const {
  auto it = m_impl->file.records.find(key);
  if (it == m_impl->file.records.end()) {
    refuse_file(m_impl->what + " '" + m_impl->path.string() + "'",
                fmt::format("has no record for storage '{}'", printable_name(key)));
  }
  return it->second.size;
}

void TensorRecords::read(const std::string& key, char* dst) {
  uint64_t n = size(key);
  const TensorFile::Record& r = m_impl->file.records.at(key);
  if (!r.entry.empty()) {
    uint64_t got = 0;
    m_impl->zip->stream(m_impl->zip->index_of(r.entry), [&](const char* p, size_t k) {
      size_t take = static_cast<size_t>(std::min<uint64_t>(k, n - got));
      std::memcpy(dst + got, p, take);
      got += take;
    });
    return;
  }
  m_impl->raw.clear();
  m_impl->raw.seekg(static_cast<std::streamoff>(r.offset));
  m_impl->raw.read(dst, static_cast<std::streamsize>(n));
  if (static_cast<uint64_t>(m_impl->raw.gcount()) != n) {
    refuse_file(m_impl->what + " '" + m_impl->path.string() + "'",
                fmt::format("ends inside storage '{}' (truncated)", printable_name(key)));
  }
}

}  // namespace aoti_bisect
