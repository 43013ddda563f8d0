// The docs are the tool (issue 51, item 5): the tables people read are
// checked against the code that decides the same things, so that a change
// of one without the other fails here. The flags tables in docs/run.md
// against the built-in profiles (configs/*.yaml, what runs when and how
// many times); the README's exit-code table against exit_code_for and the
// git-bisect mapping. (The --help defaults and the report.json fields are
// checked against the real binary and a real report: tests/e2e/test_docs.cpp.)

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "config/config.hpp"
#include "job/job.hpp"
#include "matrix/matrix.hpp"
#include "report/report.hpp"

using namespace aoti_bisect;

namespace {

std::string doc_text(const std::string& doc) {
  std::ifstream in(std::string(AOTI_BISECT_SOURCE_DIR) + "/" + doc);
  REQUIRE(in);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  size_t at = row.find('|');
  while (at != std::string::npos) {
    size_t next = row.find('|', at + 1);
    // "\|" inside a cell is a literal bar, not a column.
    while (next != std::string::npos && row[next - 1] == '\\') {
      next = row.find('|', next + 1);
    }
    if (next == std::string::npos) {
      break;
    }
    std::string cell = row.substr(at + 1, next - at - 1);
    size_t b = cell.find_first_not_of(' ');
    size_t e = cell.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    at = next;
  }
  return out;
}

// The rows of the first table after `heading` whose header's first cell is
// `first`: variant name (without backticks) -> its cells.
std::map<std::string, std::vector<std::string>> variant_table(const std::string& text, const std::string& heading) {
  size_t at = text.find(heading);
  REQUIRE_MESSAGE(at != std::string::npos, heading);
  at = text.find("| variant |", at);
  REQUIRE(at != std::string::npos);
  std::map<std::string, std::vector<std::string>> rows;
  size_t line_end = text.find('\n', at);
  for (size_t line = text.find('\n', line_end + 1) + 1; line < text.size();) {  // past the |---| row
    size_t start = text.find_first_not_of(' ', line);
    size_t end = text.find('\n', line);
    if (start >= end || text[start] != '|') {
      break;
    }
    auto c = cells(text.substr(start, end - start));
    REQUIRE(c.size() >= 3);
    std::string name = c[0];
    if (name.size() > 2 && name.front() == '`' && name.back() == '`') {
      name = name.substr(1, name.size() - 2);
    }
    rows[name] = c;
    line = end + 1;
  }
  return rows;
}

void check_flags_table(const std::string& text, const std::string& heading, const std::string& backend, bool device) {
  Profile profile = builtin_profile(backend);
  auto rows = variant_table(text, heading);
  std::set<std::string> in_profile;
  for (const Variant& v : profile.variants) {
    in_profile.insert(v.name);
    INFO(backend << " variant " << v.name);
    REQUIRE_MESSAGE(rows.count(v.name) == 1, "docs/run.md's table lacks the profile's variant");
    CHECK(rows[v.name][2] == variant_schedule(v, profile, device));
  }
  for (const auto& [name, row] : rows) {
    CHECK_MESSAGE(in_profile.count(name) == 1,
                  "docs/run.md lists " << name << ", which the " << backend << " profile does not have");
  }
}

}  // namespace

TEST_SUITE_BEGIN("docs");

TEST_CASE("docs/run.md's flags tables say what the built-in profiles run, when, and how many times") {
  std::string text = doc_text("docs/run.md");
  check_flags_table(text, "**What the flags say.**", "cpu", false);
  check_flags_table(text, "The CUDA profile's variants", "cuda", true);
}

TEST_CASE("variant_schedule: the words for each `when`") {
  Profile p;
  p.repeats = 3;
  Variant v{"x", {}, std::nullopt, ""};
  CHECK(variant_schedule(v, p, false) == "always, 3 runs");
  v.repeats = 1;
  v.when = RunWhen::failure;
  CHECK(variant_schedule(v, p, false) == "only when the baseline failed, 1 run");
  v.when = RunWhen::fault;
  CHECK(variant_schedule(v, p, false) == "only after a crash, 1 run");
  CHECK(variant_schedule(v, p, true) == "only after a fault (a crash, an error or a device assert), 1 run");
  v.env["AOTI_BISECT_RUN_UNDER"] = "compute-sanitizer --tool memcheck";
  CHECK(variant_schedule(v, p, true) ==
        "only after a fault (a crash, an error or a device assert), where compute-sanitizer is on PATH, 1 run");
  v.env.clear();
  v.repeats = 5;
  v.when = RunWhen::failure_or_flaky;
  CHECK(variant_schedule(v, p, false) ==
        "after the others: its first run when every run of the baseline environment failed; 5 runs when they "
        "disagree (flaky)");
}

TEST_CASE("the README's exit-code table is exit_code_for, and its git-bisect line is git_bisect_exit_code") {
  std::string text = doc_text("README.md");
  size_t at = text.find("## Exit codes");
  REQUIRE(at != std::string::npos);
  // code -> the verdicts the row names in backticks.
  std::map<int, std::string> rows;
  std::regex row_re(R"(^\| (\d+) \| (.*) \|$)");
  size_t end = text.find("\n## ", at + 1);
  std::string section = text.substr(at, end - at);
  for (size_t line = 0; line < section.size();) {
    size_t nl = section.find('\n', line);
    std::string l = section.substr(line, nl == std::string::npos ? std::string::npos : nl - line);
    std::smatch m;
    if (std::regex_match(l, m, row_re)) {
      rows[std::stoi(m[1])] = m[2];
    }
    line = nl == std::string::npos ? section.size() : nl + 1;
  }
  std::set<int> codes;
  for (Verdict v : {Verdict::clean, Verdict::isolated, Verdict::not_isolated, Verdict::inconclusive,
                    Verdict::suppressed_by_instrumentation, Verdict::could_not_test, Verdict::internal_error,
                    Verdict::interrupted}) {
    int code = static_cast<int>(exit_code_for(v));
    codes.insert(code);
    std::string name = "`" + std::string(verdict_name(v)) + "`";
    INFO("verdict " << name << " exits " << code);
    REQUIRE(rows.count(code) == 1);
    CHECK(rows[code].find(name) != std::string::npos);
    // Named in another row only where that row says how (a usage error
    // found after the report began: "a report saying `could_not_test`").
    for (const auto& [other, says] : rows) {
      if (other != code && says.find(name) != std::string::npos) {
        CHECK(says.find("a report saying " + name) != std::string::npos);
      }
    }
  }
  codes.insert(static_cast<int>(ExitCode::usage));
  for (const auto& [code, says] : rows) {
    CHECK_MESSAGE(codes.count(code) == 1, "the README documents exit " << code << ", which the tool never gives");
  }
  CHECK(rows.size() == codes.size());
  // "0 good, 1 bad (1 and 3), 125 could not test (4), 128 for usage and
  // internal errors (...), 130 interrupted": each code as the mapping gives it.
  CHECK(git_bisect_exit_code(exit_code_for(Verdict::clean)) == 0);
  CHECK(git_bisect_exit_code(exit_code_for(Verdict::isolated)) == 1);
  CHECK(git_bisect_exit_code(exit_code_for(Verdict::not_isolated)) == 1);
  CHECK(git_bisect_exit_code(exit_code_for(Verdict::could_not_test)) == 125);
  CHECK(git_bisect_exit_code(exit_code_for(Verdict::internal_error)) == 128);
  CHECK(git_bisect_exit_code(exit_code_for(Verdict::interrupted)) == 130);
  size_t git_at = section.find("`--exit-codes=git-bisect` maps them");
  REQUIRE(git_at != std::string::npos);
  std::string git = section.substr(git_at, section.find("\n\n", git_at) - git_at);
  std::replace(git.begin(), git.end(), '\n', ' ');  // however the paragraph is wrapped
  for (const char* phrase :
       {"0 good, 1 bad (1 and 3), 125 could not test (4), 128 for usage and internal errors", "130 interrupted"}) {
    CHECK_MESSAGE(git.find(phrase) != std::string::npos, phrase);
  }
  // docs/run.md's mentions of a verdict's exit code agree too.
  std::string run = doc_text("docs/run.md");
  std::regex mention(R"(`(not_isolated|isolated|clean|could_not_test|inconclusive|internal_error)` \(exit (\d+))");
  int seen = 0;
  for (auto it = std::sregex_iterator(run.begin(), run.end(), mention); it != std::sregex_iterator(); ++it, ++seen) {
    std::string verdict = (*it)[1];
    int code = std::stoi((*it)[2]);
    for (Verdict v : {Verdict::clean, Verdict::isolated, Verdict::not_isolated, Verdict::inconclusive,
                      Verdict::could_not_test, Verdict::internal_error}) {
      if (verdict_name(v) == verdict) {
        CHECK_MESSAGE(static_cast<int>(exit_code_for(v)) == code, "docs/run.md: `" << verdict << "` (exit " << code);
      }
    }
  }
  CHECK(seen > 0);
}

TEST_SUITE_END();

// Issue 68: the front door stays small and says first what has run on a GPU.
TEST_CASE("the README is at most 15 KB and its first screen says what has run on a GPU") {
  const std::string text = doc_text("README.md");
  CHECK(text.size() <= 15000);
  std::string first_screen;
  size_t at = 0;
  for (int line = 0; line < 40 && at != std::string::npos; ++line) {
    size_t end = text.find('\n', at);
    first_screen += text.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
    at = end == std::string::npos ? end : end + 1;
  }
  std::replace(first_screen.begin(), first_screen.end(), '\n', ' ');
  CHECK(first_screen.find("No CUDA code of this project has run on a GPU yet") != std::string::npos);
  CHECK(first_screen.find("**What has run where.**") != std::string::npos);
  // The runner's main stays a dispatcher (apps/aoti-bisect-runner/main.cpp).
  const std::string runner = doc_text("apps/aoti-bisect-runner/main.cpp");
  CHECK(std::count(runner.begin(), runner.end(), '\n') <= 150);
}
