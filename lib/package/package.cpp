// Reading an AOTI package: its models, their files and metadata, and extracting it once.
#include "package/package.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zip.h>

#include "archive/elf.hpp"
#include "archive/zip_libzip.hpp"
#include "archive/zip_stored.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "wrapper/constants.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

const std::string k_aoti_dir = "data/aotinductor/";

// A local file header at the start: a zip whose end was cut off.
bool starts_like_zip(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

const char* k_remedy = "rebuild the package";

zip_t* open_zip(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw Error(ErrorKind::cannot_test, fmt::format("package '{}' does not exist", path.string()));
  }
  if (fs::is_directory(path, ec)) {
    throw Error(
        ErrorKind::cannot_test,
        fmt::format("package '{}' is a directory; give the .pt2 file made by aoti_compile_and_package", path.string()));
  }
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (z == nullptr) {
    std::string why;
    switch (err) {
      case ZIP_ER_NOZIP:
        why = starts_like_zip(path) ? "is a damaged or truncated zip archive (no central directory); copy or rebuild "
                                      "the package"
                                    : "is not a zip archive (a .pt2 package is one)";
        break;
      case ZIP_ER_INCONS: why = "is a damaged or truncated zip archive; copy or rebuild the package"; break;
      case ZIP_ER_READ:
      case ZIP_ER_OPEN: why = "cannot be read"; break;
      default: {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        why = fmt::format("cannot be opened as a zip archive ({})", zip_error_strerror(&ze));
        zip_error_fini(&ze);
      }
    }
    throw Error(ErrorKind::cannot_test, fmt::format("package '{}' {}", path.string(), why));
  }
  return z;
}

std::map<std::string, std::string> parse_metadata(const std::string& text) {
  std::map<std::string, std::string> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    return out;
  }
  for (auto& [k, v] : j.items()) {
    out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  return out;
}

void classify_model_file(ModelFiles& m, const std::string& entry) {
  std::string base = entry.substr(entry.find_last_of('/') + 1);
  SourceRole role = source_role(base);
  if (role == SourceRole::wrapper) {
    m.wrapper_cpp = entry;
  } else if (role == SourceRole::kernel) {
    m.kernel_cpp = entry;
  } else if (role == SourceRole::both) {
    if (m.wrapper_cpp.empty()) {
      m.wrapper_cpp = entry;  // versions before the wrapper/kernel split
    }
  } else if (base.ends_with("wrapper_metadata.json") ||
             (base.ends_with("_metadata.json") && !base.ends_with("kernel_metadata.json") && m.metadata_json.empty())) {
    m.metadata_json = entry;
  } else if (base.ends_with(".so")) {
    m.shared_object = entry;
  } else if (base == "kernel_information.json") {
    m.kernel_information_json = entry;
  } else if (base.ends_with("_compile_flags.json")) {
    m.compile_flags_json = entry;
  } else if (base.ends_with("_linker_flags.json")) {
    m.linker_flags_json = entry;
  } else if (base.ends_with(".wrapper.json") ||
             (base.ends_with(".json") && !base.ends_with("_metadata.json") && m.extern_json.empty())) {
    m.extern_json = entry;
    m.other.push_back(entry);
  } else if (base.ends_with(".cubin") || base.ends_with(".hsaco") || base.ends_with(".spv")) {
    m.cubins.push_back(entry);
  } else {
    m.other.push_back(entry);
  }
}

bool safe_entry_name(const std::string& name) {
  if (name.empty() || name.front() == '/') {
    return false;
  }
  fs::path p(name);
  return std::none_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; });
}

// An entry name as a path under the extraction folder: "a/./b//c/" -> "a/b/c".
std::string normal_entry_path(const std::string& name) {
  std::string n = fs::path(name).lexically_normal().generic_string();
  while (!n.empty() && n.back() == '/') {
    n.pop_back();
  }
  return n == "." ? std::string() : n;
}

// Entries that would be both a file and a folder ("a/b" and "a/b/c", or
// "a/b" and "a/b/") cannot both be extracted.
void check_file_folder_clash(const std::vector<std::string>& entries, const ZipReader& z) {
  std::set<std::string> files;
  for (const auto& e : entries) {
    if (e.back() != '/' && !normal_entry_path(e).empty()) {
      files.insert(normal_entry_path(e));
    }
  }
  for (const auto& e : entries) {
    std::string n = normal_entry_path(e);
    if (n.empty() && e.back() != '/') {
      z.fail(e, "names no file (an empty or \".\" path)");
    }
    for (size_t slash = n.find('/'); slash != std::string::npos; slash = n.find('/', slash + 1)) {
      if (files.count(n.substr(0, slash)) != 0) {
        z.fail(n.substr(0, slash), fmt::format("is both a file and the folder of entry '{}'", printable_name(e)));
      }
    }
    if (e.back() == '/' && files.count(n) != 0) {
      z.fail(n, fmt::format("is both a file and a folder (entry '{}')", printable_name(e)));
    }
  }
}

// A failure to create what an entry names: the archive's fault (a name too
// long, a clash with another entry) is cannot_test, the machine's (a full
// disk, no permission) internal.
[[noreturn]] void fail_extracting(const ZipReader& z, const std::string& entry, int err, const std::string& why) {
  if (err == ENAMETOOLONG || err == EEXIST || err == ENOTDIR || err == EISDIR || err == ELOOP) {
    z.fail(entry, fmt::format("cannot be extracted ({})", why));
  }
  throw Error(ErrorKind::internal,
              fmt::format("cannot extract entry '{}' of the package ({})", printable_name(entry), why));
}

// Streams one entry to a file under `dest` (entries can be large: weights
// live in the .so), under the reader's cap.
// Entries this large and stored are copied by the kernel (zip_stored.hpp).
constexpr uint64_t k_copied_from = 64 << 10;

void extract_entry(ZipReader& z, uint64_t index, const std::string& entry, const fs::path& dest,
                   std::vector<UncheckedCopy>* unchecked) {
  if (entry.back() == '/') {
    fs::create_directories(dest / entry);
    return;
  }
  fs::path out = dest / entry;
  fs::create_directories(out.parent_path());
  if (z.declared_size(index) >= k_copied_from) {
    if (auto stored = stored_entry(z.path(), entry)) {
      switch (copy_stored(z.path(), *stored, out, unchecked == nullptr)) {
        case CopyResult::copied:
          if (unchecked != nullptr) {
            unchecked->push_back({entry, out, *stored});
          }
          return;
        case CopyResult::bad_crc: z.fail(entry, "is damaged (truncated or bad checksum)");
        case CopyResult::cannot: break;  // streamed below
      }
    }
  }
  std::ofstream o(out, std::ios::binary | std::ios::trunc);
  if (!o) {
    int err = errno;
    fail_extracting(z, entry, err, std::strerror(err));
  }
  z.stream(index, [&](const char* p, size_t n) { o.write(p, static_cast<std::streamsize>(n)); });
  o.close();
  if (!o) {
    throw Error(ErrorKind::internal, fmt::format("cannot write '{}' while extracting the package", out.string()));
  }
}

}  // namespace

Package Package::open(const fs::path& path) {
  ZipReader z(open_zip(path), path, "package", k_remedy);
  Package pkg;
  pkg.m_path = path;
  for (uint64_t i = 0, n = z.count(); i < n; ++i) {
    std::string name = z.name(i);
    if (!name.empty()) {
      pkg.m_entries.push_back(std::move(name));
    }
  }
  z.check_declared_sizes();
  check_file_folder_clash(pkg.m_entries, z);
  // Entries sit under one top-level folder (or none): find it from data/aotinductor/.
  std::map<std::string, ModelFiles> models;
  for (const auto& e : pkg.m_entries) {
    size_t p = e.find(k_aoti_dir);
    if (p == std::string::npos || (p != 0 && e[p - 1] != '/') || e.find('/') < p - (p ? 1 : 0)) {
      continue;
    }
    pkg.m_prefix = e.substr(0, p);
    std::string rest = e.substr(p + k_aoti_dir.size());
    size_t slash = rest.find('/');
    if (slash == std::string::npos || slash + 1 == rest.size()) {
      continue;
    }
    std::string model = rest.substr(0, slash);
    ModelFiles& m = models[model];
    m.name = model;
    m.dir = e.substr(0, p + k_aoti_dir.size() + slash + 1);
    classify_model_file(m, e);
  }
  for (const auto& e : pkg.m_entries) {
    std::string models_dir = pkg.m_prefix + "models/";
    if (e.rfind(models_dir, 0) == 0 && e.ends_with(".json") && e.find('/', models_dir.size()) == std::string::npos) {
      pkg.m_exported.push_back(e.substr(models_dir.size(), e.size() - models_dir.size() - 5));
    }
  }
  for (auto& [name, m] : models) {
    if (m.wrapper_cpp.empty() && m.shared_object.empty()) {
      continue;
    }
    if (!m.metadata_json.empty()) {
      m.metadata = parse_metadata(z.read(m.metadata_json));
    }
    pkg.m_models.push_back(std::move(m));
  }
  if (pkg.m_models.empty()) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("package '{}' holds no AOTInductor model (no data/aotinductor/<model>/ with a .so or "
                            ".cpp); make it with torch._inductor.aoti_compile_and_package",
                            path.string()));
  }
  return pkg;
}

std::vector<std::string> Package::model_names() const {
  std::vector<std::string> names;
  for (const auto& m : m_models) {
    names.push_back(m.name);
  }
  return names;
}

std::string Package::torch_version() const {
  for (const auto& m : m_models) {
    for (const char* key : {"torch_version", "TORCH_VERSION", "AOTI_TORCH_VERSION"}) {
      auto it = m.metadata.find(key);
      if (it != m.metadata.end()) {
        return it->second;
      }
    }
  }
  return "";
}

const ModelFiles& Package::select_model(const std::string& requested) const {
  if (requested.empty()) {
    if (m_models.size() == 1) {
      return m_models.front();
    }
    throw Error(ErrorKind::usage, fmt::format("package '{}' holds {} models ({}); choose one with --model",
                                              m_path.string(), m_models.size(), fmt::join(model_names(), ", ")));
  }
  for (const auto& m : m_models) {
    if (m.name == requested) {
      return m;
    }
  }
  throw Error(ErrorKind::usage, fmt::format("package '{}' has no model '{}'; it holds: {}", m_path.string(), requested,
                                            fmt::join(model_names(), ", ")));
}

std::string Package::sample_inputs(const ModelFiles& model) const {
  const std::string entry = m_prefix + "data/sample_inputs/" + model.name + ".pt";
  return std::find(m_entries.begin(), m_entries.end(), entry) == m_entries.end() ? "" : entry;
}

void Package::extract_file(const std::string& name, const fs::path& dest) const {
  ZipReader z(open_zip(m_path), m_path, "package", k_remedy);
  std::ofstream o(dest, std::ios::binary | std::ios::trunc);
  if (!o) {
    throw Error(ErrorKind::internal, fmt::format("cannot write '{}': {}", dest.string(), std::strerror(errno)));
  }
  z.stream(z.index_of(name), [&](const char* p, size_t n) { o.write(p, static_cast<std::streamsize>(n)); });
  o.close();
  if (!o) {
    throw Error(ErrorKind::internal, fmt::format("cannot write '{}'", dest.string()));
  }
}

std::string Package::read_entry(const std::string& name) const {
  ZipReader z(open_zip(m_path), m_path, "package", k_remedy);
  return z.read(name);
}

WrapperInfo Package::wrapper_info(const ModelFiles& model) const {
  if (model.wrapper_cpp.empty()) {
    return {};
  }
  WrapperInfo info = parse_wrapper(read_entry(model.wrapper_cpp));
  if (!model.extern_json.empty()) {
    name_proxy_calls(info, read_entry(model.extern_json));
  }
  if (!model.kernel_information_json.empty()) {
    attach_kernel_information(info, read_entry(model.kernel_information_json));
  }
  return info;
}

fs::path Package::extract(const fs::path& dest, const ModelFiles* only, std::vector<UncheckedCopy>* unchecked) const {
  ZipReader z(open_zip(m_path), m_path, "package", k_remedy);
  fs::create_directories(dest);
  const std::string models_dir = m_prefix + "data/aotinductor/";
  auto needed = [&](const std::string& e) {
    if (only == nullptr) {
      return true;
    }
    if (e.rfind(models_dir, 0) == 0) {
      return e.rfind(models_dir + only->name + "/", 0) == 0;
    }
    return e.rfind(m_prefix + "models/", 0) != 0 && e.rfind(m_prefix + "data/sample_inputs/", 0) != 0;
  };
  for (uint64_t i = 0, n = z.count(); i < n; ++i) {
    const std::string e = z.name(i);
    if (e.empty()) {
      continue;
    }
    if (!safe_entry_name(e)) {
      throw Error(ErrorKind::cannot_test, fmt::format("package '{}' has an unsafe entry name '{}'; refusing to extract",
                                                      m_path.string(), printable_name(e)));
    }
  }
  for (uint64_t i = 0, n = z.count(); i < n; ++i) {
    const std::string e = z.name(i);
    if (e.empty() || !needed(e)) {
      continue;
    }
    try {
      extract_entry(z, i, e, dest, unchecked);
    } catch (const fs::filesystem_error& fe) {
      fail_extracting(z, e, fe.code().value(), fe.code().message());
    }
  }
  fs::path root = dest;
  if (!m_prefix.empty()) {
    root /= m_prefix.substr(0, m_prefix.size() - 1);
  }
  return root;
}

void check_copies(const fs::path& package, const std::vector<UncheckedCopy>& copies) {
  for (const auto& c : copies) {
    switch (check_copy(c.file, c.stored)) {
      case CopyResult::copied: break;
      case CopyResult::bad_crc: {
        ZipReader z(open_zip(package), package, "package", k_remedy);
        z.fail(c.entry, "is damaged (truncated or bad checksum)");
      }
      case CopyResult::cannot: {
        // The copy cannot be read back: the archive's own entry is checked
        // instead, by the reader that streams it.
        ZipReader z(open_zip(package), package, "package", k_remedy);
        z.stream(z.index_of(c.entry), [](const char*, size_t) {});
        break;
      }
    }
  }
}

}  // namespace aoti_bisect
