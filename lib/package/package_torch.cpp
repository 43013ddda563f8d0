// Which torch built a package, from its recorded compile command and the libraries it needs.
#include "package/package_torch.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "archive/elf.hpp"
#include "common/error.hpp"
#include "common/text.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// ".../site-packages/torch/include" or ".../torch/include/torch/csrc/api/include" -> ".../site-packages/torch".
std::string torch_dir_of_include(const std::string& dir) {
  for (const char* marker : {"/torch/include", "/libtorch/include"}) {
    size_t at = dir.find(marker);
    if (at != std::string::npos) {
      return dir.substr(0, at + std::string_view(marker).size() - std::string_view("/include").size());
    }
  }
  return "";
}

// The folders `-I` and `-isystem` name in the recorded compile command.
std::vector<std::string> recorded_include_dirs(const std::string& wrapper_source) {
  std::vector<std::string> dirs;
  size_t at = wrapper_source.rfind("// Compile cmd");
  if (at == std::string::npos) {
    return dirs;
  }
  std::istringstream lines(wrapper_source.substr(at));
  std::string line;
  std::getline(lines, line);  // the marker itself
  while (std::getline(lines, line) && line.rfind("//", 0) == 0) {
    std::istringstream words(line.substr(2));
    std::string w, prev;
    while (words >> w) {
      if (w.rfind("-I", 0) == 0 && w.size() > 2) {
        dirs.push_back(w.substr(2));
      } else if (prev == "-I" || prev == "-isystem") {
        dirs.push_back(w);
      }
      prev = w;
    }
  }
  return dirs;
}

}  // namespace

std::string torch_release(const std::string& version) {
  size_t end = 0;
  while (end < version.size() && (std::isdigit(static_cast<unsigned char>(version[end])) || version[end] == '.')) {
    ++end;
  }
  return version.substr(0, end);
}

std::string torch_version_in(const fs::path& torch_dir) {
  std::error_code ec;
  if (torch_dir.empty() || !fs::is_directory(torch_dir, ec)) {
    return "";
  }
  // A torch package: version.py holds `__version__ = '2.15.0+cu132'`.
  std::ifstream py(torch_dir / "version.py");
  for (std::string line; std::getline(py, line);) {
    // `__version__ = '...'` (not `__all__ = ['__version__', ...]`).
    size_t eq = line.rfind("__version__", 0) == 0 ? 0 : std::string::npos;
    size_t quote = line.find_first_of("'\"", eq == std::string::npos ? line.size() : eq);
    if (eq != std::string::npos && quote != std::string::npos) {
      size_t close = line.find(line[quote], quote + 1);
      return close == std::string::npos ? "" : line.substr(quote + 1, close - quote - 1);
    }
  }
  // A LibTorch distribution: build-version holds "2.13.0+cpu".
  std::ifstream built(torch_dir / "build-version");
  std::string v;
  std::getline(built, v);
  return std::string(trim(v));
}

PackageTorch package_torch(const std::string& wrapper_source, const std::string& compile_flags_json,
                           const fs::path& library) {
  PackageTorch t;
  std::vector<std::string> dirs = recorded_include_dirs(wrapper_source);
  auto flags = nlohmann::json::parse(compile_flags_json, nullptr, false);
  if (flags.is_object() && flags.contains("include_dirs") && flags["include_dirs"].is_array()) {
    for (const auto& d : flags["include_dirs"]) {
      if (d.is_string()) {
        dirs.push_back(d.get<std::string>());
      }
    }
  }
  for (const auto& d : dirs) {
    if (std::string dir = torch_dir_of_include(d); !dir.empty()) {
      t.torch_dir = dir;
      break;
    }
  }
  t.version = torch_release(torch_version_in(t.torch_dir));
  if (!library.empty()) {
    try {
      for (const auto& lib : read_elf_facts(library).needed) {
        if (lib.rfind("libtorch", 0) == 0 || lib.rfind("libc10", 0) == 0) {
          t.libraries.push_back(lib);
        }
      }
    } catch (const Error&) {
      // not a readable library: check_model_library says so
    }
  }
  return t;
}

}  // namespace aoti_bisect
