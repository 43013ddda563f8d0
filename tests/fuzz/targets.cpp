#include "fuzz/targets.hpp"

#include <exception>
#include <fstream>
#include <new>

#include "codegen/hooks.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "inputs/tensor_file.hpp"
#include "package/package.hpp"
#include "wrapper/wrapper.hpp"

namespace fuzz {
namespace fs = std::filesystem;
using aoti_bisect::Error;

namespace {

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

void package_reader(const std::string& bytes, const fs::path& scratch) {
  fs::create_directories(scratch);
  const fs::path file = scratch / "in.pt2";
  const fs::path out = scratch / "extracted";
  write_bytes(file, bytes);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{out};
  auto pkg = aoti_bisect::Package::open(file);
  pkg.torch_version();
  for (const auto& name : pkg.model_names()) {
    const auto& model = pkg.select_model(name);
    model.device_key();
    pkg.wrapper_info(model);
  }
  try {
    pkg.select_model("");
  } catch (const Error& e) {
    if (e.kind() != aoti_bisect::ErrorKind::usage) {
      throw;
    }
  }
  pkg.extract(out);
}

void wrapper_parser(const std::string& text) {
  aoti_bisect::WrapperInfo info = aoti_bisect::parse_wrapper(text);
  aoti_bisect::returned_buffers(info);
  for (const auto& site : info.call_sites) {
    for (const auto& arg : site.args) {
      aoti_bisect::base_tensor_name(arg);
    }
  }
  auto kernels = aoti_bisect::kernel_declarations(text);
  aoti_bisect::generate_hooks(info, kernels, aoti_bisect::shim_declarations(text));
}

void config_parser(const std::string& text) {
  std::string first_error;
  try {
    aoti_bisect::parse_profile(text, "fuzz.yaml");
  } catch (const Error& e) {
    first_error = e.what();
  }
  aoti_bisect::parse_user_config(text, "fuzz.yaml");
  if (first_error.find('\n') != std::string::npos) {
    throw Error(aoti_bisect::ErrorKind::internal, "profile error of several lines: " + first_error);
  }
}

void torch_save_check(const std::string& bytes, const fs::path& scratch) {
  fs::create_directories(scratch);
  const fs::path file = scratch / "inputs.pt";
  write_bytes(file, bytes);
  aoti_bisect::check_tensor_file(file, "inputs file");
}

std::string violation(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    std::string m = e.what();
    if (m.empty()) {
      return "an aoti_bisect::Error with an empty message";
    }
    if (m.find('\n') != std::string::npos) {
      return "an aoti_bisect::Error of several lines: " + m;
    }
    if (e.kind() == aoti_bisect::ErrorKind::internal) {
      return "an internal error (a bug, or a file problem read as the tool's): " + m;
    }
  } catch (const std::bad_alloc&) {
    return "std::bad_alloc (memory that follows a declared size, not the content)";
  } catch (const std::exception& e) {
    return std::string("an exception that is not aoti_bisect::Error: ") + e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
  return "";
}

std::string Mutator::mutate(const std::string& seed, const std::vector<std::string>& others) {
  static const uint64_t interesting[] = {
      0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x8000000000000000};
  std::string s = seed;
  const uint64_t rounds = 1 + below(4);
  for (uint64_t r = 0; r < rounds; ++r) {
    const size_t n = s.size();
    switch (below(8)) {
      case 0:  // flip bits of a few bytes
        for (uint64_t k = 0, m = 1 + below(8); k < m && n > 0; ++k) {
          s[below(n)] ^= static_cast<char>(1u << below(8));
        }
        break;
      case 1:  // a byte set to a random value
        if (n > 0) {
          s[below(n)] = static_cast<char>(below(256));
        }
        break;
      case 2: {  // a 1, 2, 4 or 8-byte field set to an interesting integer (little-endian)
        const size_t width = size_t{1} << below(4);
        if (n >= width) {
          size_t at = below(n - width + 1);
          uint64_t v = interesting[below(sizeof(interesting) / sizeof(interesting[0]))];
          for (size_t i = 0; i < width; ++i) {
            s[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
          }
        }
        break;
      }
      case 3:  // truncation
        s.resize(below(n + 1));
        break;
      case 4: {  // insertion of random bytes, or of a run of one byte
        std::string ins;
        const uint64_t len = 1 + below(below(2) ? 16 : 512);
        const char fill = static_cast<char>(below(256));
        for (uint64_t i = 0; i < len; ++i) {
          ins.push_back(below(2) ? fill : static_cast<char>(below(256)));
        }
        s.insert(below(n + 1), ins);
        break;
      }
      case 5:  // deletion of a range
        if (n > 0) {
          size_t at = below(n);
          s.erase(at, 1 + below(std::min<size_t>(n - at, 64)));
        }
        break;
      case 6: {  // a range duplicated in place
        if (n > 0) {
          size_t at = below(n);
          size_t len = 1 + below(std::min<size_t>(n - at, 256));
          s.insert(below(n + 1), s.substr(at, len));
        }
        break;
      }
      default: {  // splice: a range of another seed over a range of this one
        if (!others.empty()) {
          const std::string& o = others[below(others.size())];
          if (!o.empty()) {
            size_t from = below(o.size());
            size_t len = 1 + below(std::min<size_t>(o.size() - from, 1024));
            size_t at = below(n + 1);
            s.replace(at, std::min<size_t>(len, n - at), o.substr(from, len));
          }
        }
      }
    }
  }
  return s;
}

}  // namespace fuzz
