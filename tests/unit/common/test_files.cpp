#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "common/error.hpp"
#include "common/files.hpp"

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

TEST_CASE("exit codes of error kinds") {
  CHECK(exit_code_of(ErrorKind::usage) == ExitCode::usage);
  CHECK(static_cast<int>(exit_code_of(ErrorKind::cannot_test)) == 4);
  CHECK(static_cast<int>(exit_code_of(ErrorKind::internal)) == 5);
}

TEST_SUITE_END();
