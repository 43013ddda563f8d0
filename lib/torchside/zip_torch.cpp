// The runner's reader of zip archives (package/zip.hpp's ZipEntries):
// LibTorch's own (caffe2::serialize::PyTorchStreamReader, miniz inside
// libtorch), so that a runner built on a user's machine links no zip
// library. It reads the inputs files the driver has already checked with
// libzip under the expansion cap (inputs/tensor_file.hpp check_tensor_file).

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <unordered_map>

#include "common/error.hpp"
#include "common/text.hpp"
#include "torchside/internal.hpp"

namespace aoti_bisect::torchside {
namespace fs = std::filesystem;

namespace {

// LibTorch's reader names records without the archive's folder; the names
// this reader gives put one folder before them, as a torch.save file has.
const std::string k_folder = "archive/";

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

class TorchZip : public ZipEntries {
 public:
  TorchZip(const fs::path& path, const std::string& what, const std::string& remedy) : ZipEntries(path, what, remedy) {
    try {
      m_reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path.string());
      m_records = m_reader->getAllRecords();
      std::sort(m_records.begin(), m_records.end());
      for (size_t i = 0; i < m_records.size(); ++i) {
        m_index.emplace(k_folder + m_records[i], i);
        m_sizes.push_back(m_reader->getRecordSize(m_records[i]));
      }
    } catch (const c10::Error& e) {
      throw Error(ErrorKind::cannot_test, what + " '" + path.string() + "' cannot be read by LibTorch's zip reader (" +
                                              first_line(e.what_without_backtrace()) + "); " + remedy);
    }
  }

  uint64_t count() const override { return m_records.size(); }
  std::string name(uint64_t index) const override {
    return index < m_records.size() ? k_folder + m_records[index] : std::string();
  }
  uint64_t declared_size(uint64_t index) const override { return index < m_sizes.size() ? m_sizes[index] : 0; }

  void stream(uint64_t index, const std::function<void(const char*, size_t)>& sink) override {
    const std::string entry = name(index);
    const uint64_t declared = declared_size(index);
    if (m_streamed + declared > m_cap) {
      fail(entry, "expands past the bytes its archive can hold");
    }
    at::DataPtr data;
    size_t n = 0;
    try {
      std::tie(data, n) = m_reader->getRecord(m_records.at(index));
    } catch (const c10::Error& e) {
      fail(entry, "cannot be read (" + first_line(e.what_without_backtrace()) + ")");
    }
    if (n != declared) {
      fail(entry, "declares " + std::to_string(declared) + " bytes but holds " + std::to_string(n));
    }
    const char* p = static_cast<const char*>(data.get());
    for (size_t at = 0; at < n;) {
      size_t k = std::min<size_t>(n - at, size_t(1) << 20);
      sink(p + at, k);
      at += k;
    }
    m_streamed += n;
  }

  uint64_t index_of(const std::string& entry) const override {
    auto it = m_index.find(entry);
    if (it == m_index.end()) {
      throw Error(ErrorKind::cannot_test,
                  m_what + " '" + m_path.string() + "' has no entry '" + printable_name(entry) + "'");
    }
    return it->second;
  }

 private:
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> m_reader;
  std::vector<std::string> m_records;
  std::vector<uint64_t> m_sizes;
  std::unordered_map<std::string, uint64_t> m_index;
};

}  // namespace

std::unique_ptr<ZipEntries> open_zip_torch(const fs::path& path, const std::string& what, const std::string& remedy) {
  return std::make_unique<TorchZip>(path, what, remedy);
}

}  // namespace aoti_bisect::torchside
