#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/files.hpp"
#include "package_fixture.hpp"
#include "report/report.hpp"
#include "report/sink_text.hpp"
#include "report/sinks.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

RunRecord crash_run(const std::string& id, const std::string& variant, int repeat,
                    std::map<std::string, std::string> env) {
  RunRecord run;
  run.id = id;
  run.variant = variant;
  run.repeat = repeat;
  run.env = std::move(env);
  run.outcome = OutcomeKind::crash;
  run.exit = "signal 11 (SIGSEGV)";
  run.signal = 11;
  run.seconds = 1.25;
  run.first_error_line = "CUDA error: an illegal memory access was encountered";
  return run;
}

// A crash reproduced under two variants: baseline 1/1, launch_blocking 2/3.
Report crash_report() {
  Report r;
  r.tool_version = "0.1.0";
  r.command_line = {"aoti-bisect", "run", "model.pt2", "--inputs", "batch.pt"};
  r.environment = {"0.1.0",       "2.5.1",     "3.11.2",
                   "12.4",        "",          "cuda:0",
                   "NVIDIA H200", "550.54.15", "Linux 6.1.0 x86_64 (Debian 12.11)",
                   "abc1234"};
  r.package.path = "model.pt2";
  r.package.sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  r.package.models = {"model"};
  r.package.model = "model";
  r.package.device_key = "cuda";
  r.package.call_sites = 12;
  r.inputs_path = "batch.pt";
  r.inputs_sha256 = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
  r.inputs = {{"x", "float32", {8, 16}, {16, 1}, "cuda:0", "aa"}, {"target", "int64", {8}, {1}, "cuda:0", "bb"}};

  RunRecord base = crash_run("baseline", "baseline", 0, {});
  TensorStats out;
  out.name = "out0";
  out.dtype = "float32";
  out.shape = {8, 4};
  out.numel = 32;
  out.nan_count = 3;
  out.inf_count = 1;
  out.min = std::numeric_limits<double>::quiet_NaN();
  out.max = std::numeric_limits<double>::infinity();
  out.mean = std::nullopt;
  base.outputs = {out};
  r.runs.push_back(base);
  std::map<std::string, std::string> lb = {{"CUDA_LAUNCH_BLOCKING", "1"}};
  r.runs.push_back(crash_run("launch_blocking.1", "launch_blocking", 1, lb));
  RunRecord ok = crash_run("launch_blocking.2", "launch_blocking", 2, lb);
  ok.outcome = OutcomeKind::ok;
  ok.exit = "exit 0";
  ok.exit_code = 0;
  ok.signal.reset();
  ok.first_error_line.clear();
  r.runs.push_back(ok);
  r.runs.push_back(crash_run("launch_blocking.3", "launch_blocking", 3, lb));

  r.matrix = {{"baseline", {}, 1, 1, true}, {"launch_blocking", lb, 3, 2, false}};
  r.verdict = Verdict::not_isolated;
  r.verdict_reason = "crash reproduced in 3 of 4 runs; isolating it needs an instrumented build";
  Failure f;
  f.kind = OutcomeKind::crash;
  f.first_line = "CUDA error: an illegal memory access was encountered";
  f.signal = 11;
  f.reproducing_variant = "baseline";
  f.reproduced = 3;
  f.runs = 4;
  f.deterministic = true;
  r.failure = f;
  r.phases = {{"inspect", 0.1}, {"baseline", 1.3}, {"matrix", 3.9}};
  r.total_seconds = 5.3;
  r.reproduce_command = "aoti-bisect-runner --package model.pt2 --model model --inputs batch.pt";
  return r;
}

Report clean_report() {
  Report r = crash_report();
  for (auto& run : r.runs) {
    run.outcome = OutcomeKind::ok;
    run.exit = "exit 0";
    run.exit_code = 0;
    run.signal.reset();
    run.first_error_line.clear();
  }
  r.matrix[0].reproduced = 0;
  r.matrix[1].reproduced = 0;
  r.failure.reset();
  r.verdict = Verdict::clean;
  r.verdict_reason = "no failure in 4 runs";
  return r;
}

TensorStats stats(const std::string& name, int64_t nan_count, int64_t inf_count, double min, double max) {
  TensorStats s;
  s.name = name;
  s.dtype = "float32";
  s.shape = {8, 4};
  s.numel = 32;
  s.nan_count = nan_count;
  s.inf_count = inf_count;
  s.min = min;
  s.max = max;
  s.mean = 0.5;
  s.checksum = "0011223344556677";
  return s;
}

// A NaN isolated to call site 5, found by bisection over 12 sites with the
// instrumented build taken from the cache; its bad input is a graph input.
Report culprit_report() {
  Report r = crash_report();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  r.verdict = Verdict::isolated;
  r.verdict_reason = "nonfinite isolated to call site 5";
  r.failure->kind = OutcomeKind::nonfinite;
  r.failure->signal.reset();
  r.failure->first_line = "output 0 holds 151 NaN";

  Culprit c;
  c.call_index = 5;
  c.kernel = "cpp_fused_log_2";
  c.kind = "cpp";
  c.phase = "after_launch";
  c.source_nodes = "log_1, mul_3";
  c.why = "introduced 151 NaN in buf7";
  c.args.push_back({"arg11_1", true, stats("arg11_1", 0, 0, -2.0, 7.0), stats("arg11_1", 0, 0, -2.0, 7.0)});
  c.args.push_back({"buf7", false, std::nullopt, stats("buf7", 151, 2, nan, inf)});
  c.producer = Producer{"arg11_1", std::nullopt, "", "graph input 1 (arg11_1) holds -2, log of a negative"};
  r.culprit = c;

  Bisection b;
  b.strategy = "bisect";
  b.status = "found";
  b.predicate = "nonfinite";
  b.variant = "baseline";
  b.call_sites = 12;
  b.planned_runs = 6;
  b.runs = 4;
  b.steps = {{1, 6, "bisect", "reproduces", 1, 1, ""},
             {1, 3, "bisect", "clean", 1, 1, ""},
             {4, 5, "bisect", "reproduces", 1, 1, ""},
             {5, 5, "confirm", "reproduces", 1, 1, ""}};
  r.bisection = b;

  r.builds.count = 0;
  r.builds.cache_hits = 1;
  r.builds.seconds = 0;
  r.builds.items = {{"instrumented", "3f2a9c", true, 0.0, "2.5.1"}};
  r.builds.call_sites_match = true;

  r.repro = Reproducer{"out/repro",
                       {"arg11_1.pt", "buf3.pt"},
                       "aoti-bisect-runner --package out/repro/model.pt2 --inputs out/repro/inputs.pt"};
  return r;
}

std::string attribute(const std::string& xml, const std::string& element, const std::string& name) {
  size_t at = xml.find("<" + element + " ");
  REQUIRE(at != std::string::npos);
  size_t end = xml.find('>', at);
  size_t key = xml.find(" " + name + "=\"", at);
  REQUIRE(key < end);
  size_t start = key + name.size() + 3;
  return xml.substr(start, xml.find('"', start) - start);
}

// Structural check of generated XML: tags nest and close, attribute values are
// quoted and hold no raw '<' or '&' outside entities, text holds no raw '>'
// nor unknown entities. Returns "" when well formed, else what went wrong.
std::string xml_problem(const std::string& xml) {
  auto entity_ok = [&](size_t i) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#9;", "&#10;", "&#13;"}) {
      if (xml.compare(i, std::string(e).size(), e) == 0) {
        return true;
      }
    }
    return false;
  };
  std::vector<std::string> open;
  size_t i = 0;
  while (i < xml.size()) {
    char c = xml[i];
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') {
      return "control byte at " + std::to_string(i);
    }
    if (c == '&' && !entity_ok(i)) {
      return "bad entity at " + std::to_string(i);
    }
    if (c == '>') {
      return "stray '>' at " + std::to_string(i);
    }
    if (c != '<') {
      ++i;
      continue;
    }
    size_t end = i + 1;
    bool in_quote = false;
    for (; end < xml.size() && (in_quote || xml[end] != '>'); ++end) {
      if (xml[end] == '"') {
        in_quote = !in_quote;
      } else if (in_quote && xml[end] == '<') {
        return "raw '<' in attribute at " + std::to_string(end);
      } else if (in_quote && xml[end] == '&' && !entity_ok(end)) {
        return "bad entity in attribute at " + std::to_string(end);
      } else if (in_quote && static_cast<unsigned char>(xml[end]) < 0x20) {
        return "control byte in attribute at " + std::to_string(end);
      }
    }
    if (end >= xml.size()) {
      return "unterminated tag";
    }
    std::string tag = xml.substr(i + 1, end - i - 1);
    std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (tag.front() == '?') {
    } else if (tag.front() == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        return "mismatched </" + tag.substr(1) + ">";
      }
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(name);
    }
    i = end + 1;
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

}  // namespace

TEST_SUITE_BEGIN("report");

TEST_CASE("verdict_name covers every verdict") {
  CHECK(verdict_name(Verdict::running) == "running");
  CHECK(verdict_name(Verdict::clean) == "clean");
  CHECK(verdict_name(Verdict::isolated) == "isolated");
  CHECK(verdict_name(Verdict::not_isolated) == "not_isolated");
  CHECK(verdict_name(Verdict::inconclusive) == "inconclusive");
  CHECK(verdict_name(Verdict::suppressed_by_instrumentation) == "suppressed_by_instrumentation");
  CHECK(verdict_name(Verdict::could_not_test) == "could_not_test");
  CHECK(verdict_name(Verdict::internal_error) == "internal_error");
  CHECK(verdict_name(Verdict::interrupted) == "interrupted");
}

TEST_CASE("report_to_json: contract fields, nulls and non-finite numbers") {
  std::string text = report_to_json(crash_report());
  CHECK(text.rfind("{\n  \"schema_version\": 1,\n", 0) == 0);
  Json j = Json::parse(text);
  CHECK(j["schema_version"] == k_report_schema_version);
  CHECK(j["tool"]["name"] == "aoti-bisect");
  CHECK(j["tool"]["version"] == "0.1.0");
  CHECK(j["command_line"].size() == 5);
  CHECK(j["environment"]["torch_version"] == "2.5.1");
  CHECK(j["environment"]["hip_version"].is_null());
  CHECK(j["package"]["device_key"] == "cuda");
  CHECK(j["inputs"]["tensors"][0]["strides"] == Json::array({16, 1}));
  CHECK(j["inputs"]["tensors"][1]["sha256"] == "bb");
  CHECK(j["reference"].is_null());
  CHECK(j["verdict"] == "not_isolated");
  CHECK(j["failure"]["kind"] == "crash");
  CHECK(j["failure"]["signal"] == 11);
  CHECK(j["failure"]["first_check"] == "the kernel that faulted and the indices it read");
  CHECK(j["matrix"]["chosen"] == "baseline");
  CHECK(j["matrix"]["variants"][1]["env"]["CUDA_LAUNCH_BLOCKING"] == "1");
  CHECK(j["matrix"]["variants"][1]["rate"].get<double>() == doctest::Approx(2.0 / 3.0));
  CHECK(j["error"].is_null());

  REQUIRE(j["runs"].size() == 4);
  CHECK(j["runs"][0]["signal"] == 11);
  CHECK(j["runs"][0]["signal_name"] == "SIGSEGV");
  CHECK(j["runs"][0]["exit_code"].is_null());
  CHECK(j["runs"][0]["outcome"] == "crash");
  CHECK(j["runs"][2]["signal"].is_null());
  CHECK(j["runs"][2]["exit_code"] == 0);
  CHECK(j["runs"][2]["outcome"] == "ok");
  CHECK(j["runs"][2]["first_error_line"].is_null());
  CHECK(j["runs"][1]["env"]["CUDA_LAUNCH_BLOCKING"] == "1");

  const Json& stats = j["runs"][0]["outputs"][0];
  CHECK(stats["min"] == "nan");
  CHECK(stats["max"] == "inf");
  CHECK(stats["mean"].is_null());
  CHECK(stats["nan_count"] == 3);
}

TEST_CASE("report_to_json: -inf, error, and bytes that are not UTF-8") {
  Report r = crash_report();
  r.runs[0].outputs[0].min = -std::numeric_limits<double>::infinity();
  r.runs[0].first_error_line = "bad byte \xff here";
  r.verdict = Verdict::could_not_test;
  r.error = "inputs file 'batch.pt' holds 2 tensors, model 'model' takes 3";
  Json j = Json::parse(report_to_json(r));
  CHECK(j["runs"][0]["outputs"][0]["min"] == "-inf");
  CHECK(j["runs"][0]["first_error_line"] == "bad byte \xEF\xBF\xBD here");
  CHECK(j["verdict"] == "could_not_test");
  CHECK(j["error"] == "inputs file 'batch.pt' holds 2 tensors, model 'model' takes 3");
}

TEST_CASE("report_to_markdown: sections of a crash, escaped cells") {
  Report r = crash_report();
  r.inputs[0].name = "x|y";
  r.matrix[1].env["EXTRA"] = "a|b";
  std::string md = report_to_markdown(r);
  CHECK(md.rfind("# aoti-bisect: `crash`, not isolated\n", 0) == 0);
  for (const char* section : {"## What failed", "## Under which flags", "## Reproduce", "## Inputs",
                              "## Outputs of run `baseline`", "## Environment", "## Package"}) {
    CHECK_MESSAGE(md.find(section) != std::string::npos, section);
  }
  CHECK(md.find("ulprit") == std::string::npos);
  CHECK(md.find("`CUDA error: an illegal memory access was encountered`") != std::string::npos);
  CHECK(md.find("signal 11 (SIGSEGV)") != std::string::npos);
  CHECK(md.find("| `launch_blocking` | `CUDA_LAUNCH_BLOCKING=1 EXTRA=a\\|b` | 2/3 |\n") != std::string::npos);
  CHECK(md.find("| `x\\|y` | float32 | [8, 16] | [16, 1] | cuda:0 |\n") != std::string::npos);
  CHECK(md.find("| `out0` | float32 | [8, 4] | 3 | 1 | nan | inf |\n") != std::string::npos);
  CHECK(md.find("```sh\naoti-bisect-runner --package model.pt2") != std::string::npos);
  CHECK(md.find("- **CUDA:** 12.4\n") != std::string::npos);
  CHECK(md.find("- **OS:** Linux 6.1.0 x86_64 (Debian 12.11)\n") != std::string::npos);
  CHECK(md.find("HIP") == std::string::npos);
  CHECK(md.find("`0123456789ab`") != std::string::npos);
  CHECK(md.find("0123456789abcdef0123") == std::string::npos);
  CHECK(md.find("fedcba") != std::string::npos);  // inputs file sha, short
  CHECK(md.find("\"aa\"") == std::string::npos);
}

TEST_CASE("report_to_markdown: error line with backticks and escapes stays one code span") {
  Report r = crash_report();
  r.failure->first_line = "\x1b[31massert `idx < n` failed\x1b[0m\nsecond line";
  std::string md = report_to_markdown(r);
  CHECK(md.find("``assert `idx < n` failed second line``") != std::string::npos);
  CHECK(md.find('\x1b') == std::string::npos);
}

TEST_CASE("report_to_markdown: free text escapes Markdown but not intraword underscores") {
  Report r = crash_report();
  r.verdict_reason = "see *all* runs [x] <b> _here_ snake_case";
  std::string md = report_to_markdown(r);
  CHECK(md.find("**Verdict:** `not_isolated`: see \\*all\\* runs \\[x\\] \\<b\\> \\_here\\_ snake_case  \n") !=
        std::string::npos);
}

TEST_CASE("report_to_markdown: a clean verdict is short") {
  std::string clean = report_to_markdown(clean_report());
  std::string crash = report_to_markdown(crash_report());
  CHECK(clean.rfind("# aoti-bisect: clean, no failure reproduced\n", 0) == 0);
  CHECK(clean.find("## What failed") == std::string::npos);
  CHECK(clean.find("## Reproduce") == std::string::npos);
  CHECK(clean.find("## Inputs") == std::string::npos);
  CHECK(clean.find("| `launch_blocking` | `CUDA_LAUNCH_BLOCKING=1` | 0/3 |") != std::string::npos);
  CHECK(clean.find("**Environment:** tool aoti-bisect 0.1.0 · torch 2.5.1 ·") != std::string::npos);
  CHECK(clean.find("**Package:** `model.pt2` (sha256 `0123456789ab`)") != std::string::npos);
  CHECK(fixture::count(clean, "\n") * 2 < fixture::count(crash, "\n"));
}

TEST_CASE("report_to_junit: one testcase per run plus the verdict, counts and escaping") {
  SUBCASE("crash") {
    Report r = crash_report();
    r.runs[1].first_error_line = "index <0 & \"x\" 'y' \x01";
    std::string xml = report_to_junit(r);
    CHECK(xml_problem(xml) == "");
    CHECK(fixture::count(xml, "<testcase ") == r.runs.size() + 1);
    CHECK(attribute(xml, "testsuite", "name") == "aoti-bisect: flag matrix");
    CHECK(attribute(xml, "testsuite", "tests") == "4");
    CHECK(attribute(xml, "testsuite", "failures") == "3");  // 3 failing runs; the verdict is its own suite
    CHECK(attribute(xml, "testsuite", "errors") == "0");
    CHECK(xml.find("<testsuite name=\"aoti-bisect: verdict\" tests=\"1\" failures=\"1\" errors=\"0\"") !=
          std::string::npos);
    CHECK(fixture::count(xml, "<failure ") == 4);
    CHECK(xml.find("classname=\"aoti-bisect.model\" name=\"launch_blocking.2\" time=\"1.250\"/>") != std::string::npos);
    CHECK(xml.find("message=\"index &lt;0 &amp; &quot;x&quot; &apos;y&apos; \\x01\"") != std::string::npos);
    CHECK(xml.find("<failure type=\"not_isolated\"") != std::string::npos);
  }
  SUBCASE("clean") {
    std::string xml = report_to_junit(clean_report());
    CHECK(xml_problem(xml) == "");
    CHECK(attribute(xml, "testsuite", "failures") == "0");
    CHECK(xml.find("name=\"verdict\" time=\"5.300\"/>") != std::string::npos);
  }
  SUBCASE("could not test is an error, not a failure") {
    Report r = crash_report();
    r.runs.clear();
    r.verdict = Verdict::could_not_test;
    r.failure.reset();
    r.error = "package 'm<1>.pt2' is not a zip & cannot be read";
    std::string xml = report_to_junit(r);
    CHECK(xml_problem(xml) == "");
    CHECK(fixture::count(xml, "<testcase ") == 1);
    CHECK(attribute(xml, "testsuite", "failures") == "0");
    CHECK(attribute(xml, "testsuite", "errors") == "1");
    CHECK(xml.find("<error type=\"could_not_test\" message=\"package &apos;m&lt;1&gt;.pt2&apos; is not a zip "
                   "&amp; cannot be read\"") != std::string::npos);
  }
}

TEST_CASE("report_to_console: summary lines, color only when asked") {
  Report r = crash_report();
  r.failure->first_line = "\x1b[31mCUDA error\x1b[0m: an illegal memory access";
  std::string plain = report_to_console(r, false);
  CHECK(plain.find('\x1b') == std::string::npos);
  CHECK(plain.rfind("verdict: not_isolated: crash reproduced", 0) == 0);
  CHECK(plain.find("  failure:     crash, signal 11 (SIGSEGV)\n") != std::string::npos);
  CHECK(plain.find("  first line:  CUDA error: an illegal memory access\n") != std::string::npos);
  CHECK(plain.find("  first check: the kernel that faulted") != std::string::npos);
  CHECK(plain.find("  baseline          1/1 reproduced\n") != std::string::npos);
  CHECK(plain.find("  launch_blocking   2/3 reproduced  CUDA_LAUNCH_BLOCKING=1\n") != std::string::npos);
  CHECK(plain.find("aoti-bisect-runner --package model.pt2") != std::string::npos);
  CHECK(plain.find("report.json") == std::string::npos);

  std::string colored = report_to_console(r, true);
  CHECK(colored.find("\x1b[31mnot_isolated\x1b[0m") != std::string::npos);
  CHECK(report_to_console(clean_report(), true).find("\x1b[32mclean\x1b[0m") != std::string::npos);
  CHECK(report_to_console(clean_report(), false).find('\x1b') == std::string::npos);
}

TEST_CASE("report_to_json: culprit, bisection, builds and reproducer") {
  Json j = Json::parse(report_to_json(culprit_report()));
  const Json& c = j["culprit"];
  CHECK(c["call_index"] == 5);
  CHECK(c["kernel"] == "cpp_fused_log_2");
  CHECK(c["kind"] == "cpp");
  CHECK(c["phase"] == "after_launch");
  CHECK(c["source_nodes"] == "log_1, mul_3");
  CHECK(c["why"] == "introduced 151 NaN in buf7");
  REQUIRE(c["args"].size() == 2);
  CHECK(c["args"][0]["tensor"] == "arg11_1");
  CHECK(c["args"][0]["initialized"] == true);
  CHECK(c["args"][0]["before"]["max"] == 7.0);
  CHECK(c["args"][0]["after"]["nan_count"] == 0);
  CHECK(c["args"][1]["initialized"] == false);
  CHECK(c["args"][1]["before"].is_null());
  CHECK(c["args"][1]["after"]["nan_count"] == 151);
  CHECK(c["args"][1]["after"]["inf_count"] == 2);
  CHECK(c["args"][1]["after"]["min"] == "nan");
  CHECK(c["args"][1]["after"]["max"] == "inf");
  // Same shape as the run outputs' statistics.
  std::vector<std::string> stat_keys;
  std::vector<std::string> output_keys;
  for (const auto& [key, value] : c["args"][1]["after"].items()) {
    stat_keys.push_back(key);
  }
  for (const auto& [key, value] : j["runs"][0]["outputs"][0].items()) {
    output_keys.push_back(key);
  }
  CHECK(stat_keys == output_keys);
  CHECK(c["producer"]["tensor"] == "arg11_1");
  CHECK(c["producer"]["call_index"].is_null());
  CHECK(c["producer"]["kernel"].is_null());
  CHECK(c["producer"]["why"] == "graph input 1 (arg11_1) holds -2, log of a negative");

  const Json& b = j["bisection"];
  CHECK(b["strategy"] == "bisect");
  CHECK(b["status"] == "found");
  CHECK(b["predicate"] == "nonfinite");
  CHECK(b["variant"] == "baseline");
  CHECK(b["call_sites"] == 12);
  CHECK(b["planned_runs"] == 6);
  CHECK(b["runs"] == 4);
  CHECK(b["message"].is_null());
  REQUIRE(b["steps"].size() == 4);
  CHECK(b["steps"][1]["lo"] == 1);
  CHECK(b["steps"][1]["hi"] == 3);
  CHECK(b["steps"][1]["verdict"] == "clean");
  CHECK(b["steps"][3]["purpose"] == "confirm");
  CHECK(b["steps"][1]["note"].is_null());

  CHECK(j["builds"]["count"] == 0);
  CHECK(j["builds"]["cache_hits"] == 1);
  CHECK(j["builds"]["items"][0]["purpose"] == "instrumented");
  CHECK(j["builds"]["items"][0]["cache_hit"] == true);
  CHECK(j["builds"]["items"][0]["torch_version"] == "2.5.1");
  CHECK(j["builds"]["call_sites_match"] == true);
  CHECK(j["builds"]["note"].is_null());

  CHECK(j["repro"]["dir"] == "out/repro");
  CHECK(j["repro"]["files"] == Json::array({"arg11_1.pt", "buf3.pt"}));
  CHECK(j["repro"]["command"].get<std::string>().rfind("aoti-bisect-runner --package out/repro", 0) == 0);

  // Field order: the culprit follows the failure.
  std::vector<std::string> keys;
  const auto ordered = nlohmann::ordered_json::parse(report_to_json(culprit_report()));
  for (const auto& [key, value] : ordered.items()) {
    keys.push_back(key);
  }
  auto at = [&](const std::string& k) { return std::find(keys.begin(), keys.end(), k) - keys.begin(); };
  CHECK(at("culprit") == at("failure") + 1);
  CHECK(at("bisection") == at("culprit") + 1);
}

TEST_CASE("report_to_json: without a search, culprit and bisection are null and builds are zero") {
  Json j = Json::parse(report_to_json(crash_report()));
  REQUIRE(j.contains("culprit"));
  CHECK(j["culprit"].is_null());
  CHECK(j["bisection"].is_null());
  CHECK(j["repro"].is_null());
  CHECK(j["builds"]["count"] == 0);
  CHECK(j["builds"]["cache_hits"] == 0);
  CHECK(j["builds"]["items"] == Json::array());
  CHECK(j["builds"]["call_sites_match"].is_null());

  Report r = crash_report();
  r.culprit = culprit_report().culprit;
  r.culprit->producer = Producer{"buf3", 3, "triton_poi_fused_0", "wrote 7 NaN"};
  Json k = Json::parse(report_to_json(r));
  CHECK(k["culprit"]["producer"]["call_index"] == 3);
  CHECK(k["culprit"]["producer"]["kernel"] == "triton_poi_fused_0");
}

TEST_CASE("report_to_markdown: a bad parameter is named as one, not as a graph input") {
  Report r = culprit_report();
  r.culprit->producer->call_index.reset();
  r.culprit->producer->tensor = "ln_weight";
  r.culprit->producer->why = "parameter ln.weight (ln_weight) holds 1 NaN and 0 Inf before the launch";
  std::string md = report_to_markdown(r);
  CHECK(md.find("**Bad input from:** parameter ln.weight (ln_weight) holds 1 NaN") != std::string::npos);
  CHECK(md.find("graph input `ln_weight`") == std::string::npos);
  r.culprit->producer->why = "holds 7, outside 5 rows";
  CHECK(report_to_markdown(r).find("**Bad input from:** graph input `ln_weight`: holds 7, outside 5 rows") !=
        std::string::npos);
}

TEST_CASE("report_to_markdown: the culprit leads, then how it was found") {
  std::string md = report_to_markdown(culprit_report());
  CHECK(md.rfind("# aoti-bisect: `nonfinite`, isolated\n", 0) == 0);
  size_t culprit = md.find("## Culprit\n");
  size_t found = md.find("## How it was found\n");
  size_t failed = md.find("## What failed\n");
  REQUIRE(culprit != std::string::npos);
  REQUIRE(found != std::string::npos);
  REQUIRE(failed != std::string::npos);
  CHECK(culprit < found);
  CHECK(found < failed);
  // Nothing but the title and the verdict lines before the culprit.
  CHECK(md.find("## ") == culprit);
  CHECK(md.find("## Bisection") == std::string::npos);

  CHECK(md.find("**Call site 5** `cpp_fused_log_2` (cpp), graph nodes `log_1, mul_3`; "
                "bad values after its launch  \n") != std::string::npos);
  CHECK(md.find("**Why:** introduced 151 NaN in buf7  \n") != std::string::npos);
  CHECK(md.find("**Bad input from:** graph input 1 (arg11_1) holds -2, log of a negative") != std::string::npos);
  CHECK(md.find("| `arg11_1` | yes | 0 / 0 / -2 / 7 | 0 / 0 / -2 / 7 |\n") != std::string::npos);
  CHECK(md.find("| `buf7` | **no** | — | 151 / 2 / nan / inf |\n") != std::string::npos);

  CHECK(md.find("- **Search:** bisect over 12 call sites for `nonfinite` under variant `baseline`: found, "
                "4 runs of 6 planned\n") != std::string::npos);
  // One run, one call site: singular (the search that reads the job's first run makes only its evidence run).
  Report single = culprit_report();
  single.bisection->runs = 1;
  single.bisection->call_sites = 1;
  CHECK(report_to_markdown(single).find("- **Search:** bisect over 1 call site for `nonfinite` under variant "
                                        "`baseline`: found, 1 run of 6 planned\n") != std::string::npos);
  CHECK(md.find("| 1–3 | bisect | clean | 1 |\n") != std::string::npos);
  CHECK(md.find("| 5 | confirm | reproduces | 1 |\n") != std::string::npos);
  CHECK(md.find("- **Builds:** no build run, 1 from the cache (instrumented: from the cache); call sites match the "
                "original\n") != std::string::npos);
  CHECK(md.find("- **Reproducer:** `out/repro`: `arg11_1.pt`, `buf3.pt`\n") != std::string::npos);
  CHECK(md.find("```sh\naoti-bisect-runner --package out/repro/model.pt2") != std::string::npos);
}

TEST_CASE("report_to_markdown: long argument lists and searches are cut, the telling rows kept") {
  Report r = culprit_report();
  std::vector<ProbeStats> args;
  for (int i = 0; i < 15; ++i) {
    std::string name = "buf" + std::to_string(100 + i);
    args.push_back({name, true, stats(name, 0, 0, 0.0, 1.0), stats(name, 0, 0, 0.0, 1.0)});
  }
  args[13].after->nan_count = 9;  // past the 12th row, but it is what matters
  r.culprit->args = args;
  std::vector<BisectionStep> steps;
  for (int i = 1; i <= 30; ++i) {
    steps.push_back({i, i, "linear", i == 30 ? "reproduces" : "clean", 2, i == 7 ? 1 : 2, ""});
  }
  r.bisection->steps = steps;
  r.builds = {};
  r.builds.count = 1;
  r.builds.seconds = 12.34;
  r.builds.items = {{"instrumented", "k", false, 12.34, ""}};
  std::string md = report_to_markdown(r);

  CHECK(fixture::count(md, "| `buf1") == 12);
  CHECK(md.find("| `buf113` | yes | 0 / 0 / 0 / 1 | 9 / 0 / 0 / 1 |\n") != std::string::npos);
  CHECK(md.find("`buf111`") == std::string::npos);  // the last plain rows give way
  CHECK(md.find("`buf110`") != std::string::npos);
  CHECK(md.find("\n... and 3 more arguments, all in `report.json`.\n") != std::string::npos);

  CHECK(fixture::count(md, " | linear | ") == 20);
  CHECK(md.find("| 10 | linear | clean | 2 |\n") != std::string::npos);
  CHECK(md.find("| 11 | linear |") == std::string::npos);
  CHECK(md.find("| ... | 10 more steps |  |  |\n") != std::string::npos);
  CHECK(md.find("| 30 | linear | reproduces | 2 |\n") != std::string::npos);
  CHECK(md.find("| 7 | linear | clean | 2 (1 agree) |\n") != std::string::npos);
  CHECK(md.find("- **Builds:** 1 build run, 12.3 s (instrumented: 1 run)\n") != std::string::npos);
}

TEST_CASE("report_to_markdown: a search without a culprit follows what failed") {
  Report r = culprit_report();
  r.culprit.reset();
  r.verdict = Verdict::inconclusive;
  r.bisection->status = "inconclusive";
  r.bisection->message = "sites 4-5 reproduced in 1 of 3 runs";
  std::string md = report_to_markdown(r);
  CHECK(md.find("ulprit") == std::string::npos);
  CHECK(md.find("## How it was found") == std::string::npos);
  size_t search = md.find("## Bisection\n");
  REQUIRE(search != std::string::npos);
  CHECK(md.find("## What failed") < search);
  CHECK(md.find(": inconclusive, 4 runs of 6 planned\n") != std::string::npos);
  CHECK(md.find("- **Message:** sites 4-5 reproduced in 1 of 3 runs\n") != std::string::npos);
}

TEST_CASE("report_to_console: culprit and bisection lines") {
  std::string plain = report_to_console(culprit_report(), false);
  CHECK(plain.rfind("verdict: isolated: nonfinite isolated to call site 5\n"
                    "  culprit:     call site 5 cpp_fused_log_2 (cpp): introduced 151 NaN in buf7\n"
                    "  bisection:   bisect, 4 runs of 6 planned, no build run, 1 from the cache\n",
                    0) == 0);
  CHECK(plain.find('\x1b') == std::string::npos);

  Report r = culprit_report();
  r.builds = {};
  r.builds.count = 2;
  r.builds.cache_hits = 1;
  r.builds.seconds = 30.06;
  r.bisection->status = "inconclusive";
  r.culprit.reset();
  std::string other = report_to_console(r, false);
  CHECK(other.find("culprit:") == std::string::npos);
  CHECK(other.find(
            "  bisection:   bisect, inconclusive, 4 runs of 6 planned, 2 builds run, 30.1 s, 1 from the cache\n") !=
        std::string::npos);
  CHECK(report_to_console(crash_report(), false).find("bisection:") == std::string::npos);
}

TEST_CASE("the runs are counted by the part of the job that ran them, the same in every sink") {
  Report r = culprit_report();
  r.runs.clear();
  for (const char* id : {"baseline", "bisect.1.all", "bisect.2.half", "repeat.1", "compare.1"}) {
    RunRecord run;
    run.id = id;
    run.group = id[0] == 'b' && id[1] == 'i' ? "search" : id[0] == 'c' ? "compare" : "matrix";
    r.runs.push_back(run);
  }
  CHECK(aoti_bisect::report_text::runs_text(r) ==
        "5 runs (2 of the flag matrix, 2 of the search, 1 to compare outputs)");
  std::string xml = report_to_junit(r);
  CHECK(xml_problem(xml) == "");
  CHECK(xml.find("<testsuite name=\"aoti-bisect: flag matrix\" tests=\"2\"") != std::string::npos);
  CHECK(xml.find("<testsuite name=\"aoti-bisect: search\" tests=\"2\"") != std::string::npos);
  CHECK(xml.find("<testsuite name=\"aoti-bisect: compare\" tests=\"1\"") != std::string::npos);
  CHECK(xml.find("<testsuite name=\"aoti-bisect: verdict\" tests=\"1\"") != std::string::npos);
  CHECK(report_to_markdown(r).find("_5 runs (2 of the flag matrix, 2 of the search, 1 to compare outputs) in ") !=
        std::string::npos);
  CHECK(report_to_console(r, false).find(
            "\nran: 5 runs (2 of the flag matrix, 2 of the search, 1 to compare outputs) in ") != std::string::npos);
  auto j = nlohmann::json::parse(report_to_json(r));
  CHECK(j["run_counts"]["matrix"] == 2);
  CHECK(j["run_counts"]["search"] == 2);
  CHECK(j["runs"][1]["group"] == "search");
}

TEST_CASE("report_to_junit: the verdict names the culprit") {
  std::string xml = report_to_junit(culprit_report());
  CHECK(xml_problem(xml) == "");
  CHECK(xml.find("<failure type=\"isolated\" message=\"culprit: call site 5 cpp_fused_log_2 (cpp): introduced 151 "
                 "NaN in buf7\">reason: nonfinite isolated to call site 5&#10;failure: nonfinite") !=
        std::string::npos);
  CHECK(xml.find("bad input from: graph input arg11_1: graph input 1 (arg11_1) holds -2") != std::string::npos);
  CHECK(xml.find("bisection: bisect, 4 runs of 6 planned, no build run, 1 from the cache") != std::string::npos);
  CHECK(report_to_junit(crash_report()).find("culprit") == std::string::npos);
}

TEST_CASE("write_reports: creates the directory, writes atomically, junit on request") {
  Report r = crash_report();
  write_reports(r, "out/reports", true);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator("out/reports")) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"junit.xml", "report.json", "report.md"});
  CHECK(Json::parse(read_file("out/reports/report.json", "report"))["verdict"] == "not_isolated");
  CHECK(read_file("out/reports/report.md", "report") == report_to_markdown(r));

  write_reports(clean_report(), "out/plain", false);
  CHECK(fs::exists("out/plain/report.json"));
  CHECK(fs::exists("out/plain/report.md"));
  CHECK_FALSE(fs::exists("out/plain/junit.xml"));
  for (const auto& entry : fs::directory_iterator("out/plain")) {
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
  }
}

TEST_CASE("write_reports: a file where the directory should be is an error") {
  write_file_atomic("blocker", "x");
  CHECK_THROWS_AS(write_reports(crash_report(), "blocker/reports", false), Error);
}

TEST_SUITE_END();
