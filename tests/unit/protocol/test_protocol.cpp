// lib/protocol: the contract between the driver and the runner. Every event
// kind round-trips through its name and through an events file; a line that
// is not a well-formed event is rejected; probe plans and the values the
// events carry round-trip, and malformed ones are refused with one line.

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.hpp"
#include "protocol/events.hpp"
#include "protocol/probe_plan.hpp"
#include "protocol/runner.hpp"
#include "protocol/values.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;
using nlohmann::json;

TEST_SUITE_BEGIN("protocol");

TEST_CASE("protocol: every event kind has one name, and the name gives the kind back") {
  std::set<std::string> names;
  int kinds = 0;
  for (const EventInfo& e : event_table()) {
    CAPTURE(e.name);
    CHECK(event_name(e.kind) == e.name);
    if (e.kind != EventKind::unknown) {
      CHECK(event_kind_from_name(e.name) == e.kind);
      CHECK(event_kind(json{{"event", std::string(e.name)}}) == e.kind);
    }
    CHECK(names.insert(std::string(e.name)).second);
    ++kinds;
  }
  CHECK(kinds == static_cast<int>(EventKind::unknown));  // every kind but `unknown`, a line this version does not know
  CHECK(event_name(EventKind::unknown) == "unknown");
  CHECK(event_kind_from_name("no_such_event") == EventKind::unknown);
  CHECK(event_kind(json{{"event", 3}}) == EventKind::unknown);
  CHECK(event_kind(json{{"kind", "start"}}) == EventKind::unknown);
  CHECK(event_kind(json::array({"start"})) == EventKind::unknown);
}

TEST_CASE("protocol: every event kind round-trips through an events file, fields and time included") {
  fs::path dir = fs::temp_directory_path() / ("aoti-bisect-protocol-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path file = dir / "events.jsonl";
  std::vector<EventKind> written;
  {
    EventWriter w(file);
    for (const EventInfo& e : event_table()) {
      if (e.kind != EventKind::unknown) {
        w.emit(e.kind, {{"index", static_cast<int>(e.kind)}, {"text", "a \"quoted\" line\nand another"}});
        written.push_back(e.kind);
      }
    }
  }
  auto events = read_events(file);
  REQUIRE(events.size() == written.size());
  for (size_t i = 0; i < events.size(); ++i) {
    CAPTURE(i);
    CHECK(event_kind(events[i]) == written[i]);
    CHECK(events[i]["index"] == static_cast<int>(written[i]));
    CHECK(events[i]["text"] == "a \"quoted\" line\nand another");
    CHECK(events[i]["t"].get<double>() >= 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("protocol: malformed lines are rejected, a torn last line is skipped, the rest is kept") {
  fs::path dir = fs::temp_directory_path() / ("aoti-bisect-protocol-bad-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path file = dir / "events.jsonl";
  {
    std::ofstream out(file);
    out << R"({"event": "start", "t": 0})" << "\n"
        << "not json at all\n"
        << R"(["event", "outputs"])" << "\n"           // not an object
        << R"({"kind": "outputs"})" << "\n"            // no "event"
        << "\n"
        << R"({"event": "outputs", "tensors": []})" << "\n"
        << R"({"event": "done", "t": 0.)";             // torn by a crash mid-write
  }
  auto events = read_events(file);
  REQUIRE(events.size() == 2);
  CHECK(event_kind(events[0]) == EventKind::start);
  CHECK(event_kind(events[1]) == EventKind::outputs);
  CHECK(read_events(dir / "missing.jsonl").empty());
  fs::remove_all(dir);
}

TEST_CASE("protocol: fields written as text read back as the json objects they stand for") {
  TensorStats a;
  a.name = "buf\"7\"\n";
  a.dtype = "float32";
  a.shape = {2, 3};
  a.numel = 6;
  a.nan_count = 1;
  a.min = -1.5;
  a.max = std::numeric_limits<double>::infinity();
  a.checksum = "00ff00ff00ff00ff";
  TensorStats b = a;
  b.min.reset();
  b.max = 3.0;
  b.mean = std::nan("");
  b.first_nonfinite = {1, 2};
  b.layout = "mkldnn";
  b.opaque = true;
  b.unwritten = 4;
  for (const TensorStats& t : {a, b}) {
    std::string text;
    append_json(text, t);
    CAPTURE(text);
    CHECK(json::parse(text) == to_json(t));
    CHECK(tensor_stats_from_json(json::parse(text)).checksum == t.checksum);
  }
  JsonFields f;
  f.num("site", int64_t{3}).str("kernel", "k\t\x01").num("clock", 1.0).num("x", 0.1).flag("on", false).null("n");
  f.ints("shape", {}).strs("tensors", {"buf1", "a\\b"}).raw("stats", "{\"a\":1}").num("neg", -std::numeric_limits<double>::infinity());
  json j = json::parse("{" + f.text() + "}");
  CHECK(j == json{{"site", 3}, {"kernel", "k\t\x01"}, {"clock", 1.0}, {"x", 0.1}, {"on", false}, {"n", nullptr},
                  {"shape", json::array()}, {"tensors", {"buf1", "a\\b"}}, {"stats", {{"a", 1}}}, {"neg", "-inf"}});
  CHECK(j["clock"].is_number_float());
}

TEST_CASE("protocol: the events of a killed writer survive it; its file reads and trims to its lines") {
  fs::path dir = fs::temp_directory_path() / ("aoti-bisect-protocol-kill-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path killed = dir / "killed.jsonl", crashed = dir / "crashed.jsonl";
  for (const fs::path& file : {killed, crashed}) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      EventWriter w(file);
      JsonFields f;
      for (int i = 0; i < 40000; ++i) {  // past the first mapping's megabyte
        f.clear();
        f.num("site", int64_t{i}).str("kernel", "cpp_fused_tanh_0");
        w.emit(EventKind::site_begin, f);
      }
      w.emit(EventKind::run_begin, {{"last", true}});
      if (file == crashed) {
        const char line[] = "{\"event\":\"signal\",\"signal\":11}\n";
        EventWriter::append_from_signal(line, sizeof line - 1);
        ::_exit(3);
      }
      ::kill(::getpid(), SIGKILL);  // no destructor, no trim
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  // SIGKILL: the lines are there, then the mapping's zeros.
  CHECK(fs::file_size(killed) % 4096 == 0);
  auto events = read_events(killed);
  REQUIRE(events.size() == 40001);
  CHECK(events[39999]["site"] == 39999);
  CHECK(event_kind(events.back()) == EventKind::run_begin);
  finish_events_file(killed);
  std::ifstream in(killed, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  CHECK(text.size() == fs::file_size(killed));
  CHECK(text.back() == '\n');
  CHECK(text.find('\0') == std::string::npos);
  CHECK(read_events(killed).size() == 40001);
  // A fatal signal's line: appended, and the file trimmed by the handler.
  auto crash = read_events(crashed);
  REQUIRE(crash.size() == 40002);
  CHECK(event_kind(crash.back()) == EventKind::signal);
  std::ifstream cin(crashed, std::ios::binary);
  std::string ctext((std::istreambuf_iterator<char>(cin)), {});
  CHECK(ctext.find('\0') == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("protocol: a probe plan round-trips; a malformed one is refused with one line") {
  ProbePlan plan;
  plan.default_mode = ProbeMode::trace;
  plan.ranges = {{1, 16, ProbeMode::stats}, {5, 5, ProbeMode::save}, {17, 40, ProbeMode::sync}};
  plan.save_dir = "/tmp/saved";
  ProbePlan back = probe_plan_from_json(json::parse(to_json(plan).dump()));
  CHECK(back.summary() == plan.summary());
  CHECK(back.summary() == "trace; stats 1-16; save 5; sync 17-40");
  CHECK(back.save_dir == plan.save_dir);
  CHECK_FALSE(back.save_after);
  plan.save_after = true;
  CHECK(probe_plan_from_json(json::parse(to_json(plan).dump())).save_after);
  CHECK(back.mode_for(5) == ProbeMode::save);
  CHECK(back.mode_for(6) == ProbeMode::stats);
  CHECK(back.mode_for(41) == ProbeMode::trace);
  for (ProbeMode m : {ProbeMode::off, ProbeMode::trace, ProbeMode::sync, ProbeMode::stats, ProbeMode::save}) {
    CHECK(probe_mode_from_name(probe_mode_name(m)) == m);
  }
  CHECK_FALSE(probe_mode_from_name("everything").has_value());

  auto refused = [](const std::string& text) {
    try {
      probe_plan_from_json(json::parse(text));
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused(R"([1, 2])") == "probe plan: expected a JSON object");
  CHECK(refused(R"({"default": "loud"})") == "probe plan: unknown mode \"loud\"");
  CHECK(refused(R"({"ranges": [{"from": 1, "to": 2, "mode": 3}]})") == "probe plan: unknown mode 3");
  CHECK(refused(R"({"ranges": {"from": 1}})") == "probe plan: 'ranges' must be a list, got {\"from\":1}");
  CHECK(refused(R"({"ranges": [7]})") == "probe plan: a range needs call sites 'from' <= 'to', each at least 1, got 7");
  CHECK(refused(R"({"ranges": [{"from": 0, "to": 2}]})").find("each at least 1") != std::string::npos);
  CHECK(refused(R"({"ranges": [{"from": 5, "to": 2}]})").find("'from' <= 'to'") != std::string::npos);
  CHECK(refused(R"({"ranges": [{"from": "1", "to": 2}]})").find("each at least 1") != std::string::npos);
  CHECK(refused(R"({"save_dir": 4})") == "probe plan: 'save_dir' must be a string, got 4");
  CHECK(refused(R"({"save_after": "yes"})") == "probe plan: 'save_after' must be true or false, got \"yes\"");
}

TEST_CASE("protocol: the values events carry round-trip, non-finite numbers as text") {
  TensorStats s;
  s.name = "buf3";
  s.dtype = "float16";
  s.shape = {2, 3};
  s.numel = 6;
  s.nan_count = 1;
  s.inf_count = 2;
  s.min = -std::numeric_limits<double>::infinity();
  s.max = 4.5;
  s.mean = std::nullopt;
  s.checksum = "0123456789abcdef";
  s.layout = "mkldnn";
  TensorStats back = tensor_stats_from_json(json::parse(to_json(s).dump()));
  CHECK(back.name == s.name);
  CHECK(back.dtype == s.dtype);
  CHECK(back.shape == s.shape);
  CHECK(back.numel == 6);
  CHECK(back.nan_count == 1);
  CHECK(back.inf_count == 2);
  REQUIRE(back.min.has_value());
  CHECK(std::isinf(*back.min));
  CHECK(*back.min < 0);
  CHECK(back.max == 4.5);
  CHECK_FALSE(back.mean.has_value());
  CHECK(back.checksum == s.checksum);
  CHECK(back.layout == "mkldnn");

  TensorInfo t;
  t.name = "input0";
  t.dtype = "int64";
  t.shape = {8};
  t.strides = {1};
  t.device = "cpu";
  t.sha256 = std::string(64, 'a');
  t.storage_offset = 3;
  t.argument = "attention_mask";
  TensorInfo tb = tensor_info_from_json(json::parse(to_json(t).dump()));
  CHECK(tb.name == t.name);
  CHECK(tb.shape == t.shape);
  CHECK(tb.strides == t.strides);
  CHECK(tb.storage_offset == 3);
  CHECK(tb.argument == "attention_mask");
  CHECK(tb.sha256 == t.sha256);

  Comparison c;
  c.within_tolerance = false;
  c.atol = 1e-5;
  c.rtol = 1e-4;
  c.max_abs_error = std::numeric_limits<double>::infinity();
  c.mismatched = 7;
  c.total = 64;
  c.worst_output = "output1";
  c.note = "NaN positions differ in output 0";
  Comparison cb = comparison_from_json(json::parse(to_json(c).dump()));
  CHECK_FALSE(cb.within_tolerance);
  CHECK(std::isinf(cb.max_abs_error));
  CHECK(cb.mismatched == 7);
  CHECK(cb.total == 64);
  CHECK(cb.worst_output == "output1");
  CHECK(cb.note == c.note);

  ToleranceTable table;
  table.by_dtype["float16"] = {1e-3, 5e-3};
  table.by_dtype["default"] = {1e-5, 1e-4};
  ToleranceTable tt = tolerance_table_from_json(json::parse(to_json(table).dump()));
  CHECK(tt.for_dtype("float16").atol == 1e-3);
  CHECK(tt.for_dtype("bfloat16").rtol == 1e-4);  // the default
  CHECK_THROWS_AS(tolerance_table_from_json(json::parse(R"({"float16": 3})")), Error);
  CHECK_THROWS_AS(tolerance_table_from_json(json::parse(R"([1])")), Error);
}

TEST_SUITE_END();
