// The driver's side of tensor files: its check before any child loads one,
// and the plain copy for the eager helper. Read and written with libzip,
// which the runner does not link.
#include <vector>

#include <fmt/format.h>
#include <zip.h>

#include "archive/zip_libzip.hpp"
#include "common/error.hpp"
#include "inputs/tensor_file.hpp"
#include "inputs/torch_save.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

fs::path plain_torch_save(const fs::path& path, const std::string& what, const fs::path& dir) {
  TensorFile file = read_tensor_file(path, what, open_zip_libzip);
  if (file.format == TensorFileFormat::torch_zip && file.notes.empty()) {
    return path;
  }
  fs::create_directories(dir);
  const fs::path out = dir / (path.stem().string() + ".plain.pt");
  const fs::path tmp = dir / (path.stem().string() + ".plain.pt.tmp");
  // Every entry's bytes stay alive until zip_close writes them.
  std::vector<std::string> held;
  held.reserve(file.records.size() + 3);
  TensorRecords records(path, file, what, open_zip_libzip);
  int err = 0;
  zip_t* z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (z == nullptr) {
    throw Error(ErrorKind::internal, fmt::format("cannot write '{}'", tmp.string()));
  }
  auto add = [&](const std::string& name, std::string bytes) {
    held.push_back(std::move(bytes));
    zip_source_t* src = zip_source_buffer(z, held.back().data(), held.back().size(), 0);
    zip_int64_t index = src == nullptr ? -1 : zip_file_add(z, ("plain/" + name).c_str(), src, ZIP_FL_OVERWRITE);
    if (index < 0) {
      zip_source_free(src);
      zip_discard(z);
      throw Error(ErrorKind::internal, fmt::format("cannot write '{}'", tmp.string()));
    }
    zip_set_file_compression(z, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
  };
  add("data.pkl", file.pickle);
  add("byteorder", "little");
  for (const auto& [key, record] : file.records) {
    std::string bytes(record.size, '\0');
    records.read(key, bytes.data());
    add("data/" + key, std::move(bytes));
  }
  add("version", "3\n");
  if (zip_close(z) != 0) {
    zip_discard(z);
    throw Error(ErrorKind::internal, fmt::format("cannot write '{}'", tmp.string()));
  }
  fs::rename(tmp, out);
  return out;
}

TensorFile check_tensor_file(const fs::path& path, const std::string& what) {
  TensorFile file = read_tensor_file(path, what, open_zip_libzip);
  auto record_size = [&](const std::string& key) -> int64_t {
    auto it = file.records.find(key);
    return it == file.records.end() ? -1 : static_cast<int64_t>(it->second.size);
  };
  std::error_code ec;
  uint64_t bytes = fs::file_size(path, ec);
  check_torch_pickle(file.pickle, record_size, ec ? 0 : bytes, what, path);
  return file;
}

}  // namespace aoti_bisect
