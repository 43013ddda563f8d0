// The YAML examples in docs/ are the ones users copy: each config example
// must parse and plan against every built-in profile, and each triage
// manifest example must parse, as written.

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "config/config.hpp"
#include "matrix/matrix.hpp"
#include "triage/manifest.hpp"

using namespace aoti_bisect;

namespace {

std::vector<std::string> yaml_blocks(const std::string& doc) {
  std::ifstream in(std::string(AOTI_BISECT_SOURCE_DIR) + "/" + doc);
  REQUIRE(in);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::string> blocks;
  for (size_t at = text.find("```yaml\n"); at != std::string::npos; at = text.find("```yaml\n", at)) {
    size_t start = at + 8;
    size_t end = text.find("```", start);
    REQUIRE(end != std::string::npos);
    blocks.push_back(text.substr(start, end - start));
    at = end + 3;
  }
  return blocks;
}

}  // namespace

TEST_SUITE_BEGIN("config");

TEST_CASE("docs: every config example in docs/configs.md parses and plans against every built-in profile") {
  auto blocks = yaml_blocks("docs/configs.md");
  REQUIRE_FALSE(blocks.empty());
  for (size_t i = 0; i < blocks.size(); ++i) {
    CAPTURE(i);
    CAPTURE(blocks[i]);
    UserConfig user;
    REQUIRE_NOTHROW(user = parse_user_config(blocks[i], "docs/configs.md block " + std::to_string(i + 1)));
    for (const auto& backend : builtin_backends()) {
      CAPTURE(backend);
      CHECK_NOTHROW(plan_matrix(builtin_profile(backend), user, std::nullopt));
    }
  }
}

TEST_CASE("docs: the triage manifest examples in docs/triage.md parse as written") {
  int manifests = 0;
  for (const auto& block : yaml_blocks("docs/triage.md")) {
    if (block.rfind("cases:", 0) != 0) {
      continue;  // not a manifest (a Kubernetes Job that runs one)
    }
    ++manifests;
    CAPTURE(block);
    Manifest m;
    REQUIRE_NOTHROW(m = parse_manifest(block, "docs/triage.md", "/tmp"));
    CHECK_FALSE(m.cases.empty());
  }
  CHECK(manifests >= 1);
}

TEST_SUITE_END();
