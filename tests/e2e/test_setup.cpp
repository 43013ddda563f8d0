// End-to-end: `aoti-bisect setup` builds the replay host ahead (issue 67),
// into the folder a job's replays read it from, and a job's culprit replay
// then finds it there instead of building it.

#include <filesystem>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

namespace {

std::vector<fs::path> hosts_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("aoti-bisect-replay-host-", 0) == 0 && e.path().extension() == ".o") {
      out.push_back(e.path());
    }
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/setup");

TEST_CASE("setup builds the replay host once; a job's culprit replay then finds it built") {
  const fs::path host_cache = fs::absolute("host-cache");
  const std::map<std::string, std::string> env = {{"AOTI_BISECT_REPLAY_HOST_CACHE", host_cache.string()}};
  auto first = run_tool({"setup", "--cache-dir", "cache"}, "", env, 900);
  CHECK(first.code() == 0);
  CHECK(first.err.find("aoti-bisect: building the replay host against torch in ") != std::string::npos);
  CHECK(first.out.find("setup: the runner beside aoti-bisect is built against torch 2.") != std::string::npos);
  CHECK(first.out.find("; the replay host is built (") != std::string::npos);
  auto hosts = hosts_in(host_cache);
  REQUIRE(hosts.size() == 1);
  const auto built_at = fs::last_write_time(hosts.front());

  auto again = run_tool({"setup", "--cache-dir", "cache"}, "", env, 120);
  CHECK(again.code() == 0);
  CHECK(again.out.find("; the replay host was built before") != std::string::npos);
  CHECK(again.err.find("building the replay host") == std::string::npos);

  // A job with a cold --cache-dir: its culprit's replay takes the host from
  // the installation's folder as it is.
  auto r = run_tool({"run", example("nan_midway.pt2").string(), "--inputs", example("nan_midway.inputs.pt").string(),
                     "--no-matrix", "--cache-dir", "job-cache"},
                    "out", env);
  CHECK(r.code() == 1);
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["root_cause"].is_object());
  CHECK(r.out.find("log of a negative value") != std::string::npos);  // the replay ran
  // The job's key for the host is setup's: no second host, the first untouched.
  CHECK(hosts_in(host_cache).size() == 1);
  CHECK(fs::last_write_time(hosts.front()) == built_at);
}

TEST_SUITE_END();
