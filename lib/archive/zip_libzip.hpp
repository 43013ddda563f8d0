#pragma once
// libzip's reader of zip archives (package/zip.hpp's ZipEntries): the
// driver's, for packages and inputs. The runner does not link it.

#include "archive/zip.hpp"

struct zip;  // libzip's zip_t

namespace aoti_bisect {

class ZipReader : public ZipEntries {
 public:
  // Takes ownership of `z` (opened by the caller, who words its own errors).
  ZipReader(zip* z, std::filesystem::path path, std::string what, std::string remedy);
  ~ZipReader() override;

  uint64_t count() const override;
  std::string name(uint64_t index) const override;
  uint64_t declared_size(uint64_t index) const override;
  void stream(uint64_t index, const std::function<void(const char*, size_t)>& sink) override;
  uint64_t index_of(const std::string& name) const override;

 private:
  zip* m_zip;
};

// A ZipOpener by libzip: "<what> '<path>' cannot be read (<libzip's why>)"
// where the file cannot be opened or read, else "<what> '<path>' is a
// damaged zip archive (<why>); <remedy>".
std::unique_ptr<ZipEntries> open_zip_libzip(const std::filesystem::path& path, const std::string& what,
                                            const std::string& remedy);

}  // namespace aoti_bisect
