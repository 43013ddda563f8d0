// The map of the code stays true (issue 28): docs/architecture.md lists every
// module of lib/ bottom up, and no module includes one listed above it (so
// there are no circles either).
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "common/text.hpp"
#include "package_fixture.hpp"

namespace fs = std::filesystem;

namespace {

// The modules of docs/architecture.md's table, in its order ("| `name` | ...").
std::vector<std::string> documented_modules(const std::string& architecture_md) {
  std::vector<std::string> out;
  static const std::regex row(R"(\n\| `(\w+)` \|)");
  for (auto it = std::sregex_iterator(architecture_md.begin(), architecture_md.end(), row);
       it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// "FILE includes MODULE/..." for each include of a module listed after the
// file's own module, or of a module the list does not name.
// `files`: path relative to lib/ ("job/job.cpp") -> text.
std::vector<std::string> reaching_up(const std::vector<std::string>& order,
                                     const std::map<std::string, std::string>& files) {
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) {
    rank[order[i]] = i;
  }
  static const std::regex include(R"(#include\s+"(\w+)/)");
  std::vector<std::string> out;
  for (const auto& [path, text] : files) {
    std::string own = path.substr(0, path.find('/'));
    for (auto it = std::sregex_iterator(text.begin(), text.end(), include); it != std::sregex_iterator(); ++it) {
      std::string used = (*it)[1];
      if (!rank.count(used) || !rank.count(own) || rank[used] > rank[own]) {
        out.push_back(path + " includes " + used + "/...");
      }
    }
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("layering");

TEST_CASE("the checker names an include of a module listed above, and of one not listed") {
  std::vector<std::string> order = {"common", "package", "job"};
  std::map<std::string, std::string> files = {
      {"job/job.cpp", "#include \"package/package.hpp\"\n#include \"common/text.hpp\"\n"},
      {"package/package.cpp", "#include \"common/files.hpp\"\n#include \"job/job.hpp\"\n"},
      {"common/text.cpp", "#include <string>\n#include \"stray/thing.hpp\"\n"}};
  CHECK(reaching_up(order, files) ==
        std::vector<std::string>{"common/text.cpp includes stray/...", "package/package.cpp includes job/..."});
  CHECK(documented_modules("x\n| `common` | a\n| `job` | b\n| not `this` |\n") ==
        std::vector<std::string>{"common", "job"});
}

TEST_CASE("docs/architecture.md lists every lib module, and none includes a module above it") {
  fs::path root = AOTI_BISECT_SOURCE_DIR;
  std::vector<std::string> order = documented_modules(fixture::read(root / "docs" / "architecture.md"));
  REQUIRE(order.size() > 10);

  std::vector<std::string> folders;
  std::map<std::string, std::string> files;
  for (const auto& dir : fs::directory_iterator(root / "lib")) {
    if (!dir.is_directory()) {
      continue;
    }
    std::string module = dir.path().filename().string();
    folders.push_back(module);
    for (const auto& f : fs::directory_iterator(dir.path())) {
      std::string ext = f.path().extension().string();
      if (ext == ".cpp" || ext == ".hpp") {
        files[module + "/" + f.path().filename().string()] = fixture::read(f.path());
      }
    }
  }
  std::vector<std::string> listed = order;
  std::sort(listed.begin(), listed.end());
  std::sort(folders.begin(), folders.end());
  CHECK(aoti_bisect::join(listed, " ") == aoti_bisect::join(folders, " "));
  CHECK(files.size() > 100);
  CHECK(aoti_bisect::join(reaching_up(order, files), "; ") == "");
}

// search/ and evidence/ pair their files (issue 42): each header has its
// .cpp of the same name, and each .cpp is a header's or a named part of one
// (`probed_search_culprit.cpp` of `probed_search.hpp`).
TEST_CASE("search and evidence: every header has its .cpp, every .cpp its header") {
  fs::path root = AOTI_BISECT_SOURCE_DIR;
  std::vector<std::string> unpaired;
  for (const char* module : {"search", "evidence"}) {
    std::vector<std::string> headers;
    std::vector<std::string> sources;
    for (const auto& f : fs::directory_iterator(root / "lib" / module)) {
      std::string stem = f.path().stem().string();
      if (f.path().extension() == ".hpp") {
        headers.push_back(stem);
      } else if (f.path().extension() == ".cpp") {
        sources.push_back(stem);
      }
    }
    CHECK(headers.size() >= 8);
    for (const auto& h : headers) {
      if (std::find(sources.begin(), sources.end(), h) == sources.end()) {
        unpaired.push_back(std::string(module) + "/" + h + ".hpp has no .cpp");
      }
    }
    for (const auto& c : sources) {
      bool paired = std::any_of(headers.begin(), headers.end(),
                                [&](const std::string& h) { return c == h || c.rfind(h + "_", 0) == 0; });
      if (!paired) {
        unpaired.push_back(std::string(module) + "/" + c + ".cpp has no header");
      }
    }
  }
  CHECK(aoti_bisect::join(unpaired, "; ") == "");
}

TEST_SUITE_END();
