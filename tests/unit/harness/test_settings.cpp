#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "harness/settings.hpp"

namespace fs = std::filesystem;
using namespace aoti_bisect;

namespace {

bool sets_nvidia_variables(const Profile& p) {
  for (const Variant& v : p.variants) {
    for (const auto& [key, value] : v.env) {
      if (key.find("CUDA") != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

// A stand-in runner: a script that prints `line` for --versions.
fs::path fake_runner(const std::string& name, const std::string& body) {
  fs::path p = fs::absolute(name);
  std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

}  // namespace

TEST_SUITE_BEGIN("phase");

TEST_CASE("choose_profile: ROCm LibTorch runs cuda packages with the rocm profile") {
  RunOptions opt;
  SUBCASE("a cuda package and a HIP build of LibTorch: rocm, and no NVIDIA variable") {
    Profile p = choose_profile(opt, "cuda", "6.2.41133");
    CHECK(p.backend == "rocm");
    CHECK_FALSE(sets_nvidia_variables(p));
  }
  SUBCASE("a cuda package and a CUDA build: cuda") {
    Profile p = choose_profile(opt, "cuda", "");
    CHECK(p.backend == "cuda");
    CHECK(sets_nvidia_variables(p));
  }
  SUBCASE("a cpu package stays cpu, whatever the build") {
    CHECK(choose_profile(opt, "cpu", "6.2.41133").backend == "cpu");
  }
  SUBCASE("--backend wins") {
    opt.backend = "cuda";
    CHECK(choose_profile(opt, "cuda", "6.2.41133").backend == "cuda");
    opt.backend = "rocm";
    CHECK(choose_profile(opt, "cuda", "").backend == "rocm");
  }
}

TEST_CASE("runner_hip_version: asks the runner, and says nothing when it cannot") {
  RunOptions opt;
  opt.out_dir = fs::absolute("runner-versions-out");  // the test binary's folder is shared: a name of its own
  fs::remove_all(opt.out_dir);
  fs::create_directories(opt.out_dir);
  SUBCASE("a ROCm runner") {
    opt.runner = fake_runner("rocm-runner",
                             "[ \"$1\" = --versions ] || exit 2\n"
                             "echo 'a warning first'\n"
                             "echo '{\"torch\": \"2.11.0\", \"hip\": \"6.2.41133\"}'");
    CHECK(runner_hip_version(opt) == "6.2.41133");
    CHECK(choose_profile(opt, "cuda").backend == "rocm");
    CHECK(fs::is_empty(opt.out_dir));  // its output file is gone
  }
  SUBCASE("a CUDA runner") {
    opt.runner = fake_runner("cuda-runner", "echo '{\"torch\": \"2.11.0\", \"hip\": \"\"}'");
    CHECK(runner_hip_version(opt).empty());
    CHECK(choose_profile(opt, "cuda").backend == "cuda");
  }
  SUBCASE("a runner that fails or prints something else: the device key decides") {
    opt.runner = fake_runner("broken-runner", "echo '{\"hip\": \"6.2\"}'; exit 3");
    CHECK(runner_hip_version(opt).empty());
    opt.runner = fake_runner("chatty-runner", "echo 'not json'");
    CHECK(runner_hip_version(opt).empty());
    opt.runner = fs::absolute("no-such-runner");
    CHECK(runner_hip_version(opt).empty());
    CHECK(choose_profile(opt, "cuda").backend == "cuda");
  }
  SUBCASE("not asked for a cpu package or with --backend") {
    opt.runner = fake_runner("rocm-runner", "echo '{\"hip\": \"6.2\"}'");
    CHECK(choose_profile(opt, "cpu").backend == "cpu");
    opt.backend = "cuda";
    CHECK(choose_profile(opt, "cuda").backend == "cuda");
  }
}

TEST_SUITE_END();
