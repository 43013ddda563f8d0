#pragma once
// What the unit and fuzz tests share (no torch): reading and writing files,
// counting occurrences, an Error's message, and small AOTI-shaped zip
// archives (a wrapper source from tests/data, a metadata file and a stand-in
// shared object). One copy each: unity builds put several test files in one
// compile, where two helpers of one name collide.

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <zip.h>

#include "common/error.hpp"

namespace fixture {

// The message of the aoti_bisect::Error that f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const aoti_bisect::Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline std::string text(const std::string& name) {
  std::ifstream in(std::string(AOTI_BISECT_TEST_DATA) + "/" + name);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh folder under the temp directory, named for the test and this process.
inline std::filesystem::path scratch_dir(const std::string& name) {
  std::filesystem::path d =
      std::filesystem::temp_directory_path() / ("aoti-bisect-unit-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// $CXX, else c++ (or g++) from PATH.
inline std::string compiler() {
  const char* cxx = std::getenv("CXX");
  if (cxx != nullptr && *cxx) {
    return cxx;
  }
  return std::system("command -v c++ >/dev/null 2>&1") == 0 ? "c++" : "g++";
}

inline void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

// How many times `what` occurs in `s` (overlapping occurrences counted).
inline size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// The file's bytes; "" when it cannot be read.
inline std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void make_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  REQUIRE(z != nullptr);
  for (const auto& [name, data] : entries) {
    char* copy = static_cast<char*>(malloc(data.size() + 1));
    memcpy(copy, data.data(), data.size());
    zip_source_t* src = zip_source_buffer(z, copy, data.size(), 1);
    REQUIRE(zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8) >= 0);
  }
  REQUIRE(zip_close(z) == 0);
}

// A one-model CPU package whose wrapper is tests/data/nan_plain.wrapper.cpp.
inline void make_package(const std::string& path, const std::string& top = "pkg/",
                         const std::string& device_key = "cpu") {
  make_zip(path, {{top + "archive_format", "pt2"},
                  {top + "data/aotinductor/model/abc.wrapper.cpp", text("nan_plain.wrapper.cpp")},
                  {top + "data/aotinductor/model/def.kernel.cpp", "// kernels"},
                  {top + "data/aotinductor/model/abc.wrapper_metadata.json",
                   R"({"AOTI_DEVICE_KEY": ")" + device_key + R"(", "AOTI_PLATFORM": "linux"})"},
                  {top + "data/aotinductor/model/abc.wrapper.so", std::string(5000, 'x')}});
}

}  // namespace fixture
