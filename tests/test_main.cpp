// doctest main: each test binary runs in a fresh temporary directory, kept
// when a test fails so its files can be looked at.
#define DOCTEST_CONFIG_IMPLEMENT
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "skip.hpp"

namespace aoti_bisect::test {
namespace {
std::vector<std::string>& skip_list() {
  static std::vector<std::string> list;
  return list;
}
}  // namespace
void skip(const std::string& why) {
  skip_list().push_back(why);
  std::cout << "skipped: " << why << "\n";
}
const std::vector<std::string>& skipped() {
  return skip_list();
}
}  // namespace aoti_bisect::test

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "aoti-bisect-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::cerr << "cannot create a temporary directory\n";
    return 1;
  }
  fs::path origin = fs::current_path();
  fs::current_path(tmpl);
  doctest::Context context(argc, argv);
  int rc = context.run();
  fs::current_path(origin);
  const auto& skipped = aoti_bisect::test::skipped();
  if (!skipped.empty()) {
    std::cout << skipped.size() << " test case" << (skipped.size() == 1 ? "" : "s") << " skipped:";
    for (const auto& why : skipped) {
      std::cout << " [" << why << "]";
    }
    std::cout << "\n";
    if (const char* code = std::getenv("AOTI_BISECT_SKIP_EXIT"); rc == 0 && code != nullptr && *code != '\0') {
      rc = std::atoi(code);  // ctest shows the entry as skipped (SKIP_RETURN_CODE)
    }
  }
  if (rc == 0) {
    std::error_code ec;
    fs::remove_all(tmpl, ec);
  } else {
    std::cerr << "test files kept in " << tmpl << "\n";
  }
  return rc;
}
