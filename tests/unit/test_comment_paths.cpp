// Comments that name a file of this repository by its path (lib/...,
// apps/..., tests/..., scripts/..., docs/..., examples/..., configs/...)
// name one that exists: a file moved is a comment to change (issue 42).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace fs = std::filesystem;

namespace {

// The paths one line's comment names; a prefix ("tests/data/cuda215_") or a
// pattern ("tests/fuzz/fuzz_*", "lib/pythonX.Y/...") is no path.
std::vector<std::string> named_paths(const std::string& line) {
  std::vector<std::string> out;
  size_t comment = line.find("//");
  if (comment == std::string::npos) {
    return out;
  }
  static const std::regex path(R"((^|[^\w/.-])((lib|apps|tests|scripts|docs|examples|configs)/[\w./-]*\w)([*]?))");
  std::string text = line.substr(comment);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), path); it != std::sregex_iterator(); ++it) {
    std::string p = (*it)[2];
    if ((*it)[4] == "*" || p.back() == '_' || p.find("X.Y") != std::string::npos) {
      continue;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("layering");

TEST_CASE("comment paths: what a path in a comment names is found, prefixes and patterns are not paths") {
  CHECK(named_paths("// see lib/job/job.cpp and docs/run.md#flags.") ==
        std::vector<std::string>{"lib/job/job.cpp", "docs/run.md"});
  CHECK(named_paths("int x;  // tests/data/cuda215_* and tests/fuzz/fuzz_*").empty());
  CHECK(named_paths("std::string s = \"lib/not/a/comment.cpp\";").empty());
}

TEST_CASE("comment paths: every repository path a comment in lib/, apps/ or tests/ names exists") {
  const fs::path root = AOTI_BISECT_SOURCE_DIR;
  std::vector<std::string> missing;
  for (const char* top : {"lib", "apps", "tests"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp") ||
          e.path().string().find("/tests/data/") != std::string::npos) {
        continue;
      }
      std::ifstream in(e.path());
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        for (const auto& p : named_paths(line)) {
          if (!fs::exists(root / p)) {
            missing.push_back(fs::relative(e.path(), root).string() + ":" + std::to_string(n) + ": " + p);
          }
        }
      }
    }
  }
  CAPTURE(missing);
  CHECK(missing.empty());
}

// Issue 68: a newcomer opening any library file reads first what it is for.
TEST_CASE("every library .cpp opens with a comment line saying its purpose") {
  const fs::path root = AOTI_BISECT_SOURCE_DIR;
  std::vector<std::string> silent;
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "lib")) {
    if (!e.is_regular_file() || e.path().extension() != ".cpp") {
      continue;
    }
    ++files;
    std::ifstream in(e.path());
    std::string first;
    std::getline(in, first);
    if (first.rfind("// ", 0) != 0 || first.size() < 20) {
      silent.push_back(fs::relative(e.path(), root).string());
    }
  }
  CHECK(files > 100);
  CAPTURE(silent);
  CHECK(silent.empty());
}

TEST_SUITE_END();
