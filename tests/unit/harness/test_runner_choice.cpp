// Which runner runs a package (harness/runner_choice.hpp): the decision
// alone, on made-up installs; the end-to-end tests build a real runner
// against another torch (tests/e2e/test_versions.cpp).

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "harness/runner_build.hpp"
#include "harness/runner_choice.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

TorchInstall install(const std::string& dir, const std::string& version) {
  return TorchInstall{dir, version, dir + "/../../../../bin/python3"};
}

}  // namespace

TEST_SUITE_BEGIN("harness/runner_choice");

TEST_CASE("a runner named outright is used as given") {
  PickInputs in;
  in.runner_named = true;
  in.package_install = install("/v214/torch", "2.14.1+cu130");
  in.beside = install("/sys/torch", "2.13.0+cpu");
  int asked = 0;
  RunnerPick p = pick_runner(in, [&] {
    ++asked;
    return std::optional<TorchInstall>();
  });
  CHECK(p.kind == RunnerPick::Kind::named);
  CHECK(asked == 0);
}

TEST_CASE("the package's own torch: the runner beside when it is that torch, else one per torch") {
  PickInputs in;
  in.package.torch_dir = "/v214/torch";
  in.package_install = install("/v214/torch", "2.14.1+cu130");
  in.beside = install("/sys/torch", "2.13.0+cpu");
  int asked = 0;
  auto python3 = [&] {
    ++asked;
    return std::optional<TorchInstall>(install("/sys/torch", "2.13.0+cpu"));
  };
  RunnerPick p = pick_runner(in, python3);
  CHECK(p.kind == RunnerPick::Kind::per_torch);
  CHECK(p.torch.version == "2.14.1+cu130");
  CHECK(p.torch.torch_dir == "/v214/torch");
  CHECK(p.why == "the package's own torch");
  CHECK_FALSE(p.package_torch_absent);
  CHECK(asked == 0);  // python3 is not asked when the package's torch is there

  in.beside = install("/v214/torch", "2.14.1+cu130");
  p = pick_runner(in, python3);
  CHECK(p.kind == RunnerPick::Kind::beside);
  CHECK(p.torch.version == "2.14.1+cu130");

  // Another folder holding the same version is the same torch.
  in.beside = install("/elsewhere/torch", "2.14.1+cu130");
  CHECK(pick_runner(in, python3).kind == RunnerPick::Kind::beside);
  // The same release of another build (CPU wheel, CUDA wheel) is not.
  in.beside = install("/elsewhere/torch", "2.14.1+cpu");
  CHECK(pick_runner(in, python3).kind == RunnerPick::Kind::per_torch);
}

TEST_CASE("--python wins over the package's own torch") {
  PickInputs in;
  in.named_python = install("/v215/torch", "2.15.0+cu132");
  in.package.torch_dir = "/v214/torch";
  in.package_install = install("/v214/torch", "2.14.1+cu130");
  in.beside = install("/sys/torch", "2.13.0+cpu");
  RunnerPick p = pick_runner(in, [] { return std::optional<TorchInstall>(); });
  CHECK(p.kind == RunnerPick::Kind::per_torch);
  CHECK(p.torch.version == "2.15.0+cu132");
  CHECK(p.why == "the torch of the Python given (--python or AOTI_BISECT_PYTHON)");

  in.named_python = install("/sys/torch", "2.13.0+cpu");
  p = pick_runner(in, [] { return std::optional<TorchInstall>(); });
  CHECK(p.kind == RunnerPick::Kind::beside);  // the user asked for this torch: a load failure says why
}

TEST_CASE("the package's torch gone: python3's, and the pick says the package's is absent") {
  PickInputs in;
  in.package.torch_dir = "/gone/torch";
  in.beside = install("/sys/torch", "2.13.0+cpu");
  RunnerPick p = pick_runner(in, [] { return std::optional<TorchInstall>(install("/sys/torch", "2.13.0+cpu")); });
  CHECK(p.kind == RunnerPick::Kind::beside);
  CHECK(p.package_torch_absent);
  CHECK(p.why == "python3's torch (the package's, /gone/torch, is no longer installed there)");

  p = pick_runner(in, [] { return std::optional<TorchInstall>(install("/v214/torch", "2.14.1+cu130")); });
  CHECK(p.kind == RunnerPick::Kind::per_torch);
  CHECK(p.torch.version == "2.14.1+cu130");

  // No python3 with torch: the runner beside.
  p = pick_runner(in, [] { return std::optional<TorchInstall>(); });
  CHECK(p.kind == RunnerPick::Kind::beside);
  CHECK(p.package_torch_absent);
}

TEST_CASE("a package that names no torch keeps the runner beside, asking nothing") {
  PickInputs in;
  in.beside = install("/sys/torch", "2.13.0+cpu");
  int asked = 0;
  RunnerPick p = pick_runner(in, [&] {
    ++asked;
    return std::optional<TorchInstall>();
  });
  CHECK(p.kind == RunnerPick::Kind::beside);
  CHECK(p.why == "the package names no torch");
  CHECK(asked == 0);
}

TEST_CASE("a pip install: the torch of the Python it is installed in, after --python and before the package's own") {
  PickInputs in;
  in.beside_exists = false;  // a pip install builds no runner beside the driver
  in.package.torch_dir = "/v214/torch";
  in.package_install = install("/v214/torch", "2.14.1+cu130");
  in.entry_python_path = "/venv/bin/python";
  in.entry_python = install("/venv/torch", "2.13.0+cpu");
  in.entry_python->python = "/venv/bin/python";
  int asked = 0;
  auto python3 = [&] {
    ++asked;
    return std::optional<TorchInstall>(install("/sys/torch", "2.12.0+cpu"));
  };
  RunnerPick p = pick_runner(in, python3);
  CHECK(p.kind == RunnerPick::Kind::per_torch);
  CHECK(p.torch.version == "2.13.0+cpu");
  CHECK(p.why == "the torch of the Python aoti-bisect is installed in (/venv/bin/python)");

  in.named_python = install("/v215/torch", "2.15.0+cu132");
  CHECK(pick_runner(in, python3).torch.version == "2.15.0+cu132");
  in.named_python.reset();

  // pipx: its own venv has no torch; the package's own torch is next.
  in.entry_python.reset();
  p = pick_runner(in, python3);
  CHECK(p.kind == RunnerPick::Kind::per_torch);
  CHECK(p.torch.version == "2.14.1+cu130");
  CHECK(p.why == "the package's own torch");
  CHECK(asked == 0);

  // A package that names no torch: python3's, since there is no runner beside.
  in.package = {};
  in.package_install.reset();
  p = pick_runner(in, python3);
  CHECK(p.kind == RunnerPick::Kind::per_torch);
  CHECK(p.torch.version == "2.12.0+cpu");
  CHECK(p.why == "python3's torch (the package names no torch folder)");
}

TEST_CASE("no torch anywhere and no runner beside: none, saying what was tried") {
  PickInputs in;
  in.beside_exists = false;
  in.entry_python_path = "/pipx/venvs/aoti-bisect/bin/python";
  in.package.torch_dir = "/gone/torch";
  RunnerPick p = pick_runner(in, [] { return std::optional<TorchInstall>(); });
  CHECK(p.kind == RunnerPick::Kind::none);
  CHECK(p.why ==
        "the Python aoti-bisect is installed in (/pipx/venvs/aoti-bisect/bin/python) has no torch; the package's "
        "torch folder /gone/torch holds no torch now; python3 on PATH has no torch");
  in.package = {};
  p = pick_runner(in, [] { return std::optional<TorchInstall>(); });
  CHECK(p.kind == RunnerPick::Kind::none);
  CHECK(p.why.find("the package names no torch folder; python3 on PATH has no torch") != std::string::npos);
}

TEST_CASE("buildable_torch: a folder with TorchConfig.cmake, lib/ and a version; its environment's python") {
  fs::path root = fs::temp_directory_path() / "aoti-runner-choice-test";
  fs::remove_all(root);
  fs::path torch = root / "venv" / "lib" / "python3.11" / "site-packages" / "torch";
  fs::create_directories(torch / "lib");
  CHECK_FALSE(buildable_torch(torch));  // no CMake package
  fs::create_directories(torch / "share" / "cmake" / "Torch");
  std::ofstream(torch / "share" / "cmake" / "Torch" / "TorchConfig.cmake") << "# test\n";
  CHECK_FALSE(buildable_torch(torch));  // no version
  std::ofstream(torch / "version.py") << "__version__ = '2.14.1+cu130'\n";
  auto t = buildable_torch(torch);
  REQUIRE(t);
  CHECK(t->version == "2.14.1+cu130");
  CHECK(t->python.empty());  // no bin/python3 in the environment
  fs::create_directories(root / "venv" / "bin");
  std::ofstream(root / "venv" / "bin" / "python3") << "";
  t = buildable_torch(torch);
  REQUIRE(t);
  CHECK(fs::path(t->python).filename() == "python3");
  CHECK(fs::equivalent(fs::path(t->python).parent_path(), root / "venv" / "bin"));
  CHECK_FALSE(buildable_torch(root / "absent"));
  fs::remove_all(root);
}

TEST_CASE("one runner per torch installation: --python and the package's own torch give one cache key") {
  fs::path root = fs::temp_directory_path() / "aoti-runner-key-test";
  fs::remove_all(root);
  fs::path torch = root / "site-packages" / "torch";
  fs::create_directories(torch / "lib");
  fs::create_directories(torch / "share" / "cmake" / "Torch");
  std::ofstream(torch / "share" / "cmake" / "Torch" / "TorchConfig.cmake") << "# test\n";
  std::ofstream(torch / "version.py") << "__version__ = '2.15.0+cu132'\n";
  // A "python" whose distribution metadata says 2.15.0 (no local version),
  // as importlib.metadata does for a CUDA wheel.
  fs::path python = root / "python3";
  std::ofstream(python) << "#!/bin/sh\necho 2.15.0\necho " << torch.string() << "\n";
  fs::permissions(python, fs::perms::owner_all);
  auto named = python_torch(python.string());
  REQUIRE(std::holds_alternative<TorchInstall>(named));
  auto found = buildable_torch(torch);
  REQUIRE(found);
  CHECK(std::get<TorchInstall>(named).version == "2.15.0+cu132");
  CHECK(runner_cache_path(std::get<TorchInstall>(named), root / "cache") == runner_cache_path(*found, root / "cache"));
  fs::remove_all(root);
}

TEST_CASE("python_torch: a Python that does not exist, or has no torch, says so") {
  auto r = python_torch("/nonexistent/python3");
  REQUIRE(std::holds_alternative<std::string>(r));
  CHECK(std::get<std::string>(r) == "python '/nonexistent/python3' does not exist");
  // A program that fails on the question: "has no torch".
  r = python_torch("/bin/false");
  REQUIRE(std::holds_alternative<std::string>(r));
  CHECK(std::get<std::string>(r) == "python '/bin/false' has no torch");
}
