#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/sha256.hpp"
#include "common/text.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

TEST_SUITE_BEGIN("common/files");

TEST_CASE("sha256_hex matches known vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex(std::string(1000, 'a')) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST_CASE("write_file_atomic then read_file round-trips; sha256_file agrees") {
  write_file_atomic("sub/x.txt", "abc");
  CHECK(read_file("sub/x.txt", "test file") == "abc");
  CHECK(sha256_file("sub/x.txt") == sha256_hex("abc"));
  CHECK_FALSE(fs::exists("sub/x.txt.tmp." + std::to_string(::getpid())));
}

TEST_CASE("read_file names the missing file and is a could-not-test error") {
  try {
    read_file("nope.pt", "inputs file");
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "inputs file 'nope.pt' does not exist");
    CHECK(e.kind() == ErrorKind::cannot_test);
  }
}

TEST_CASE("display_path and redact_paths hide the working and home directories") {
  fs::path cwd = "/work/proj";
  CHECK(display_path("/work/proj/out/report.json", cwd) == "out/report.json");
  CHECK(display_path("/work/proj", cwd) == ".");
  ::setenv("HOME", "/home/alice", 1);
  CHECK(display_path("/home/alice/models/m.pt2", cwd) == "~/models/m.pt2");
  CHECK(display_path("/opt/m.pt2", cwd) == "/opt/m.pt2");
  CHECK(redact_paths("cannot open /work/proj/a.pt and /home/alice/b.pt", cwd) == "cannot open a.pt and ~/b.pt");
}

TEST_CASE("redaction judges paths by what they name, not how they are spelled") {
  fs::path cwd = "/work/proj";
  fs::path home = fs::temp_directory_path() / fmt::format("ab-home-{}", ::getpid());
  fs::create_directories(home / "x");
  const char* old_home = std::getenv("HOME");
  std::string saved = old_home ? old_home : "";
  ::setenv("HOME", home.c_str(), 1);
  std::string name = home.filename().string();
  // HOME/../<home name>/x: the same folder, spelled with `..`.
  std::string dotted = (home / ".." / name / "x" / "m.pt2").string();
  CHECK(redact_paths("cannot open '" + dotted + "': gone", cwd) == "cannot open '~/x/m.pt2': gone");
  CHECK(display_path(dotted, cwd) == "~/x/m.pt2");
  // Through /proc/self/root, which resolves to /.
  std::string proc = "/proc/self/root" + (home / "x" / "m.pt2").string();
  CHECK(redact_paths("file=" + proc, cwd) == "file=~/x/m.pt2");
  CHECK(display_path(proc, cwd) == "~/x/m.pt2");
  // Through a symlink to the home folder.
  fs::path link = fs::temp_directory_path() / fmt::format("ab-link-{}", ::getpid());
  fs::remove(link);
  fs::create_directory_symlink(home, link);
  CHECK(redact_paths("(" + (link / "x").string() + ")", cwd) == "(~/x)");
  // Paths elsewhere, and text that is no path, are kept as written.
  CHECK(redact_paths("see /opt/models/m.pt2 and 3/4 of a/b", cwd) == "see /opt/models/m.pt2 and 3/4 of a/b");
  // No token boundary: the spelled home folder is still replaced.
  CHECK(redact_paths("-I" + home.string() + "/inc", cwd) == "-I~/inc");
  fs::remove(link);
  fs::remove_all(home);
  if (old_home) {
    ::setenv("HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("HOME");
  }
}

TEST_CASE("exit codes of error kinds") {
  CHECK(exit_code_of(ErrorKind::usage) == ExitCode::usage);
  CHECK(static_cast<int>(exit_code_of(ErrorKind::cannot_test)) == 4);
  CHECK(static_cast<int>(exit_code_of(ErrorKind::internal)) == 5);
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("common");

TEST_CASE("parse_size: --memory-limit's sizes") {
  CHECK(parse_size("4096") == 4096ULL);
  CHECK(parse_size("512M") == 512ULL << 20);
  CHECK(parse_size("8g") == 8ULL << 30);
  CHECK(parse_size("1.5G") == 3ULL << 29);
  CHECK(parse_size("none") == 0ULL);
  CHECK(parse_size("0") == 0ULL);
  CHECK_FALSE(parse_size("lots"));
  CHECK_FALSE(parse_size("-1G"));
  CHECK_FALSE(parse_size("nan"));
  CHECK_FALSE(parse_size("1e400"));
  CHECK_FALSE(parse_size("G"));
  CHECK_FALSE(parse_size("99999999999T"));
}

TEST_SUITE_END();

TEST_CASE("model_library_stamp: a library rebuilt in the same place has another stamp") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path("stamp-pkg") / "data" / "aotinductor" / "model";
  fs::create_directories(dir);
  CHECK(aoti_bisect::model_library_stamp("stamp-pkg", "model").empty());
  std::ofstream(dir / "abc.so") << "first build";
  std::string first = aoti_bisect::model_library_stamp("stamp-pkg", "model");
  CHECK(first.find("abc.so:") == 0);
  CHECK(aoti_bisect::model_library_stamp("stamp-pkg", "model") == first);
  fs::remove(dir / "abc.so");
  std::ofstream(dir / "abc.so") << "second build, longer";
  CHECK(aoti_bisect::model_library_stamp("stamp-pkg", "model") != first);
  CHECK(aoti_bisect::model_library_stamp("stamp-pkg", "other").empty());
}

TEST_CASE("sha256: the FIPS 180-4 examples, and the CPU's block function agrees with the portable one") {
  auto hex = [](const std::string& s, bool portable) {
    aoti_bisect::Sha256 h(portable);
    h.update(s.data(), s.size());
    return h.hex();
  };
  for (bool portable : {true, false}) {
    CHECK(hex("", portable) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(hex("abc", portable) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", portable) ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(hex(std::string(1000000, 'a'), portable) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  // Every length around the block and padding edges, fed in uneven pieces.
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += static_cast<char>((i * 131 + 7) & 0xff);
  }
  for (size_t n = 0; n <= text.size(); ++n) {
    aoti_bisect::Sha256 pieces;
    for (size_t at = 0; at < n; at += 1 + at % 67) {
      pieces.update(text.data() + at, std::min(n - at, 1 + at % 67));
    }
    CHECK_MESSAGE(pieces.hex() == hex(text.substr(0, n), true), "length ", n);
  }
  CHECK(aoti_bisect::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
