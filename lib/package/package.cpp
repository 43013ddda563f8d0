#include "package/package.hpp"

#include <algorithm>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zip.h>

#include "common/error.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

const std::string k_aoti_dir = "data/aotinductor/";

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A local file header at the start: a zip whose end was cut off.
bool starts_like_zip(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

ZipPtr open_zip(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw Error(ErrorKind::cannot_test, fmt::format("package '{}' does not exist", path.string()));
  }
  if (fs::is_directory(path, ec)) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("package '{}' is a directory; give the .pt2 file made by aoti_compile_and_package",
                            path.string()));
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
  return ZipPtr(z);
}

std::string read_zip_entry(zip_t* z, const std::string& name, const fs::path& path) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z, name.c_str(), 0, &st) != 0) {
    throw Error(ErrorKind::cannot_test, fmt::format("package '{}' has no entry '{}'", path.string(), name));
  }
  zip_file_t* f = zip_fopen(z, name.c_str(), 0);
  if (f == nullptr) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("package '{}': entry '{}' cannot be read ({})", path.string(), name, zip_strerror(z)));
  }
  std::string data(static_cast<size_t>(st.size), '\0');
  zip_int64_t got = zip_fread(f, data.data(), data.size());
  int close_err = zip_fclose(f);
  if (got < 0 || static_cast<zip_uint64_t>(got) != st.size || close_err != 0) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("package '{}': entry '{}' is damaged (truncated or bad checksum); rebuild the package",
                            path.string(), name));
  }
  return data;
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
  if (ends_with(base, ".wrapper.cpp")) {
    m.wrapper_cpp = entry;
  } else if (ends_with(base, ".kernel.cpp")) {
    m.kernel_cpp = entry;
  } else if (ends_with(base, ".cpp")) {
    if (m.wrapper_cpp.empty()) {
      m.wrapper_cpp = entry;  // versions before the wrapper/kernel split
    }
  } else if (ends_with(base, "wrapper_metadata.json") ||
             (ends_with(base, "_metadata.json") && !ends_with(base, "kernel_metadata.json") &&
              m.metadata_json.empty())) {
    m.metadata_json = entry;
  } else if (ends_with(base, ".so")) {
    m.shared_object = entry;
  } else if (ends_with(base, ".cubin") || ends_with(base, ".hsaco") || ends_with(base, ".spv")) {
    m.cubins.push_back(entry);
  } else {
    m.other.push_back(entry);
  }
}

// Streams one entry to a file (entries can be large: weights live in the .so).
void copy_entry(zip_t* z, const std::string& name, const fs::path& out, const fs::path& path) {
  zip_file_t* f = zip_fopen(z, name.c_str(), 0);
  if (f == nullptr) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("package '{}': entry '{}' cannot be read ({})", path.string(), name, zip_strerror(z)));
  }
  std::ofstream o(out, std::ios::binary | std::ios::trunc);
  std::vector<char> buf(1 << 20);
  zip_int64_t got = 0;
  while ((got = zip_fread(f, buf.data(), buf.size())) > 0) {
    o.write(buf.data(), got);
  }
  bool damaged = got < 0 || zip_fclose(f) != 0;
  if (damaged) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("package '{}': entry '{}' is damaged (truncated or bad checksum); rebuild the package",
                            path.string(), name));
  }
  if (!o) {
    throw Error(ErrorKind::internal, fmt::format("cannot write '{}' while extracting the package", out.string()));
  }
}

bool safe_entry_name(const std::string& name) {
  if (name.empty() || name.front() == '/') {
    return false;
  }
  fs::path p(name);
  return std::none_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; });
}

}  // namespace

std::string ModelFiles::device_key() const {
  auto it = metadata.find("AOTI_DEVICE_KEY");
  return it == metadata.end() ? std::string() : it->second;
}

Package Package::open(const fs::path& path) {
  ZipPtr z = open_zip(path);
  Package pkg;
  pkg.m_path = path;
  zip_int64_t n = zip_get_num_entries(z.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z.get(), static_cast<zip_uint64_t>(i), 0);
    if (name != nullptr) {
      pkg.m_entries.emplace_back(name);
    }
  }
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
    if (e.rfind(models_dir, 0) == 0 && ends_with(e, ".json") && e.find('/', models_dir.size()) == std::string::npos) {
      pkg.m_exported.push_back(e.substr(models_dir.size(), e.size() - models_dir.size() - 5));
    }
  }
  for (auto& [name, m] : models) {
    if (m.wrapper_cpp.empty() && m.shared_object.empty()) {
      continue;
    }
    if (!m.metadata_json.empty()) {
      m.metadata = parse_metadata(read_zip_entry(z.get(), m.metadata_json, path));
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
  throw Error(ErrorKind::usage, fmt::format("package '{}' has no model '{}'; it holds: {}", m_path.string(),
                                            requested, fmt::join(model_names(), ", ")));
}

std::string Package::read_entry(const std::string& name) const {
  ZipPtr z = open_zip(m_path);
  return read_zip_entry(z.get(), name, m_path);
}

WrapperInfo Package::wrapper_info(const ModelFiles& model) const {
  if (model.wrapper_cpp.empty()) {
    return {};
  }
  return parse_wrapper(read_entry(model.wrapper_cpp));
}

fs::path Package::extract(const fs::path& dest) const {
  ZipPtr z = open_zip(m_path);
  fs::create_directories(dest);
  for (const auto& e : m_entries) {
    if (!safe_entry_name(e)) {
      throw Error(ErrorKind::cannot_test,
                  fmt::format("package '{}' has an unsafe entry name '{}'; refusing to extract", m_path.string(), e));
    }
    if (e.back() == '/') {
      fs::create_directories(dest / e);
      continue;
    }
    fs::path out = dest / e;
    fs::create_directories(out.parent_path());
    copy_entry(z.get(), e, out, m_path);
  }
  fs::path root = dest;
  if (!m_prefix.empty()) {
    root /= m_prefix.substr(0, m_prefix.size() - 1);
  }
  return root;
}

}  // namespace aoti_bisect
