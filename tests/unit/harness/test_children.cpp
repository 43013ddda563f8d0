#include <cstdlib>

#include <doctest/doctest.h>

#include "harness/children.hpp"
#include "matrix/matrix.hpp"

using namespace aoti_bisect;

TEST_SUITE_BEGIN("harness/children");

TEST_CASE("runner_argv: a variant's run-under tool goes before the runner, found on PATH") {
  ::unsetenv(k_run_under_env);
  ChildSetup s;
  s.runner = "/opt/tool/aoti-bisect-runner";
  s.out_dir = "/tmp/out";
  s.model = "model";
  s.device_key = "cuda";
  s.inputs = "/tmp/in.pt";
  ChildRequest plain;
  plain.id = "baseline";
  plain.model.dir = "/tmp/out/.work/package";
  auto argv = runner_argv(s, plain, "/tmp/out/runs/baseline");
  REQUIRE_FALSE(argv.empty());
  CHECK(argv.front() == "/opt/tool/aoti-bisect-runner");

  ChildRequest under = plain;
  under.env[k_run_under_env] = "  env   FOO=1 ";
  argv = runner_argv(s, under, "/tmp/out/runs/memcheck.1");
  REQUIRE(argv.size() > 3);
  CHECK(argv[0].size() > 4);
  CHECK(argv[0].ends_with("/env"));  // the PATH lookup made it absolute
  CHECK(argv[1] == "FOO=1");
  CHECK(argv[2] == "/opt/tool/aoti-bisect-runner");

  // A reproduce command sets it in the driver's own environment.
  ::setenv(k_run_under_env, "env BAR=2", 1);
  argv = runner_argv(s, plain, "/tmp/out/runs/baseline");
  CHECK(argv[1] == "BAR=2");
  CHECK(argv[2] == "/opt/tool/aoti-bisect-runner");
  // The variant's value wins over the driver's.
  argv = runner_argv(s, under, "/tmp/out/runs/memcheck.1");
  CHECK(argv[1] == "FOO=1");
  ::unsetenv(k_run_under_env);
}

TEST_CASE("persistent_runs: the persistent runner serves CUDA jobs; AOTI_BISECT_PERSISTENT overrides either way") {
  ::unsetenv("AOTI_BISECT_PERSISTENT");
  CHECK(persistent_runs("cuda"));
  CHECK_FALSE(persistent_runs("cpu"));
  ::setenv("AOTI_BISECT_PERSISTENT", "1", 1);
  CHECK(persistent_runs("cpu"));
  ::setenv("AOTI_BISECT_PERSISTENT", "0", 1);
  CHECK_FALSE(persistent_runs("cuda"));
  ::unsetenv("AOTI_BISECT_PERSISTENT");
}

TEST_SUITE_END();
