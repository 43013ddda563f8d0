// Which torch built a package, from what it records: the wrapper's compile
// command (or a sources-only package's flags) and its library's needs.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "package/package_torch.hpp"
#include "package_fixture.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

TEST_SUITE_BEGIN("package/package_torch");

TEST_CASE("package_torch: the torch folder of the recorded compile command, its version where it is still there") {
  fs::create_directories("venv/lib/python3.11/site-packages/torch/include");
  std::ofstream("venv/lib/python3.11/site-packages/torch/version.py")
      << "from typing import Optional\n__all__ = ['__version__', 'debug']\n__version__ = '2.15.0+cu132'\n"
         "git_version = 'abc'\n";
  const std::string torch = fs::absolute("venv/lib/python3.11/site-packages/torch").string();
  std::string wrapper =
      "void run_impl() {}\n// Compile cmd\n// g++ /tmp/x.wrapper.cpp -D TORCH_INDUCTOR_CPP_WRAPPER "
      "-O1 -I/usr/include/python3.11 -I" +
      torch + "/include -I" + torch + "/include/torch/csrc/api/include -c -o /tmp/x.o\n";
  PackageTorch t = package_torch(wrapper, "", "");
  CHECK(t.torch_dir == torch);
  CHECK(t.version == "2.15.0");
  CHECK(t.known());
  // A folder no longer there: the folder is known, its version is not.
  PackageTorch gone =
      package_torch("// Compile cmd\n// g++ -isystem /nowhere/site-packages/torch/include -c\n", "", "");
  CHECK(gone.torch_dir == "/nowhere/site-packages/torch");
  CHECK(gone.version.empty());
  // A sources-only package's flags name it too; a LibTorch distribution has build-version.
  fs::create_directories("libtorch/include");
  std::ofstream("libtorch/build-version") << "2.13.0+cpu\n";
  const std::string lt = fs::absolute("libtorch").string();
  PackageTorch flags = package_torch("", R"({"include_dirs": [")" + lt + R"(/include"]})", "");
  CHECK(flags.torch_dir == lt);
  CHECK(flags.version == "2.13.0");
  CHECK(!package_torch("no compile command", "", "").known());
}

TEST_CASE("torch_release: the release without its local part") {
  CHECK(torch_release("2.15.0+cu132") == "2.15.0");
  CHECK(torch_release("2.13.0") == "2.13.0");
  CHECK(torch_release("").empty());
}
