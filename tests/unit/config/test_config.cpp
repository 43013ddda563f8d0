#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "config/config.hpp"
#include "package_fixture.hpp"

using namespace aoti_bisect;

namespace {

const char* const k_user_keys =
    "env, repeats, timeout, jobs, variants, findings, variants_mode, inductor_configs, tolerance";

std::vector<std::string> names_of(const std::vector<Variant>& variants) {
  std::vector<std::string> names;
  for (const Variant& v : variants) {
    names.push_back(v.name);
  }
  return names;
}

}  // namespace

TEST_SUITE_BEGIN("config");

TEST_CASE("parse_user_config reads every key") {
  UserConfig c = parse_user_config(R"(
env:
  TORCH_LOGS: "+dynamo"
repeats: 5
timeout: 12.5
jobs: 2
variants_mode: replace
tolerance:
  atol: 0.001
  rtol: 0
variants:
  - name: sanitized
    description: compute sanitizer off
    env:
      A: "1"
    repeats: 7
  - name: plain
)",
                                   "nightly.yaml");
  CHECK(c.path == "nightly.yaml");
  CHECK(c.env == std::map<std::string, std::string>{{"TORCH_LOGS", "+dynamo"}});
  CHECK(c.repeats == 5);
  CHECK(c.timeout_s == 12.5);
  CHECK(c.jobs == 2);
  CHECK(c.replace_variants);
  CHECK(c.tolerance_atol == 0.001);
  CHECK(c.tolerance_rtol == 0.0);
  REQUIRE(c.variants.size() == 2);
  CHECK(c.variants[0].name == "sanitized");
  CHECK(c.variants[0].description == "compute sanitizer off");
  CHECK(c.variants[0].env == std::map<std::string, std::string>{{"A", "1"}});
  CHECK(c.variants[0].repeats == 7);
  CHECK(c.variants[1].name == "plain");
  CHECK(c.variants[1].env.empty());
  CHECK_FALSE(c.variants[1].repeats.has_value());
}

TEST_CASE("parse_user_config: an empty file is an empty config") {
  SUBCASE("empty") {
    UserConfig c = parse_user_config("", "e.yaml");
    CHECK(c.env.empty());
    CHECK(c.variants.empty());
    CHECK_FALSE(c.repeats.has_value());
    CHECK_FALSE(c.timeout_s.has_value());
    CHECK_FALSE(c.jobs.has_value());
    CHECK_FALSE(c.tolerance_atol.has_value());
    CHECK(c.tolerance.by_dtype.empty());
    CHECK_FALSE(c.replace_variants);
  }
  SUBCASE("comments only") {
    UserConfig c = parse_user_config("# nothing here\n\n", "e.yaml");
    CHECK(c.env.empty());
    CHECK_FALSE(c.repeats.has_value());
  }
}

TEST_CASE("parse_user_config: scalar env values are taken as their text") {
  UserConfig c = parse_user_config("env:\n  A: 1\n  B: true\n  C: 0.50\n  D: \"\"\n  E: 'x y'\n", "c.yaml");
  CHECK(c.env == std::map<std::string, std::string>{{"A", "1"}, {"B", "true"}, {"C", "0.50"}, {"D", ""}, {"E", "x y"}});
}

TEST_CASE("parse_user_config: a flat tolerance sets only what it names") {
  UserConfig c = parse_user_config("tolerance:\n  rtol: 0.01\n", "c.yaml");
  CHECK_FALSE(c.tolerance_atol.has_value());
  CHECK(c.tolerance_rtol == 0.01);
}

TEST_CASE("tolerances: per dtype from the profile, overridden by the user config and flags") {
  Profile p = builtin_profile("cpu");
  REQUIRE(p.tolerances.by_dtype.count("float32"));
  REQUIRE(p.tolerances.by_dtype.count("bfloat16"));
  REQUIRE(p.tolerances.by_dtype.count("float16"));
  // Lower precision is looser.
  CHECK(p.tolerances.for_dtype("float32").rtol < p.tolerances.for_dtype("float16").rtol);
  CHECK(p.tolerances.for_dtype("float16").rtol < p.tolerances.for_dtype("bfloat16").rtol);
  // Integers must match exactly; an unlisted float uses the default.
  CHECK(p.tolerances.for_dtype("int64").atol == 0);
  CHECK(p.tolerances.for_dtype("int64").rtol == 0);
  CHECK(p.tolerances.for_dtype("float8_e4m3fn").rtol == p.tolerances.for_dtype("default").rtol);

  UserConfig u = parse_user_config("tolerance:\n  bfloat16: {atol: 0.5, rtol: 0.25}\n", "u.yaml");
  ToleranceTable t = p.tolerances;
  t.merge(u.tolerance);
  CHECK(t.for_dtype("bfloat16").atol == 0.5);
  CHECK(t.for_dtype("bfloat16").rtol == 0.25);
  CHECK(t.for_dtype("float32").rtol == p.tolerances.for_dtype("float32").rtol);
  t.set_all(std::nullopt, 0.125);
  CHECK(t.for_dtype("bfloat16").rtol == 0.125);
  CHECK(t.for_dtype("float32").rtol == 0.125);
  CHECK(t.for_dtype("float32").atol == p.tolerances.for_dtype("float32").atol);

  ToleranceTable back = tolerance_table_from_json(to_json(t));
  CHECK(back.for_dtype("bfloat16").atol == 0.5);
  CHECK(back.for_dtype("float16").rtol == 0.125);
}

TEST_CASE("tolerance: the rule judges the error against the tensor's largest magnitude") {
  Tolerance t{1e-5, 1e-4};
  CHECK(t.within(1e-5, 0.0));
  CHECK_FALSE(t.within(2e-5, 0.0));
  CHECK(t.within(1e-3, 100.0));  // 1e-5 + 1e-2 allowed
  CHECK_FALSE(t.within(0.02, 100.0));
}

TEST_CASE("tolerance: config errors name the place and the fix") {
  CHECK_THROWS_WITH_AS(parse_user_config("tolerance:\n  float33: {atol: 1, rtol: 1}\n", "u.yaml"),
                       doctest::Contains("u.yaml:2:3: error: unknown key 'float33' in 'tolerance'"), Error);
  CHECK_THROWS_WITH_AS(parse_user_config("tolerance:\n  float32: {atol: 1}\n", "u.yaml"),
                       doctest::Contains("'float32' needs both 'atol' and 'rtol'"), Error);
  CHECK_THROWS_WITH_AS(parse_user_config("tolerance:\n  float32: {atol: -1, rtol: 1}\n", "u.yaml"),
                       doctest::Contains("'atol' must be a non-negative number"), Error);
}

TEST_CASE("parse_user_config, error handling") {
  auto parse = [](const std::string& text) { return parse_user_config(text, "c.yaml"); };

  SUBCASE("unknown key, with the known keys from the table") {
    REQUIRE_THROWS_WITH(
        parse("repeats: 2\ntmeout: 3\n"),
        (std::string("c.yaml:2:1: error: unknown key 'tmeout' (known keys: ") + k_user_keys + ")").c_str());
  }
  SUBCASE("unknown key inside a variant") {
    REQUIRE_THROWS_WITH(
        parse("variants:\n  - name: a\n    envv: {}\n"),
        "c.yaml:3:5: error: unknown key 'envv' (known keys: name, description, env, repeats, localizes_faults, when)");
  }
  SUBCASE("a variant's 'when' is one of four") {
    REQUIRE_THROWS_WITH(
        parse("variants:\n  - name: a\n    when: sometimes\n"),
        "c.yaml:3:11: error: 'when' must be always, failure, fault, flaky or failure_or_flaky, got 'sometimes'");
  }
  SUBCASE("a finding with an unknown contrast, placeholder or key, or without its sentence") {
    REQUIRE_THROWS_WITH(parse("findings:\n  - variant: a\n    contrast: faster\n    says: x\n"),
                        "c.yaml:3:15: error: unknown contrast 'faster' (known: refuses_inputs, passes_with, "
                        "fails_with, more_reliable, outputs_change, stable_with)");
    REQUIRE_THROWS_WITH(parse("findings:\n  - variant: a\n    contrast: fails_with\n    says: \"{k} of {total}\"\n"),
                        "c.yaml:4:11: error: 'says' names an unknown placeholder '{total}' (known: {k}, {n}, "
                        "{base_k}, {base_n}, {changed}, {line}, {env}, {base_outputs})");
    REQUIRE_THROWS_WITH(parse("findings:\n  - variant: a\n    contrast: fails_with\n"),
                        "c.yaml:2:5: error: a finding needs 'variant', 'contrast' and 'says'");
    REQUIRE_THROWS_WITH(parse("findings:\n  - variant: a\n    sais: x\n"),
                        "c.yaml:3:5: error: unknown key 'sais' (known keys: variant, contrast, says)");
    REQUIRE_THROWS_WITH(parse("findings: {a: 1}\n"), "c.yaml:1:11: error: 'findings' must be a list, got a map");
  }
  SUBCASE("unknown key inside tolerance") {
    REQUIRE_THROWS_WITH(parse("tolerance:\n  abstol: 1\n"),
                        "c.yaml:2:3: error: unknown key 'abstol' in 'tolerance' (a dtype such as float32, bfloat16, "
                        "float16, default, or atol/rtol for every dtype)");
  }
  SUBCASE("duplicate key") {
    REQUIRE_THROWS_WITH(parse("repeats: 2\nrepeats: 3\n"), "c.yaml:2:1: error: duplicate key 'repeats'");
  }
  SUBCASE("repeats not a number") {
    REQUIRE_THROWS_WITH(parse("repeats: abc\n"), "c.yaml:1:10: error: 'repeats' must be a positive integer, got 'abc'");
  }
  SUBCASE("repeats zero") {
    REQUIRE_THROWS_WITH(parse("repeats: 0\n"), "c.yaml:1:10: error: 'repeats' must be a positive integer, got '0'");
  }
  SUBCASE("repeats negative") {
    REQUIRE_THROWS_WITH(parse("repeats: -2\n"), "c.yaml:1:10: error: 'repeats' must be a positive integer, got '-2'");
  }
  SUBCASE("repeats fractional") {
    REQUIRE_THROWS_WITH(parse("repeats: 1.5\n"), "c.yaml:1:10: error: 'repeats' must be a positive integer, got '1.5'");
  }
  SUBCASE("repeats empty: the message points at the key") {
    REQUIRE_THROWS_WITH(parse("jobs: 1\nrepeats:\n"),
                        "c.yaml:2:1: error: 'repeats' must be a positive integer, got nothing");
  }
  SUBCASE("repeats in a variant") {
    REQUIRE_THROWS_WITH(parse("variants:\n  - name: a\n    repeats: [3]\n"),
                        "c.yaml:3:14: error: 'repeats' must be a positive integer, got a list");
  }
  SUBCASE("jobs zero") {
    REQUIRE_THROWS_WITH(parse("jobs: 0\n"), "c.yaml:1:7: error: 'jobs' must be a positive integer, got '0'");
  }
  SUBCASE("timeout zero") {
    REQUIRE_THROWS_WITH(parse("timeout: 0\n"),
                        "c.yaml:1:10: error: 'timeout' must be a positive number of seconds, got '0'");
  }
  SUBCASE("timeout negative") {
    REQUIRE_THROWS_WITH(parse("timeout: -1\n"),
                        "c.yaml:1:10: error: 'timeout' must be a positive number of seconds, got '-1'");
  }
  SUBCASE("timeout infinite") {
    REQUIRE_THROWS_WITH(parse("timeout: inf\n"),
                        "c.yaml:1:10: error: 'timeout' must be a positive number of seconds, got 'inf'");
  }
  SUBCASE("timeout a word") {
    REQUIRE_THROWS_WITH(parse("timeout: 5m\n"),
                        "c.yaml:1:10: error: 'timeout' must be a positive number of seconds, got '5m'");
  }
  SUBCASE("env a list") {
    REQUIRE_THROWS_WITH(parse("env: [1]\n"), "c.yaml:1:6: error: 'env' must be a map, got a list");
  }
  SUBCASE("env a scalar") {
    REQUIRE_THROWS_WITH(parse("env: A=1\n"), "c.yaml:1:6: error: 'env' must be a map, got 'A=1'");
  }
  SUBCASE("env value a map") {
    REQUIRE_THROWS_WITH(parse("env:\n  A:\n    b: 1\n"), "c.yaml:3:5: error: 'A' must be a string, got a map");
  }
  SUBCASE("env value a list") {
    REQUIRE_THROWS_WITH(parse("env:\n  A: [1, 2]\n"), "c.yaml:2:6: error: 'A' must be a string, got a list");
  }
  SUBCASE("env value missing") {
    REQUIRE_THROWS_WITH(parse("env:\n  A:\n"), "c.yaml:2:3: error: 'A' has no value (write \"\" for an empty one)");
  }
  SUBCASE("env name not a variable name") {
    REQUIRE_THROWS_WITH(parse("env:\n  1A: x\n"), "c.yaml:2:3: error: '1A' is not an environment variable name");
  }
  SUBCASE("env key not a string") {
    REQUIRE_THROWS_WITH(parse("env:\n  [A]: x\n"), "c.yaml:2:3: error: keys of 'env' must be strings, got a list");
  }
  SUBCASE("variants a map") {
    REQUIRE_THROWS_WITH(parse("variants:\n  name: a\n"), "c.yaml:2:3: error: 'variants' must be a list, got a map");
  }
  SUBCASE("variant a scalar") {
    REQUIRE_THROWS_WITH(parse("variants:\n  - launch_blocking\n"),
                        "c.yaml:2:5: error: a variant must be a map, got 'launch_blocking'");
  }
  SUBCASE("variant without a name") {
    REQUIRE_THROWS_WITH(parse("variants:\n  - env: {A: '1'}\n"), "c.yaml:2:5: error: a variant needs a 'name'");
  }
  SUBCASE("variant name with capitals and dashes") {
    REQUIRE_THROWS_WITH(parse("variants:\n  - name: Launch-Blocking\n"),
                        "c.yaml:2:11: error: variant name 'Launch-Blocking' must match [a-z0-9_]+");
  }
  SUBCASE("variant name empty") {
    REQUIRE_THROWS_WITH(parse("variants:\n  - name: ''\n"),
                        "c.yaml:2:11: error: variant name '' must match [a-z0-9_]+");
  }
  SUBCASE("variant name reserved") {
    REQUIRE_THROWS_WITH(parse("variants:\n  - name: baseline\n"),
                        "c.yaml:2:11: error: variant name 'baseline' is reserved for the run without variant flags");
  }
  SUBCASE("variant name duplicated") {
    REQUIRE_THROWS_WITH(parse("variants:\n  - name: a\n  - name: b\n  - name: a\n"),
                        "c.yaml:4:11: error: duplicate variant name 'a'");
  }
  SUBCASE("variants_mode unknown") {
    REQUIRE_THROWS_WITH(parse("variants_mode: merge\n"),
                        "c.yaml:1:16: error: 'variants_mode' must be 'add' or 'replace', got 'merge'");
  }
  SUBCASE("tolerance a scalar") {
    REQUIRE_THROWS_WITH(parse("tolerance: 0.1\n"), "c.yaml:1:12: error: 'tolerance' must be a map, got '0.1'");
  }
  SUBCASE("tolerance negative") {
    REQUIRE_THROWS_WITH(parse("tolerance:\n  atol: -1e-3\n"),
                        "c.yaml:2:9: error: 'atol' must be a non-negative number, got '-1e-3'");
  }
  SUBCASE("top level a list") {
    REQUIRE_THROWS_WITH(parse("- repeats: 3\n"), "c.yaml:1:1: error: a config must be a map, got a list");
  }
  SUBCASE("YAML syntax error, with yaml-cpp's message") {
    REQUIRE_THROWS_WITH(parse("env: [1\n"), "c.yaml:2:1: error: end of sequence flow not found");
  }
  SUBCASE("YAML syntax error in a mapping") {
    REQUIRE_THROWS_WITH(parse("repeats: a: b\n"), "c.yaml:1:11: error: illegal map value");
  }
}

TEST_CASE("parse_user_config errors are usage errors") {
  try {
    parse_user_config("tmeout: 3\n", "c.yaml");
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
  }
}

TEST_CASE("load_user_config") {
  SUBCASE("a missing file is a usage error") {
    try {
      load_user_config("x.yaml");
      FAIL("no throw");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == "config file 'x.yaml' does not exist");
      CHECK(e.kind() == ErrorKind::usage);
    }
  }
  SUBCASE("messages name the path as given") {
    std::filesystem::create_directories("cfg");
    std::ofstream("cfg/nightly.yaml") << "repeats: 4\n\nvariants:\n  - name: a\n    tmeout: 3\n";
    REQUIRE_THROWS_WITH(load_user_config("cfg/nightly.yaml"),
                        "cfg/nightly.yaml:5:5: error: unknown key 'tmeout' (known keys: name, description, env, "
                        "repeats, localizes_faults, when)");
  }
  SUBCASE("a readable file is parsed, and remembers its path") {
    std::ofstream("ok.yaml") << "repeats: 4\n";
    UserConfig c = load_user_config("ok.yaml");
    CHECK(c.repeats == 4);
    CHECK(c.path == "ok.yaml");
  }
}

TEST_CASE("parse_profile") {
  SUBCASE("reads every key") {
    Profile p = parse_profile(
        "backend: xpu\ndescription: test\nrepeats: 2\ntimeout: 60\nvariants:\n  - name: a\n    env: {X: 1}\n",
        "p.yaml");
    CHECK(p.backend == "xpu");
    CHECK(p.description == "test");
    CHECK(p.repeats == 2);
    CHECK(p.timeout_s == 60);
    REQUIRE(p.variants.size() == 1);
    CHECK(p.variants[0].env == std::map<std::string, std::string>{{"X", "1"}});
  }
  SUBCASE("keeps the defaults for keys it does not set") {
    Profile p = parse_profile("backend: xpu\n", "p.yaml");
    CHECK(p.repeats == 3);
    CHECK(p.timeout_s == 300);
    CHECK(p.variants.empty());
  }
  SUBCASE("user-only keys are unknown in a profile") {
    REQUIRE_THROWS_WITH(parse_profile("backend: xpu\njobs: 2\n", "p.yaml"),
                        "p.yaml:2:1: error: unknown key 'jobs' (known keys: backend, description, repeats, timeout, "
                        "variants, findings, tolerances)");
  }
  SUBCASE("a profile needs a backend") {
    REQUIRE_THROWS_WITH(parse_profile("repeats: 2\n", "p.yaml"), "p.yaml:1:1: error: a profile needs a 'backend'");
  }
  SUBCASE("an empty profile has no backend") {
    REQUIRE_THROWS_WITH(parse_profile("", "p.yaml"), "p.yaml: error: a profile needs a 'backend'");
  }
}

TEST_CASE("builtin profiles") {
  CHECK(builtin_backends() == std::vector<std::string>{"cpu", "cuda", "rocm"});

  SUBCASE("every one parses, with its own backend name, 3 repeats and a 300 s timeout") {
    for (const std::string& backend : builtin_backends()) {
      CAPTURE(backend);
      Profile p = builtin_profile(backend);
      CHECK(p.backend == backend);
      CHECK_FALSE(p.description.empty());
      CHECK(p.repeats == 3);
      CHECK(p.timeout_s == 300);
      for (const Variant& v : p.variants) {
        CAPTURE(v.name);
        CHECK_FALSE(v.description.empty());
        if (v.localizes_faults) {
          CHECK(v.when == RunWhen::fault);
          CHECK(v.repeats == 1);
        }
      }
      // Every finding reads a variant of its own profile.
      CHECK_FALSE(p.findings.empty());
      for (const FindingRule& f : p.findings) {
        CAPTURE(f.variant);
        CHECK(std::any_of(p.variants.begin(), p.variants.end(), [&](const Variant& v) { return v.name == f.variant; }));
      }
    }
  }
  SUBCASE("cpu: one change per variant, each when it means something") {
    Profile p = builtin_profile("cpu");
    REQUIRE(names_of(p.variants) == std::vector<std::string>{"repeat", "check_inputs", "poison", "perturb",
                                                             "one_thread", "scalar_aten", "guard_pages"});
    CHECK(p.variants[0].env.empty());
    CHECK_FALSE(p.variants[0].localizes_faults);
    CHECK(p.variants[0].when == RunWhen::always);
    CHECK(p.variants[1].env == std::map<std::string, std::string>{{"AOTI_RUNTIME_CHECK_INPUTS", "1"}});
    CHECK(p.variants[1].when == RunWhen::always);
    CHECK(p.variants[2].env == std::map<std::string, std::string>{{"AOTI_BISECT_POISON", "1"}});
    CHECK(p.variants[2].when == RunWhen::always);
    CHECK(p.variants[3].env == std::map<std::string, std::string>{{"MALLOC_PERTURB_", "128"}});
    CHECK(p.variants[3].when == RunWhen::always);
    CHECK(p.variants[4].env == std::map<std::string, std::string>{{"OMP_NUM_THREADS", "1"}});
    CHECK(p.variants[4].when == RunWhen::failure_or_flaky);
    CHECK(p.variants[5].env == std::map<std::string, std::string>{{"ATEN_CPU_CAPABILITY", "default"}});
    CHECK(p.variants[5].when == RunWhen::failure);
    CHECK(p.variants[6].env == std::map<std::string, std::string>{{"AOTI_BISECT_GUARD_PAGES", "1"}});
    CHECK(p.variants[6].localizes_faults);
    CHECK(p.variants[6].when == RunWhen::fault);
  }
  SUBCASE("cuda, most deterministic first") {
    Profile p = builtin_profile("cuda");
    REQUIRE(names_of(p.variants) == std::vector<std::string>{"blocking_no_caching", "launch_blocking", "no_caching",
                                                             "check_inputs", "poison", "memcheck", "coredump",
                                                             "initcheck"});
    CHECK(p.variants[3].env == std::map<std::string, std::string>{{"AOTI_RUNTIME_CHECK_INPUTS", "1"}});
    CHECK(p.variants[3].when == RunWhen::always);
    CHECK(p.variants[4].env == std::map<std::string, std::string>{{"AOTI_BISECT_POISON", "1"}});
    CHECK(p.variants[5].localizes_faults);
    CHECK(p.variants[5].env.at("AOTI_BISECT_RUN_UNDER").rfind("compute-sanitizer --tool memcheck", 0) == 0);
    // The core dump only after a fault, into the run's folder, without memory contents.
    CHECK(p.variants[6].when == RunWhen::fault);
    CHECK(p.variants[6].env.at("CUDA_ENABLE_COREDUMP_ON_EXCEPTION") == "1");
    CHECK(p.variants[6].env.at("CUDA_COREDUMP_FILE").find('/') == std::string::npos);
    CHECK(p.variants[6].env.at("CUDA_COREDUMP_GENERATION_FLAGS").find("skip_global_memory") != std::string::npos);
    CHECK(p.variants[7].when == RunWhen::failure);
    CHECK(p.variants[7].env.at("AOTI_BISECT_RUN_UNDER").rfind("compute-sanitizer --tool initcheck", 0) == 0);
    // Every variant has its finding.
    for (const Variant& v : p.variants) {
      CAPTURE(v.name);
      CHECK(
          std::any_of(p.findings.begin(), p.findings.end(), [&](const FindingRule& f) { return f.variant == v.name; }));
    }
    CHECK(p.variants[0].env ==
          std::map<std::string, std::string>{{"CUDA_LAUNCH_BLOCKING", "1"}, {"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"}});
    CHECK(p.variants[1].env == std::map<std::string, std::string>{{"CUDA_LAUNCH_BLOCKING", "1"}});
    CHECK(p.variants[2].env == std::map<std::string, std::string>{{"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"}});
  }
  SUBCASE("rocm, HIP variables only") {
    Profile p = builtin_profile("rocm");
    REQUIRE(names_of(p.variants) ==
            std::vector<std::string>{"blocking_serialized", "launch_blocking", "serialize_kernel"});
    CHECK(p.variants[0].env ==
          std::map<std::string, std::string>{{"AMD_SERIALIZE_KERNEL", "3"}, {"HIP_LAUNCH_BLOCKING", "1"}});
    CHECK(p.variants[1].env == std::map<std::string, std::string>{{"HIP_LAUNCH_BLOCKING", "1"}});
    CHECK(p.variants[2].env == std::map<std::string, std::string>{{"AMD_SERIALIZE_KERNEL", "3"}});
    for (const Variant& v : p.variants) {
      for (const auto& [key, value] : v.env) {
        CAPTURE(key);
        CHECK(key.find("CUDA") == std::string::npos);
      }
    }
  }
  SUBCASE("an unknown backend names the known ones") {
    REQUIRE_THROWS_WITH(builtin_profile("tpu"), "unknown backend 'tpu' (known backends: cpu, cuda, rocm)");
  }
}

TEST_CASE("builtin profile texts are the configs/ files as built") {
  REQUIRE(builtin_profile_texts().size() == 3);
  for (const BuiltinProfileText& p : builtin_profile_texts()) {
    CAPTURE(p.backend);
    std::filesystem::path file =
        std::filesystem::path(AOTI_BISECT_SOURCE_DIR) / "configs" / (std::string(p.backend) + ".yaml");
    CHECK(std::string(p.yaml) == fixture::read(file));
  }
}

TEST_SUITE_END();

TEST_CASE("parse_user_config: inductor_configs become JSON scalars for the instrumented build") {
  using namespace aoti_bisect;
  UserConfig c = parse_user_config(
      "inductor_configs:\n  assert_indirect_indexing: false\n  cpp.threads: 4\n  x: 1.5\n  "
      "cpp.inject_relu_bug_TESTING_ONLY: accuracy\n  q: '3'\n",
      "c.yaml");
  CHECK(c.inductor_configs["assert_indirect_indexing"] == false);
  CHECK(c.inductor_configs["cpp.threads"] == 4);
  CHECK(c.inductor_configs["x"] == 1.5);
  CHECK(c.inductor_configs["cpp.inject_relu_bug_TESTING_ONLY"] == "accuracy");
  CHECK(c.inductor_configs["q"] == "3");
  CHECK_THROWS_WITH(parse_user_config("inductor_configs: [1]\n", "c.yaml"),
                    doctest::Contains("c.yaml:1:19: error: 'inductor_configs' must be a map"));
}
