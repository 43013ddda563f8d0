#include <cstdlib>

#include <doctest/doctest.h>

#include "job/job.hpp"

using namespace aoti_bisect;

TEST_SUITE_BEGIN("job");

TEST_CASE("exit_code_for: the exit-code contract of every verdict") {
  CHECK(static_cast<int>(exit_code_for(Verdict::clean)) == 0);
  CHECK(static_cast<int>(exit_code_for(Verdict::isolated)) == 1);
  CHECK(static_cast<int>(exit_code_for(Verdict::not_isolated)) == 3);
  CHECK(static_cast<int>(exit_code_for(Verdict::inconclusive)) == 3);
  CHECK(static_cast<int>(exit_code_for(Verdict::suppressed_by_instrumentation)) == 3);
  CHECK(static_cast<int>(exit_code_for(Verdict::could_not_test)) == 4);
  CHECK(static_cast<int>(exit_code_for(Verdict::internal_error)) == 5);
  CHECK(static_cast<int>(exit_code_for(Verdict::interrupted)) == 130);
}

TEST_CASE("git_bisect_exit_code: good, bad, skip, abort") {
  CHECK(git_bisect_exit_code(ExitCode::clean) == 0);
  CHECK(git_bisect_exit_code(ExitCode::isolated) == 1);
  CHECK(git_bisect_exit_code(ExitCode::not_isolated) == 1);
  CHECK(git_bisect_exit_code(ExitCode::cannot_test) == 125);
  CHECK(git_bisect_exit_code(ExitCode::usage) == 128);
  CHECK(git_bisect_exit_code(ExitCode::internal) == 128);
  CHECK(git_bisect_exit_code(ExitCode::interrupted) == 130);
}

TEST_SUITE_END();

#include "job/environment.hpp"

TEST_CASE("probe_host_environment: OS always; Python when python3 is on PATH") {
  aoti_bisect::Environment env;
  aoti_bisect::probe_host_environment(env);
  CHECK(env.os.rfind("Linux ", 0) == 0);
  if (std::system("python3 --version >/dev/null 2>&1") == 0) {
    CHECK(env.python_version.size() >= 3);
    CHECK(env.python_version.find('.') != std::string::npos);
  }
}
