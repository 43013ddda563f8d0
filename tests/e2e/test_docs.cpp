// The docs are the tool (issue 51, item 5), against the real binary and
// real reports: the defaults `run --help` states are the settings', and
// every field of a real report.json is in docs/reports.md's table (and
// every phase, group and top-level field the table lists is real). The
// tables checked against code alone are in tests/unit/test_docs_drift.cpp.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "config/config.hpp"
#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;
using Json = nlohmann::json;

namespace {

std::string source_text(const std::string& doc) {
  std::ifstream in(std::string(AOTI_BISECT_SOURCE_DIR) + "/" + doc);
  REQUIRE(in);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// docs/reports.md's report.json table: field -> its content cell.
std::map<std::string, std::string> report_fields() {
  std::string text = source_text("docs/reports.md");
  size_t at = text.find("`report.json` (`schema_version` 1):");
  REQUIRE(at != std::string::npos);
  at = text.find("| field | content |", at);
  REQUIRE(at != std::string::npos);
  std::map<std::string, std::string> rows;
  std::regex row(R"(^\| `([a-z_]+)(\[\])?` \| (.*) \|$)");
  for (size_t line = text.find('\n', at) + 1; line < text.size();) {
    size_t end = text.find('\n', line);
    std::string l = text.substr(line, end - line);
    if (l.empty() || l[0] != '|') {
      break;
    }
    std::smatch m;
    if (std::regex_match(l, m, row)) {
      rows[m[1]] = m[3];
    }
    line = end + 1;
  }
  return rows;
}

std::set<std::string> backticked(const std::string& cell) {
  std::set<std::string> out;
  std::regex tok(R"(`([A-Za-z_][A-Za-z0-9_]*)(\[\])?`)");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), tok); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

// Every key of the report (and of each object or first array element one
// level down) is named in its row; the report's top-level keys are the
// table's rows, no more, no fewer.
void check_documented(const Json& report, const std::string& label) {
  INFO(label);
  auto rows = report_fields();
  for (const auto& [key, value] : report.items()) {
    CHECK_MESSAGE(rows.count(key) == 1, "report.json has `" << key << "`, which docs/reports.md does not list");
  }
  for (const auto& [key, cell] : rows) {
    CHECK_MESSAGE(report.contains(key), "docs/reports.md lists `" << key << "`, which report.json does not have");
  }
  for (const auto& [key, value] : report.items()) {
    if (!rows.count(key)) {
      continue;
    }
    std::set<std::string> named = backticked(rows[key]);
    const Json* obj = &value;
    if (value.is_array() && !value.empty()) {
      obj = &value[0];
    }
    if (!obj->is_object()) {
      continue;
    }
    if (key == "run_counts") {
      for (const auto& [group, n] : obj->items()) {
        CHECK_MESSAGE(backticked(rows["runs"]).count(group) == 1,
                      "runs[].group `" << group << "` is not in docs/reports.md's runs[] row");
      }
      continue;
    }
    for (const auto& [field, v] : obj->items()) {
      CHECK_MESSAGE(named.count(field) == 1,
                    "report.json's `" << key << "` has `" << field << "`, which its docs/reports.md row does not name");
    }
  }
  // Every phase the job entered is one the phases[] row lists.
  std::set<std::string> phases = backticked(rows["phases"]);
  for (const auto& p : report["phases"]) {
    CHECK_MESSAGE(phases.count(p["phase"].get<std::string>()) == 1,
                  "phase `" << p["phase"].get<std::string>() << "` is not in docs/reports.md's phases[] row");
  }
}

}  // namespace

TEST_SUITE_BEGIN("e2e/docs");

TEST_CASE("run --help states the defaults the settings use") {
  auto help = run_tool({"run", "--help"}, "");
  CHECK(help.code() == 0);
  std::string text = help.out + help.err;
  aoti_bisect::Profile cpu = aoti_bisect::builtin_profile("cpu");
  auto number = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') {
      s.pop_back();
    }
    return s;
  };
  // The defaults come from the profile: every built-in profile has the same.
  for (const char* backend : {"cpu", "cuda", "rocm"}) {
    aoti_bisect::Profile p = aoti_bisect::builtin_profile(backend);
    CHECK(p.timeout_s == cpu.timeout_s);
    CHECK(p.repeats == cpu.repeats);
  }
  CHECK(text.find("(default: from the profile, " + number(cpu.timeout_s) + ")") != std::string::npos);
  CHECK(text.find("(default: from the profile: " + std::to_string(cpu.repeats) + " for the repeat variant") !=
        std::string::npos);
  // docs/run.md says the same numbers.
  std::string run = source_text("docs/run.md");
  CHECK(run.find("| `--timeout S` | seconds each call of the model may take, after the load (default " +
                 number(cpu.timeout_s) + ")") != std::string::npos);
  CHECK(run.find("by default the `repeat` variant runs " + std::to_string(cpu.repeats) + " times") !=
        std::string::npos);
  // And so do the documented defaults of the driver's own options.
  std::smatch m;
  std::regex build_timeout(R"(--build-timeout \S+=(\d+))");
  REQUIRE(std::regex_search(text, m, build_timeout));
  CHECK(run.find("| `--build-timeout S` | seconds the instrumented build may take (default " + m[1].str() + ")") !=
        std::string::npos);
  CHECK(text.find("matrix runs in parallel (default 1)") != std::string::npos);
  CHECK(run.find("| `--jobs N` | matrix runs in parallel (default 1). |") != std::string::npos);
  // A run with no option shows the default it states: the repeat variant's
  // runs (one of them may be the search's, counted).
  auto job = run_tool({"run", example("nan_midway.pt2").string(), "--inputs", example("nan_midway.inputs.pt").string(),
                       "--no-bisect"},
                      "out-defaults");
  REQUIRE(job.report.is_object());
  bool seen = false;
  for (const auto& v : job.report["matrix"]["variants"]) {
    if (v["name"] == "repeat") {
      seen = true;
      CHECK(v["runs"] == cpu.repeats);
    }
  }
  CHECK(seen);
}

TEST_CASE("every field of a real report.json is in docs/reports.md's table, and every row is a field") {
  SUBCASE("a culprit found first, with the matrix after") {
    auto r = run_tool({"run", example("nan_midway.pt2").string(), "--inputs", example("nan_midway.inputs.pt").string()},
                      "out");
    REQUIRE(r.report.is_object());
    check_documented(r.report, "nan_midway");
  }
  SUBCASE("a loop over batches") {
    std::string glob = example("loader_class_index.batch*.pt").string();
    auto r =
        run_tool({"run", example("loader_class_index.pt2").string(), "--inputs", glob, "--repeats", "1", "--no-bisect"},
                 "out-batches");
    REQUIRE(r.report.is_object());
    check_documented(r.report, "loader_class_index");
  }
}

TEST_SUITE_END();
