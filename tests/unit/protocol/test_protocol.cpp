// lib/protocol: the contract between the driver and the runner. Every event
// kind round-trips through its name and through an events file; a line that
// is not a well-formed event is rejected; probe plans and the values the
// events carry round-trip, and malformed ones are refused with one line.

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "protocol/events.hpp"
#include "protocol/probe_plan.hpp"
#include "protocol/runner.hpp"
#include "protocol/site_event.hpp"
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
  auto events = Events::read(file);
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
    out << R"({"event": "start", "t": 0})"
        << "\n"
        << "not json at all\n"
        << R"(["event", "outputs"])"
        << "\n"  // not an object
        << R"({"kind": "outputs"})"
        << "\n"  // no "event"
        << R"({"event":"probe","t":0.5,"site":3,"tensor":)"
        << "\n"  // the probes' form, cut short
        << "\n"
        << R"({"event": "outputs", "tensors": []})"
        << "\n"
        << R"({"event": "done", "t": 0.)";  // torn by a crash mid-write
  }
  auto events = Events::read(file);
  REQUIRE(events.size() == 2);
  CHECK(event_kind(events[0]) == EventKind::start);
  CHECK(event_kind(events[1]) == EventKind::outputs);
  CHECK(Events::read(dir / "missing.jsonl").empty());
  fs::remove_all(dir);
}

TEST_CASE("protocol: events are held as text, indexed by kind and call site, and read by kind") {
  Events events;
  CHECK(events.push_line(R"({"event":"site_begin","t":0.25,"site":12,"kernel":"k"})"));
  CHECK(events.push_line(R"({"event":"probe","t":0.5,"site":12,"phase":"before","stats":{"site":99}})"));
  CHECK(events.push_line(R"({"event":"probe","t":1e-06,"site":-3,"phase":"after"})"));
  CHECK(events.push_line(R"({"site":7,"event":"site_end","t":1})"));  // another key order: parsed
  CHECK(events.push_line(R"({"event":"done","t":2})"));
  CHECK_FALSE(events.push_line(R"({"event":"probe","t":0.5,"site":3,)"));
  CHECK_FALSE(events.push_line("[1, 2]"));
  REQUIRE(events.size() == 5);
  CHECK(events.kind(0) == EventKind::site_begin);
  CHECK(events.site(0) == 12);
  CHECK(events.site(2) == -3);
  CHECK(events.kind(3) == EventKind::site_end);
  CHECK(events.site(3) == 7);
  CHECK(events.site(4) == 0);
  CHECK(events[1]["stats"]["site"] == 99);
  std::vector<std::string> phases;
  for (const auto& e : events.of({EventKind::probe})) {
    phases.push_back(e.value("phase", ""));
  }
  CHECK(phases == std::vector<std::string>{"before", "after"});
  int at_12 = 0;
  for (const auto& e : events.of({EventKind::probe, EventKind::site_begin}, 12)) {
    CHECK(e["site"] == 12);
    ++at_12;
  }
  CHECK(at_12 == 2);
  CHECK(events.last(EventKind::probe)["phase"] == "after");
  CHECK(events.last(EventKind::error).is_null());
  Events only = events.only({EventKind::site_end, EventKind::done});
  REQUIRE(only.size() == 2);
  CHECK(only.kind(0) == EventKind::site_end);
  CHECK(only.back()["event"] == "done");
  size_t all = 0;
  for (const auto& e : events) {
    CHECK(e.contains("event"));
    ++all;
  }
  CHECK(all == 5);
  events.clear();
  CHECK(events.empty());
  CHECK(events.text_bytes() == 0);
}

TEST_CASE("protocol: a call site's event read without JSON objects holds what the JSON reading gives") {
  // The probes' form, and the same fields in another order, with values
  // written as NaN/Inf strings, a null, unknown fields holding arrays and
  // objects (skipped), and escapes.
  const std::vector<std::string> lines = {
      R"({"event":"probe","t":0.1,"site":16,"kernel":"cpp_fused_tanh_0","phase":"before","tensor":"buf15",)"
      R"("initialized":false,"constant":true,"stats":{"name":"buf15","dtype":"float32","shape":[4,16],"numel":64,)"
      R"("nan":2,"inf":1,"min":-2.5,"max":"inf","mean":"nan","checksum":"479061873d2c3663","unwritten":3,)"
      R"("first_nonfinite":[0,3],"layout":"mkldnn","opaque":true},"storage":{"address":"0x56","bytes":256}})",
      R"({"stats":{"min":null,"max":"-inf","mean":7,"shape":[],"extra":[[1,2],{"shape":[9]},{},[]]},"extra":[{"tensor":"no"}],)"
      R"("tensor":"buf\"7\"","phase":"after","event":"probe","site":3,"t":1})",
      R"({"event":"site_end","t":0.2,"site":5,"kernel":"k","tensors":["buf1","arg0_1"],"failed":true})",
      R"({"event":"site_begin","t":0.2,"site":5,"kernel":"k","clock":33820.5,"static":4})",
      R"({"event":"probe","t":2.5e-06,"site":7,"kernel":"k\u00e9","phase":"before","tensor":"buf1","stats":)"
      R"({"numel":-1,"min":-1.5e+300,"max":1E-5,"mean":0.0,"shape":[ 2 , 3 ]} })",
  };
  for (const auto& line : lines) {
    CAPTURE(line);
    SiteEvent e;
    REQUIRE(read_site_event(line, e));
    json j = json::parse(line);
    CHECK(e.has_kernel == j.contains("kernel"));
    CHECK(e.kernel == j.value("kernel", ""));
    CHECK(e.tensor == j.value("tensor", ""));
    CHECK(e.phase == j.value("phase", ""));
    CHECK(e.initialized == j.value("initialized", true));
    CHECK(e.constant == j.value("constant", false));
    CHECK(e.failed == j.value("failed", false));
    CHECK(e.tensors == j.value("tensors", std::vector<std::string>{}));
    CHECK(e.clock == j.value("clock", 0.0));
    CHECK(e.wrapper_static == j.value("static", 0));
    CHECK(e.has_stats == j.contains("stats"));
    if (j.contains("stats")) {
      TensorStats want = tensor_stats_from_json(j["stats"]);
      CHECK(e.stats.name == want.name);
      CHECK(e.stats.dtype == want.dtype);
      CHECK(e.stats.shape == want.shape);
      CHECK(e.stats.numel == want.numel);
      CHECK(e.stats.nan_count == want.nan_count);
      CHECK(e.stats.inf_count == want.inf_count);
      for (auto [got, expected] :
           {std::pair{e.stats.min, want.min}, {e.stats.max, want.max}, {e.stats.mean, want.mean}}) {
        REQUIRE(got.has_value() == expected.has_value());
        if (got) {
          CHECK((std::isnan(*got) ? std::isnan(*expected) : *got == *expected));
        }
      }
      CHECK(e.stats.checksum == want.checksum);
      CHECK(e.stats.first_nonfinite == want.first_nonfinite);
      CHECK(e.stats.layout == want.layout);
      CHECK(e.stats.opaque == want.opaque);
      CHECK(e.stats.unwritten == want.unwritten);
    }
  }
  SiteEvent e;
  CHECK_FALSE(read_site_event(R"({"event":"probe","site":3,"stats":{"min":)", e));
  CHECK_FALSE(read_site_event("[1]", e));
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
  f.ints("shape", {})
      .strs("tensors", {"buf1", "a\\b"})
      .raw("stats", "{\"a\":1}")
      .num("neg", -std::numeric_limits<double>::infinity());
  json j = json::parse("{" + f.text() + "}");
  CHECK(j == json{{"site", 3},
                  {"kernel", "k\t\x01"},
                  {"clock", 1.0},
                  {"x", 0.1},
                  {"on", false},
                  {"n", nullptr},
                  {"shape", json::array()},
                  {"tensors", {"buf1", "a\\b"}},
                  {"stats", {{"a", 1}}},
                  {"neg", "-inf"}});
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
  auto events = Events::read(killed);
  REQUIRE(events.size() == 40001);
  CHECK(events[39999]["site"] == 39999);
  CHECK(event_kind(events.back()) == EventKind::run_begin);
  finish_events_file(killed);
  std::ifstream in(killed, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  CHECK(text.size() == fs::file_size(killed));
  CHECK(text.back() == '\n');
  CHECK(text.find('\0') == std::string::npos);
  CHECK(Events::read(killed).size() == 40001);
  // A fatal signal's line: appended, and the file trimmed by the handler.
  auto crash = Events::read(crashed);
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
