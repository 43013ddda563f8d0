#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "inductor/build.hpp"
#include "package_fixture.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

void spit(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Sets (or unsets) one environment variable for the scope of a test.
class EnvVar {
 public:
  EnvVar(const char* name, std::optional<std::string> value) : m_name(name) {
    if (const char* old = std::getenv(name)) {
      m_old = old;
    }
    set(value);
  }
  ~EnvVar() { set(m_old); }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  void set(const std::optional<std::string>& value) {
    if (value) {
      ::setenv(m_name, value->c_str(), 1);
    } else {
      ::unsetenv(m_name);
    }
  }
  const char* m_name;
  std::optional<std::string> m_old;
};

// What the fake helper does when run as the helper (not as a version query).
enum class Helper { ok, fail_with_result, fail_stderr_only, hang };

// A stand-in for python3 that speaks the helper protocol: "-c <script>"
// prints `version` (or exits 3, like a python without torch, when it is
// empty); otherwise it appends its argv to `<dir>/runs` and acts as told.
fs::path fake_python(const fs::path& dir, const std::string& version, Helper helper) {
  fs::create_directories(dir);
  std::string body;
  switch (helper) {
    case Helper::ok:
      body = R"(printf 'fake package' > "$out"
printf '{"ok": true, "torch_version": "2.13.0+cpu", "seconds": 1.5, "error": null, "error_kind": null}' > "$result"
exit 0)";
      break;
    case Helper::fail_with_result:
      body = R"(echo "Traceback (most recent call last):" >&2
echo "torch._inductor.exc.CppCompileError: C++ compile error" >&2
printf '{"ok": false, "torch_version": "2.13.0+cpu", "seconds": 2.0, "error": "CppCompileError: k.cpp:3:1: error: expected ;", "error_kind": "compile"}' > "$result"
exit 3)";
      break;
    case Helper::fail_stderr_only:
      body = R"(echo "Traceback (most recent call last):" >&2
echo "MemoryError: out of memory" >&2
echo "" >&2
exit 1)";
      break;
    case Helper::hang: body = "sleep 30\nexit 0"; break;
  }
  std::string version_branch = version.empty() ? "exit 3" : "echo '" + version + "'\n  exit 0";
  std::string script = "#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then\n  echo x >> '" + (dir / "queries").string() + "'\n  " +
                       version_branch + "\nfi\necho \"$@\" >> '" + (dir / "runs").string() +
                       "'\necho \"$TORCHINDUCTOR_CACHE_DIR\" > '" + (dir / "inductor_cache").string() +
                       "'\nout=''\nresult=''\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n"
                       "    --out) out=\"$2\"; shift 2 ;;\n    --result) result=\"$2\"; shift 2 ;;\n"
                       "    *) shift ;;\n  esac\ndone\n" +
                       body + "\n";
  fs::path path = dir / "python3";
  spit(path, script);
  ::chmod(path.c_str(), 0755);
  return path;
}

int lines_in(const fs::path& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
  }
  return n;
}

// Test cases share the binary's temporary directory: start each from nothing.
void fresh() {
  for (const char* p : {"fake", "cache", "empty", "ep.pt2"}) {
    fs::remove_all(p);
  }
}

BuildRequest request_with(const fs::path& python) {
  spit("ep.pt2", "not really an exported program");
  BuildRequest r;
  r.exported_program = "ep.pt2";
  r.python = python.string();
  r.cache_dir = "cache";
  r.expected_torch_version = "2.13.0";
  return r;
}

}  // namespace

TEST_SUITE_BEGIN("inductor/build");

TEST_CASE("add_inductor_config: values are YAML scalars") {
  nlohmann::json c = nlohmann::json::object();
  SUBCASE("booleans") {
    add_inductor_config(c, "a=true");
    add_inductor_config(c, "b=False");
    CHECK(c["a"] == true);
    CHECK(c["b"] == false);
  }
  SUBCASE("YAML 1.1 words stay text") {
    add_inductor_config(c, "a=yes");
    add_inductor_config(c, "b=off");
    CHECK(c["a"] == "yes");
    CHECK(c["b"] == "off");
  }
  SUBCASE("integers") {
    add_inductor_config(c, "a=3");
    add_inductor_config(c, "b=-12");
    CHECK(c["a"].is_number_integer());
    CHECK(c["a"] == 3);
    CHECK(c["b"] == -12);
  }
  SUBCASE("floats") {
    add_inductor_config(c, "a=1e-3");
    add_inductor_config(c, "b=0.5");
    CHECK(c["a"].is_number_float());
    CHECK(c["a"].get<double>() == doctest::Approx(0.001));
    CHECK(c["b"].get<double>() == doctest::Approx(0.5));
  }
  SUBCASE("null") {
    add_inductor_config(c, "a=null");
    add_inductor_config(c, "b=~");
    CHECK(c["a"].is_null());
    CHECK(c["b"].is_null());
    CHECK(c.size() == 2);
  }
  SUBCASE("text") {
    add_inductor_config(c, "cpp.inject_relu_bug_TESTING_ONLY=accuracy");
    add_inductor_config(c, "a='3'");
    add_inductor_config(c, "b=[1, 2]");
    add_inductor_config(c, "d=");
    CHECK(c["cpp.inject_relu_bug_TESTING_ONLY"] == "accuracy");
    CHECK(c["a"] == "3");
    CHECK(c["b"] == "[1, 2]");
    CHECK(c["d"] == "");
  }
  SUBCASE("the first '=' splits") {
    add_inductor_config(c, "a=b=c");
    CHECK(c["a"] == "b=c");
  }
  SUBCASE("a later value replaces an earlier one") {
    add_inductor_config(c, "a=1");
    add_inductor_config(c, "a=2");
    CHECK(c["a"] == 2);
  }
}

TEST_CASE("add_inductor_config: errors") {
  nlohmann::json c = nlohmann::json::object();
  SUBCASE("no '='") {
    REQUIRE_THROWS_WITH(add_inductor_config(c, "x"), "--inductor-config expects key=value, got 'x'");
  }
  SUBCASE("empty key") {
    REQUIRE_THROWS_WITH(add_inductor_config(c, "=3"), "--inductor-config expects key=value, got '=3'");
  }
  try {
    add_inductor_config(c, "nothing");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
  }
}

TEST_CASE("build_cache_key: stable for one input, changes with each") {
  fresh();
  spit("ep.pt2", "exported program bytes");
  BuildRequest base;
  base.exported_program = "ep.pt2";
  base.inductor_configs = nlohmann::json::parse(R"({"a": 1, "b": "x"})");
  const std::string key = build_cache_key(base, "2.13.0+cpu");
  CHECK(key.size() == 64);
  CHECK(build_cache_key(base, "2.13.0+cpu") == key);

  SUBCASE("the order of the configs does not matter") {
    BuildRequest r = base;
    r.inductor_configs = nlohmann::json::object();
    r.inductor_configs["b"] = "x";
    r.inductor_configs["a"] = 1;
    CHECK(build_cache_key(r, "2.13.0+cpu") == key);
  }
  SUBCASE("configs") {
    BuildRequest r = base;
    r.inductor_configs["a"] = 2;
    CHECK(build_cache_key(r, "2.13.0+cpu") != key);
    r.inductor_configs["a"] = "1";  // the type counts too
    CHECK(build_cache_key(r, "2.13.0+cpu") != key);
  }
  SUBCASE("printer level") {
    BuildRequest r = base;
    r.printer_level = 2;
    CHECK(build_cache_key(r, "2.13.0+cpu") != key);
  }
  SUBCASE("filter") {
    BuildRequest r = base;
    r.printer_level = 2;
    std::string level2 = build_cache_key(r, "2.13.0+cpu");
    r.filtered_kernels = {"cpp_fused_log_2"};
    CHECK(build_cache_key(r, "2.13.0+cpu") != level2);
  }
  SUBCASE("model name") {
    BuildRequest r = base;
    r.model_name = "other";
    CHECK(build_cache_key(r, "2.13.0+cpu") != key);
  }
  SUBCASE("torch version") {
    CHECK(build_cache_key(base, "2.13.0+cu130") != key);
  }
  SUBCASE("exported program bytes") {
    spit("ep.pt2", "exported program bytes, changed");
    CHECK(build_cache_key(base, "2.13.0+cpu") != key);
  }
  SUBCASE("not the cache dir, timeout or python") {
    BuildRequest r = base;
    r.cache_dir = "elsewhere";
    r.timeout_s = 5;
    r.python = "/usr/bin/python3";
    CHECK(build_cache_key(r, "2.13.0+cpu") == key);
  }
}

TEST_CASE("build_helper_source is the helper script") {
  std::string text(build_helper_source());
  CHECK(text == fixture::read(fs::path(AOTI_BISECT_SOURCE_DIR) / "lib/inductor/aoti_bisect_build.py"));
  CHECK(text.find("aot_inductor.debug_intermediate_value_printer") != std::string::npos);
}

TEST_CASE("default_cache_dir follows XDG_CACHE_HOME, then HOME") {
  {
    EnvVar xdg("XDG_CACHE_HOME", "/x/cache");
    CHECK(default_cache_dir() == fs::path("/x/cache/aoti-bisect/builds"));
  }
  EnvVar xdg("XDG_CACHE_HOME", std::nullopt);
  EnvVar home("HOME", "/home/u");
  CHECK(default_cache_dir() == fs::path("/home/u/.cache/aoti-bisect/builds"));
}

TEST_CASE("build_instrumented: builds once, then finds the build in the cache") {
  fresh();
  fs::path python = fake_python(fs::absolute("fake"), "2.13.0+cpu", Helper::ok);
  BuildRequest r = request_with(python);
  r.printer_level = 2;
  r.filtered_kernels = {"k1", "k2"};
  r.inductor_configs["max_autotune"] = false;

  BuildResult first = build_instrumented(r);
  CHECK_FALSE(first.cache_hit);
  CHECK(first.torch_version == "2.13.0+cpu");
  CHECK(first.compile_seconds == doctest::Approx(1.5));
  CHECK(first.key == build_cache_key(r, "2.13.0+cpu"));
  CHECK(first.package == fs::absolute("cache") / (first.key + ".pt2"));
  CHECK(fixture::read(first.package) == "fake package");
  auto entry = nlohmann::json::parse(fixture::read(fs::absolute("cache") / (first.key + ".json")));
  CHECK(entry["torch_version"] == "2.13.0+cpu");
  CHECK(entry["compile_seconds"] == 1.5);
  CHECK(entry["created"].is_string());
  CHECK(lines_in("fake/runs") == 1);

  std::string argv = fixture::read("fake/runs");
  CHECK(argv.find("--level 2") != std::string::npos);
  CHECK(argv.find("--filter k1,k2") != std::string::npos);
  CHECK(argv.find("--model-name model") != std::string::npos);
  CHECK(argv.find("--exported-program " + fs::absolute("ep.pt2").string()) != std::string::npos);
  if (std::getenv("TORCHINDUCTOR_CACHE_DIR") == nullptr) {
    CHECK(fixture::read("fake/inductor_cache") == (fs::absolute("cache") / "inductor").string() + "\n");
  }

  BuildResult second = build_instrumented(r);
  CHECK(second.cache_hit);
  CHECK(second.package == first.package);
  CHECK(second.key == first.key);
  CHECK(second.compile_seconds == doctest::Approx(1.5));
  CHECK(lines_in("fake/runs") == 1);     // the helper did not run again
  CHECK(lines_in("fake/queries") == 2);  // the version is asked each time (it is in the key)

  // No scratch files are left behind; the helper script stays for the next call.
  CHECK(fs::is_empty("cache/tmp"));
  int helpers = 0;
  for (const auto& e : fs::directory_iterator("cache")) {
    helpers += e.path().filename().string().rfind("helper-", 0) == 0;
  }
  CHECK(helpers == 1);

  SUBCASE("another level is another build") {
    r.printer_level = 1;
    r.filtered_kernels.clear();
    BuildResult other = build_instrumented(r);
    CHECK_FALSE(other.cache_hit);
    CHECK(other.key != first.key);
    CHECK(lines_in("fake/runs") == 2);
    std::string runs = fixture::read("fake/runs");
    std::string last = runs.substr(runs.rfind('\n', runs.size() - 2) + 1);
    CHECK(last.find("--level 1") != std::string::npos);
    CHECK(last.find("--filter") == std::string::npos);
  }
}

TEST_CASE("build_instrumented: python and torch version") {
  fresh();
  SUBCASE("only major.minor.patch must match") {
    BuildRequest r = request_with(fake_python(fs::absolute("fake"), "2.13.0+cu130", Helper::ok));
    r.expected_torch_version = "2.13.0+cpu";
    CHECK(build_instrumented(r).torch_version == "2.13.0+cu130");
  }
  SUBCASE("no check when nothing is expected") {
    BuildRequest r = request_with(fake_python(fs::absolute("fake"), "2.9.1", Helper::ok));
    r.expected_torch_version = "";
    CHECK_FALSE(build_instrumented(r).cache_hit);
  }
  SUBCASE("a different version") {
    fs::path python = fake_python(fs::absolute("fake"), "2.12.1+cpu", Helper::ok);
    BuildRequest r = request_with(python);
    REQUIRE_THROWS_WITH(build_instrumented(r),
                        ("the instrumented build would use torch 2.12.1+cpu (" + display_path(python) +
                         "), the runner's LibTorch is 2.13.0: the versions must match")
                            .c_str());
    CHECK(!fs::exists("fake/runs"));
  }
  SUBCASE("a python without torch") {
    fs::path python = fake_python(fs::absolute("fake"), "", Helper::ok);
    BuildRequest r = request_with(python);
    REQUIRE_THROWS_WITH(build_instrumented(r),
                        ("the instrumented build needs torch, and python '" + display_path(python) +
                         "' cannot import it (exit 3; set AOTI_BISECT_PYTHON or install torch)")
                            .c_str());
  }
  SUBCASE("a named python that does not exist") {
    BuildRequest r = request_with("/nonexistent/python3");
    REQUIRE_THROWS_WITH(build_instrumented(r),
                        "the instrumented build needs python3 with torch, and python "
                        "'/nonexistent/python3' does not exist (set AOTI_BISECT_PYTHON or install torch)");
  }
  SUBCASE("no python3 on PATH") {
    fs::create_directories("empty");
    EnvVar path("PATH", fs::absolute("empty").string());
    EnvVar env_python("AOTI_BISECT_PYTHON", std::nullopt);
    BuildRequest r = request_with("");
    try {
      build_instrumented(r);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::cannot_test);
      CHECK(std::string(e.what()) ==
            "the instrumented build needs python3 with torch (set AOTI_BISECT_PYTHON or install torch)");
    }
  }
  SUBCASE("AOTI_BISECT_PYTHON, then python3 on PATH") {
    fs::path python = fake_python(fs::absolute("fake"), "2.13.0", Helper::ok);
    BuildRequest r = request_with("");
    {
      EnvVar env_python("AOTI_BISECT_PYTHON", python.string());
      CHECK_FALSE(build_instrumented(r).cache_hit);
    }
    EnvVar env_python("AOTI_BISECT_PYTHON", std::nullopt);
    EnvVar path("PATH", fs::absolute("fake").string() + ":/usr/bin:/bin");
    CHECK(build_instrumented(r).cache_hit);
    CHECK(lines_in("fake/queries") == 2);
  }
  SUBCASE("a missing exported program") {
    BuildRequest r = request_with(fake_python(fs::absolute("fake"), "2.13.0", Helper::ok));
    r.exported_program = "nope.pt2";
    REQUIRE_THROWS_WITH(build_instrumented(r), "exported program 'nope.pt2' does not exist");
  }
}

TEST_CASE("build_instrumented: failures") {
  fresh();
  auto message_of = [](const BuildRequest& r) {
    try {
      build_instrumented(r);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::cannot_test);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SUBCASE("the helper's error line from its result") {
    BuildRequest r = request_with(fake_python(fs::absolute("fake"), "2.13.0", Helper::fail_with_result));
    CHECK(message_of(r) == "instrumented build failed: CppCompileError: k.cpp:3:1: error: expected ;");
  }
  SUBCASE("no result: the last line on stderr") {
    BuildRequest r = request_with(fake_python(fs::absolute("fake"), "2.13.0", Helper::fail_stderr_only));
    CHECK(message_of(r) == "instrumented build failed: MemoryError: out of memory");
  }
  SUBCASE("timeout") {
    BuildRequest r = request_with(fake_python(fs::absolute("fake"), "2.13.0", Helper::hang));
    r.timeout_s = 0.5;
    CHECK(message_of(r) == "instrumented build timed out after 0.5 s (raise --build-timeout)");
  }
  SUBCASE("a bad printer level") {
    BuildRequest r = request_with(fake_python(fs::absolute("fake"), "2.13.0", Helper::ok));
    r.printer_level = 4;
    REQUIRE_THROWS_WITH(build_instrumented(r), "printer level must be 1, 2 or 3, got 4");
  }
  // A failed build leaves no entry and no scratch files.
  if (fs::exists("cache")) {
    for (const auto& e : fs::directory_iterator("cache")) {
      std::string name = e.path().filename().string();
      CHECK((name == "tmp" || name.rfind("helper-", 0) == 0));
    }
    CHECK(fs::is_empty("cache/tmp"));
  }
}

TEST_SUITE_END();
