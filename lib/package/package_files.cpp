// What the runner needs of a package's files, already extracted (the
// driver extracts them, lib/package/package.cpp): no zip reading here.
#include <fmt/format.h>

#include "archive/elf.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "package/package.hpp"
#include "wrapper/constants.hpp"

namespace aoti_bisect {

SourceRole source_role(std::string_view file_name) {
  auto ends = [&](std::string_view suffix) { return file_name.size() > suffix.size() && file_name.ends_with(suffix); };
  if (ends(".wrapper.cpp")) {
    return SourceRole::wrapper;
  }
  if (ends(".kernel.cpp")) {
    return SourceRole::kernel;
  }
  return ends(".cpp") ? SourceRole::both : SourceRole::none;
}

std::string ModelFiles::device_key() const {
  auto it = metadata.find("AOTI_DEVICE_KEY");
  return it == metadata.end() ? std::string() : it->second;
}

bool has_weights_file(const std::filesystem::path& dir, const std::string& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(dir / "data" / "weights", ec) && !fs::is_empty(dir / "data" / "weights", ec)) {
    return true;
  }
  for (const fs::path& folder : {dir / "data" / "aotinductor" / model, dir / "data" / "constants"}) {
    if (!fs::is_directory(folder, ec)) {
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->path().extension() == ".blob") {
        return true;
      }
    }
  }
  return false;
}

void check_model_library(const std::filesystem::path& dir, const ModelFiles& model, const WrapperInfo& wrapper) {
  namespace fs = std::filesystem;
  fs::path so = dir / "data" / "aotinductor" / model.name / fs::path(model.shared_object).filename();
  if (model.shared_object.empty() || read_file_head(so, 4) !=
                                         "\x7f"
                                         "ELF") {
    return;
  }
  std::string why = missing_weights(wrapper.constant_info, embedded_weight_bytes(read_elf_facts(so)),
                                    has_weights_file(dir, model.name));
  if (!why.empty()) {
    throw Error(ErrorKind::cannot_test, fmt::format("model '{}': {}", model.name, why));
  }
}

}  // namespace aoti_bisect
