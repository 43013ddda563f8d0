// Files of tensors as users save them (tests/data/tensor_files, written by
// tests/data/make_tensor_files.py with torch, safetensors and transformers):
// which are read, as what, and the one line for those that are not.

#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "archive/zip_libzip.hpp"
#include "common/error.hpp"
#include "inputs/pickle_graph.hpp"
#include "inputs/tensor_file.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

fs::path data(const std::string& name) {
  return fs::path(AOTI_BISECT_TEST_DATA) / "tensor_files" / name;
}

std::string refusal(const fs::path& path) {
  try {
    read_tensor_file(path, "inputs file", open_zip_libzip);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::cannot_test);
    return e.what();
  }
  return "(read)";
}

// The globals a normalized pickle names, in order ("torch._utils _rebuild_tensor_v2").
std::vector<std::string> globals_of(const std::string& pickle) {
  std::vector<std::string> out;
  pickle::Graph g = pickle::decode(pickle, 0, [](const std::string& why, size_t) { throw std::runtime_error(why); });
  for (const auto& n : g.nodes) {
    if (n.kind == pickle::Node::Kind::global) {
      out.push_back(n.text);
    }
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("inputs/tensor_file");

TEST_CASE("read_tensor_file: torch.save's zip format, as it was read before") {
  TensorFile f = read_tensor_file(data("tf_plain.pt"), "inputs file", open_zip_libzip);
  CHECK(f.format == TensorFileFormat::torch_zip);
  CHECK(f.notes.empty());
  REQUIRE(f.records.size() == 2);
  CHECK(f.records.at("0").size == 24);
  CHECK(f.records.at("1").size == 24);
  CHECK(f.records.at("0").entry == "tf_plain/data/0");
  CHECK(check_tensor_file(data("tf_plain.pt"), "inputs file").format == TensorFileFormat::torch_zip);
}

TEST_CASE("read_tensor_file: the legacy format (_use_new_zipfile_serialization=False) is read") {
  TensorFile f = read_tensor_file(data("tf_legacy.pt"), "inputs file", open_zip_libzip);
  CHECK(f.format == TensorFileFormat::torch_legacy);
  CHECK(tensor_file_format_name(f.format) == "torch.save (legacy format)");
  REQUIRE(f.records.size() == 2);
  // Each storage: 8 bytes of element count, then its bytes; six floats, then three int64s.
  uint64_t total = fs::file_size(data("tf_legacy.pt"));
  std::vector<TensorFile::Record> r;
  for (const auto& [key, rec] : f.records) {
    r.push_back(rec);
  }
  std::sort(r.begin(), r.end(), [](const auto& x, const auto& y) { return x.offset < y.offset; });
  CHECK(r[0].size == 24);
  CHECK(r[1].size == 24);
  CHECK(r[1].offset + r[1].size == total);
  CHECK(r[1].offset == r[0].offset + 24 + 8);
  // Its 6-tuple storage ids become the 5-tuples LibTorch reads.
  CHECK_NOTHROW(check_tensor_file(data("tf_legacy.pt"), "inputs file"));
  std::string truncated;
  {
    std::ifstream in(data("tf_legacy.pt"), std::ios::binary);
    truncated.assign(std::istreambuf_iterator<char>(in), {});
  }
  truncated.resize(truncated.size() - 5);
  CHECK_THROWS_WITH(read_legacy_torch_save(truncated, "inputs file 'x.pt'"),
                    doctest::Contains("inputs file 'x.pt' ends inside storage"));
}

TEST_CASE("read_tensor_file: safetensors, its keys as a dict of tensors") {
  TensorFile f = read_tensor_file(data("tf.safetensors"), "inputs file", open_zip_libzip);
  CHECK(f.format == TensorFileFormat::safetensors);
  REQUIRE(f.records.size() == 2);
  // Written by dtype size (b, the int64s, first); read in the keys' natural order.
  CHECK(f.records.at("0").size == 24);
  CHECK(f.records.at("1").size == 24);
  CHECK(globals_of(f.pickle) == std::vector<std::string>{"torch._utils _rebuild_tensor_v2", "torch FloatStorage",
                                                         "torch._utils _rebuild_tensor_v2", "torch LongStorage"});
  CHECK(f.pickle.find(std::string("X\x01\x00\x00\x00"
                                  "a",
                                  6)) < f.pickle.find(std::string("X\x01\x00\x00\x00"
                                                                  "b",
                                                                  6)));
  CHECK_NOTHROW(check_tensor_file(data("tf.safetensors"), "inputs file"));
}

TEST_CASE("read_safetensors: a header that lies is refused in one line") {
  auto file = [](const std::string& header, size_t data_bytes) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) {
      s[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    }
    return s + header + std::string(data_bytes, '\0');
  };
  const std::string who = "inputs file 'x.safetensors'";
  CHECK_THROWS_WITH(read_safetensors(file(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8), who),
                    "inputs file 'x.safetensors' has a safetensors entry 'x' whose data lies outside the file; save "
                    "it again with safetensors.torch.save_file");
  CHECK_THROWS_WITH(read_safetensors(file(R"({"x":{"dtype":"F32","shape":[5],"data_offsets":[0,16]}})", 16), who),
                    "inputs file 'x.safetensors' has a safetensors entry 'x' whose shape takes other than its 16 "
                    "bytes; save it again with safetensors.torch.save_file");
  CHECK_THROWS_WITH(read_safetensors(file(R"({"x":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", 16), who),
                    "inputs file 'x.safetensors' holds 'x' of dtype Q4, which aoti-bisect does not read; save it as "
                    "another dtype");
  CHECK_THROWS_WITH(read_safetensors(file("[1, 2]", 0), who),
                    "inputs file 'x.safetensors' has a safetensors header that is not a JSON object; save it again "
                    "with safetensors.torch.save_file");
  CHECK_NOTHROW(read_safetensors(file(R"({"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[2,2],)"
                                      R"("data_offsets":[0,16]}})",
                                      16),
                                 who));
}

TEST_CASE("read_tensor_file: a tokenizer's BatchEncoding is read as the dict it holds, its encodings left out") {
  TensorFile f = read_tensor_file(data("tf_batch.pt"), "inputs file", open_zip_libzip);
  CHECK(f.format == TensorFileFormat::torch_zip);
  CHECK(f.notes == std::vector<std::string>{"a transformers.tokenization_utils_base.BatchEncoding read as the dict "
                                            "it holds"});
  // Its tokenizers.Encoding objects (and the _codecs.encode of their
  // bytes) are never needed: nothing of them is written.
  for (const auto& g : globals_of(f.pickle)) {
    CHECK((g == "torch._utils _rebuild_tensor_v2" || g == "torch LongStorage"));
  }
  CHECK(f.pickle.find("input_ids") != std::string::npos);
  CHECK(f.pickle.find("attention_mask") != std::string::npos);
  CHECK_NOTHROW(check_tensor_file(data("tf_batch.pt"), "inputs file"));
}

TEST_CASE("read_tensor_file: an OrderedDict, a dict subclass, an nn.Parameter") {
  TensorFile ordered = read_tensor_file(data("tf_ordered.pt"), "inputs file", open_zip_libzip);
  CHECK(ordered.notes.empty());
  CHECK(ordered.pickle.find("OrderedDict") == std::string::npos);
  TensorFile sub = read_tensor_file(data("tf_subclass.pt"), "inputs file", open_zip_libzip);
  CHECK(sub.notes == std::vector<std::string>{"a __main__.Batch (a dict subclass) read as a dict"});
  TensorFile param = read_tensor_file(data("tf_parameter.pt"), "inputs file", open_zip_libzip);
  CHECK(param.notes == std::vector<std::string>{"an nn.Parameter read as its tensor"});
  CHECK(globals_of(param.pickle) == std::vector<std::string>{"torch._utils _rebuild_tensor_v2", "torch FloatStorage",
                                                             "torch._utils _rebuild_tensor_v2", "torch LongStorage"});
}

TEST_CASE("read_tensor_file: a pickle that would run code, or holds an object, is refused") {
  CHECK(refusal(data("tf_runs_code.pt")) ==
        "inputs file '" + data("tf_runs_code.pt").string() +
            "' would call posix.system when loaded (a pickle that runs code); aoti-bisect reads only tensors and "
            "plain containers: save the tensors themselves (a tuple or dict) with torch.save or safetensors");
  CHECK(refusal(data("tf_object.pt")) ==
        "inputs file '" + data("tf_object.pt").string() +
            "' holds a __main__.Plain object, which is not a mapping of tensors; save its tensors as a tuple or dict "
            "with torch.save");
}

TEST_CASE("read_tensor_file: none of the formats") {
  std::ofstream("junk.bin") << "\x80\x02junk that is no pickle";
  CHECK(refusal("junk.bin") ==
        "inputs file 'junk.bin' is not a file of tensors aoti-bisect reads (torch.save's zip "
        "or legacy format, or safetensors); save it with torch.save or "
        "safetensors.torch.save_file");
  CHECK(refusal("absent.pt") == "inputs file 'absent.pt' does not exist");
}

TEST_CASE("pickle::emit: shared values are written once, a container holding itself is refused") {
  pickle::Graph g;
  uint32_t t = pickle::add_tuple(g, {pickle::add_integer(g, 7)});
  g.root = pickle::add_tuple(g, {t, t, t});
  std::vector<std::string> notes;
  std::string out = pickle::emit(g, {"inputs file 'x'", {}}, notes);
  // (7,) once, then two BINGETs of its memo slot.
  CHECK(out == std::string("\x80\x02("
                           "(J\x07\x00\x00\x00tq\x00"
                           "h\x00h\x00"
                           "tq\x01.",
                           20));
  pickle::Graph loop;
  pickle::Node list;
  list.kind = pickle::Node::Kind::list;
  uint32_t l = pickle::add_node(loop, list);
  loop.nodes[l].items.push_back(l);
  loop.root = l;
  // A list that holds itself is written as Python does (memo first): no refusal, no recursion.
  CHECK(pickle::emit(loop, {"inputs file 'x'", {}}, notes) == std::string("\x80\x02]q\x00(h\x00"
                                                                          "e.",
                                                                          10));
}
