#pragma once
// A file of tensors as users save them (an inputs file, a reference): the
// zip format of torch.save, its legacy format (_use_new_zipfile_serialization
// =False), or safetensors. Read torch-free into one form the runner hands to
// LibTorch's unpickler: a protocol-2 pickle of tensors and plain containers
// (inputs/pickle_graph.hpp: mapping objects such as a tokenizer's
// BatchEncoding read as their dict, nothing from the file ever run), and
// where each storage's bytes lie in the file.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "archive/zip.hpp"

namespace aoti_bisect {

enum class TensorFileFormat { torch_zip, torch_legacy, safetensors };
// "torch.save", "torch.save (legacy format)", "safetensors"
std::string_view tensor_file_format_name(TensorFileFormat format);

struct TensorFile {
  TensorFileFormat format = TensorFileFormat::torch_zip;
  // ('storage', torch.<Type>Storage, key, location, count) ids, tensors by
  // torch._utils._rebuild_tensor_v2; what LibTorch's unpickler reads.
  std::string pickle;
  struct Record {
    std::string entry;    // the zip entry holding it; "" for a byte range of the file
    uint64_t offset = 0;  // the byte range of the file (legacy, safetensors)
    uint64_t size = 0;
  };
  std::map<std::string, Record> records;  // by storage key
  // One line per value read as something else ("a transformers.
  // tokenization_utils_base.BatchEncoding read as the dict it holds").
  std::vector<std::string> notes;
};

// Reads `path`. Throws Error(cannot_test), one line naming `what` ("inputs
// file") and the path: a file that is none of the three formats, a damaged
// one, a pickle that would run code or holds objects that are not tensors,
// plain containers or mappings. A zip is opened with `open_zip`: libzip's
// in the driver (open_zip_libzip), LibTorch's own in the runner.
TensorFile read_tensor_file(const std::filesystem::path& path, const std::string& what, const ZipOpener& open_zip);

// The bytes of a TensorFile's records, the file opened once.
class TensorRecords {
 public:
  TensorRecords(std::filesystem::path path, const TensorFile& file, std::string what, const ZipOpener& open_zip);
  ~TensorRecords();
  TensorRecords(const TensorRecords&) = delete;
  TensorRecords& operator=(const TensorRecords&) = delete;
  // Size of record `key`; throws Error(cannot_test) when there is none.
  uint64_t size(const std::string& key) const;
  // Copies record `key` into `dst` (size(key) bytes). Throws Error(cannot_test).
  void read(const std::string& key, char* dst);

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// The driver's (lib/inputs/tensor_file_driver.cpp, with libzip, which the
// runner does not link).
// Its check before any child loads the file: read_tensor_file,
// then the pickle it gives checked against the records' sizes and the file's
// size (inputs/torch_save.hpp check_torch_pickle). Returns what was read.
TensorFile check_tensor_file(const std::filesystem::path& path, const std::string& what);

// The file as Python's torch.load (weights_only) reads it, for the eager
// helper: `path` itself when it is torch.save's zip format with nothing
// read as something else, else a zip torch.save would have written for the
// same tensors and containers, written into `dir` (created) and returned.
std::filesystem::path plain_torch_save(const std::filesystem::path& path, const std::string& what,
                                       const std::filesystem::path& dir);

// The formats alone (read_tensor_file picks them by the file's first
// bytes). They read only what they need: safetensors its header, the
// legacy format its pickles and each storage's count, never the tensors'
// bytes. Throw Error(cannot_test) as read_tensor_file.
struct ByteSource {
  uint64_t size = 0;
  std::function<std::string(uint64_t offset, uint64_t n)> read;  // fewer bytes at the end
};
TensorFile read_safetensors(const ByteSource& src, const std::string& who);
TensorFile read_legacy_torch_save(const ByteSource& src, const std::string& who);
// The same on a whole file in memory (tests, fuzzing).
TensorFile read_safetensors(std::string_view bytes, const std::string& who);
TensorFile read_legacy_torch_save(std::string_view bytes, const std::string& who);

}  // namespace aoti_bisect
