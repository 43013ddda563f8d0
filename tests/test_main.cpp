// doctest main: each test binary runs in a fresh temporary directory, kept
// when a test fails so its files can be looked at.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>

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
  if (rc == 0) {
    std::error_code ec;
    fs::remove_all(tmpl, ec);
  } else {
    std::cerr << "test files kept in " << tmpl << "\n";
  }
  return rc;
}
