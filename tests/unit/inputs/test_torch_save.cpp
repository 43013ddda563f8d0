// torch.save files checked before any child loads them: what LibTorch's
// unpickler would trust (record sizes, storage counts, view shapes) is held
// to the file's real size.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "archive/zip.hpp"
#include "common/error.hpp"
#include "hand_zip.hpp"
#include "inputs/tensor_file.hpp"
#include "inputs/torch_save.hpp"

using namespace aoti_bisect;
using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

std::string binint(int64_t v) {
  std::string s = "J";
  hand_zip::put32(s, static_cast<uint32_t>(v));
  return s;
}

std::string unicode(const std::string& s) {
  std::string out = "X";
  hand_zip::put32(out, s.size());
  return out + s;
}

std::string int_tuple(const std::vector<int64_t>& v) {
  std::string out = "(";
  for (int64_t x : v) {
    out += binint(x);
  }
  return out + "t";
}

// data.pkl as torch.save writes it for one float tensor (protocol 2).
std::string tensor_pickle(int64_t storage_count, const std::vector<int64_t>& size, const std::vector<int64_t>& stride,
                          int64_t offset = 0) {
  std::string p = "\x80\x02";
  p += "ctorch._utils\n_rebuild_tensor_v2\nq\x00"s;
  p += "((" + unicode("storage") + "ctorch\nFloatStorage\n" + unicode("0") + unicode("cpu") + binint(storage_count) +
       "tQ";
  p += binint(offset) + int_tuple(size) + int_tuple(stride);
  p += "\x89"
       "ccollections\nOrderedDict\n)Rtq\x01R\x85.";
  return p;
}

// data.pkl for the dtypes torch.save writes with _rebuild_tensor_v3 (an
// untyped storage counted in bytes, the dtype as the seventh argument).
std::string tensor_v3_pickle(int64_t storage_bytes, const std::vector<int64_t>& size,
                             const std::vector<int64_t>& stride, const std::string& dtype) {
  std::string p = "\x80\x02";
  p += "ctorch._utils\n_rebuild_tensor_v3\nq\x00"s;
  p += "((" + unicode("storage") + "ctorch.storage\nUntypedStorage\n" + unicode("0") + unicode("cpu") +
       binint(storage_bytes) + "tQ";
  p += binint(0) + int_tuple(size) + int_tuple(stride);
  p += "\x89"
       "ccollections\nOrderedDict\n)Rctorch\n" +
       dtype + "\ntq\x01R\x85.";
  return p;
}

// A torch.save-shaped archive: data.pkl and one record of `record_bytes`.
void write_saved(const std::string& file, const std::string& pickle, size_t record_bytes,
                 std::optional<uint64_t> record_declared = std::nullopt) {
  hand_zip::write(file,
                  {{"archive/data.pkl", pickle},
                   {"archive/byteorder", "little"},
                   {"archive/data/0", std::string(record_bytes, '\0'), record_declared, record_declared.has_value()},
                   {"archive/version", "3\n"}});
}

std::string cannot_test_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::cannot_test);
    return e.what();
  }
  return "(no error)";
}

std::string check(const std::string& file) {
  return cannot_test_message([&] { check_tensor_file(file, "inputs file"); });
}

}  // namespace

TEST_SUITE_BEGIN("inputs/torch_save");

TEST_CASE("check_tensor_file: what torch.save writes passes") {
  write_saved("ok.pt", tensor_pickle(128, {8, 16}, {16, 1}), 512);
  CHECK(check("ok.pt") == "(no error)");
  write_saved("empty.pt", tensor_pickle(0, {0, 16}, {16, 1}), 0);
  CHECK(check("empty.pt") == "(no error)");
  // A small view of a larger storage, and a modest expanded view.
  write_saved("view.pt", tensor_pickle(128, {4, 4}, {16, 1}, 64), 512);
  CHECK(check("view.pt") == "(no error)");
  write_saved("expand.pt", tensor_pickle(1, {8, 16}, {0, 0}), 4);
  CHECK(check("expand.pt") == "(no error)");
}

TEST_CASE("check_tensor_file: a file that is none of the formats it reads is refused in one line") {
  std::ofstream("garbage.pt") << "not a torch file";
  CHECK(check("garbage.pt") ==
        "inputs file 'garbage.pt' is not a file of tensors aoti-bisect reads (torch.save's "
        "zip or legacy format, or safetensors); save it with torch.save or "
        "safetensors.torch.save_file");
}

TEST_CASE("check_tensor_file: a record that declares 4 GB is refused before any child allocates it") {
  write_saved("big.pt", tensor_pickle(128, {8, 16}, {16, 1}), 512, uint64_t{0xFFFFFFFE});
  uint64_t size = fs::file_size("big.pt");
  CHECK(check("big.pt") ==
        fmt::format("inputs file 'big.pt': entry 'archive/data/0' declares 4294967294 bytes, more than a {}-byte "
                    "archive can hold (at most {}); save it again with torch.save",
                    size, zip_expansion_cap(size)));
}

TEST_CASE("check_tensor_file: a storage that claims more elements than its record holds") {
  // LibTorch would give the storage 4 MiB over a 512-byte buffer: a crash in
  // the child that reads as the model's own.
  write_saved("lie.pt", tensor_pickle(1 << 20, {1 << 16, 16}, {16, 1}), 512);
  CHECK(check("lie.pt") ==
        "inputs file 'lie.pt': storage '0' claims 1048576 elements of 4 bytes, but its record "
        "holds 512 bytes; save it again with torch.save");
  write_saved("norecord.pt", tensor_pickle(128, {8, 16}, {16, 1}), 512);
  hand_zip::write("norecord.pt", {{"archive/data.pkl", tensor_pickle(128, {8, 16}, {16, 1})}});
  CHECK(check("norecord.pt") ==
        "inputs file 'norecord.pt': storage '0' has no record data/0; save it again with "
        "torch.save");
  std::string pickle = tensor_pickle(128, {8, 16}, {16, 1});
  pickle.replace(pickle.find(unicode("0")), 6, unicode("0\n"));
  hand_zip::write("newline.pt", {{"archive/data.pkl", pickle}});
  CHECK(check("newline.pt") ==
        "inputs file 'newline.pt': storage '0\\n' has no record data/0\\n; save it again "
        "with torch.save");
}

TEST_CASE("check_tensor_file: views past their storage or past the cap") {
  write_saved("past.pt", tensor_pickle(128, {8, 16}, {16, 1}, 1), 512);
  CHECK(check("past.pt") ==
        "inputs file 'past.pt': a tensor of shape [8, 16] reaches past the 512 bytes of its "
        "storage '0'; save it again with torch.save");
  // One element expanded to 4 GiB: a 1.5 kB file made the child hash 4 GiB.
  write_saved("expand.pt", tensor_pickle(1, {8, 134217728}, {0, 0}), 4);
  uint64_t size = fs::file_size("expand.pt");
  CHECK(check("expand.pt") ==
        fmt::format("inputs file 'expand.pt': a tensor of shape [8, 134217728] takes 4294967296 bytes, more than a "
                    "{}-byte file can hold (at most {}); save real tensors (.contiguous().clone()), not expanded views",
                    size, zip_expansion_cap(size)));
  write_saved("overflow.pt", tensor_pickle(1, {1 << 30, 1 << 30, 1 << 30}, {0, 0, 0}), 4);
  CHECK(check("overflow.pt").find("takes 2^64 or more bytes") != std::string::npos);
}

TEST_CASE("check_tensor_file: _rebuild_tensor_v3 (float8, uint16), which LibTorch does not load, is refused") {
  write_saved("v3.pt", tensor_v3_pickle(8, {4}, {1}, "uint16"), 8);
  CHECK(check("v3.pt") ==
        "inputs file 'v3.pt' holds a tensor torch.save wrote with _rebuild_tensor_v3 (a dtype "
        "such as float8 or uint16), which LibTorch's loader does not read; save it with "
        "safetensors.torch.save_file, which aoti-bisect reads for these dtypes");
}

TEST_CASE("check_torch_pickle: _rebuild_tensor_v3: elements of the named dtype") {
  auto check_v3 = [](const std::string& pickle) {
    return cannot_test_message([&] {
      check_torch_pickle(
          pickle, [](const std::string&) -> int64_t { return 8; }, 1000, "inputs file", "v3.pt");
    });
  };
  CHECK(check_v3(tensor_v3_pickle(8, {4}, {1}, "uint16")) == "(no error)");
  CHECK(check_v3(tensor_v3_pickle(8, {5}, {1}, "uint16")) ==
        "inputs file 'v3.pt': a tensor of shape [5] reaches past the 8 bytes of its storage '0'; save it again with "
        "torch.save");
  CHECK(check_v3(tensor_v3_pickle(8, {4}, {1}, "frobnicate")).find("a tensor of unknown dtype 'torch frobnicate'") !=
        std::string::npos);
}

TEST_CASE("check_torch_pickle: malformed pickles are not torch.save's format") {
  auto record = [](const std::string&) -> int64_t { return 512; };
  auto check_pickle = [&](const std::string& pickle) {
    return cannot_test_message([&] { check_torch_pickle(pickle, record, 1000, "inputs file", "x.pt"); });
  };
  std::string good = tensor_pickle(128, {8, 16}, {16, 1});
  CHECK(check_pickle(good) == "(no error)");
  CHECK(check_pickle(good.substr(0, good.size() - 1)) ==
        fmt::format("inputs file 'x.pt' is not in torch.save's format (the pickle ends without STOP at byte {} of "
                    "its data.pkl); save it again with torch.save",
                    good.size() - 1));
  CHECK(check_pickle("\x80\x02X\xff\xff\xff\x7f.").find("a length of 2147483647 bytes past the pickle's end") !=
        std::string::npos);
  CHECK(check_pickle("\x80\x02N\x9f.").find("opcode 0x9f at byte 4") != std::string::npos);
  CHECK(check_pickle("\x80\x02h\x00."s).find("memo id 0 never stored") != std::string::npos);
  CHECK(check_pickle("\x80\x02"
                     "0.")
            .find("a pop from an empty stack") != std::string::npos);
  CHECK(check_pickle("\x80\x02t.").find("no MARK") != std::string::npos);
  CHECK(check_pickle("\x80\x02NQ.").find("a persistent id other than") != std::string::npos);
  // Deep nesting stays flat: no recursion to overflow.
  CHECK(check_pickle("\x80\x02" + std::string(200000, '(') + std::string(200000, 't') + ".") == "(no error)");
}
