#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <doctest/doctest.h>
#include <zip.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "package/package.hpp"
#include "package_fixture.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

using fixture::error_of;

using fixture::make_package;
using fixture::make_zip;

}  // namespace

TEST_SUITE_BEGIN("package/package");

TEST_CASE("source_role: which generated source a file is, by its name") {
  CHECK(source_role("cxyz.wrapper.cpp") == SourceRole::wrapper);
  CHECK(source_role("cxyz.kernel.cpp") == SourceRole::kernel);
  CHECK(source_role("cxyz.cpp") == SourceRole::both);  // before the wrapper/kernel split
  CHECK(source_role("cxyz.wrapper.so") == SourceRole::none);
  CHECK(source_role("cxyz_metadata.json") == SourceRole::none);
  CHECK(source_role(".cpp") == SourceRole::none);
}

TEST_CASE("Package::open reads models, files, metadata and call sites") {
  make_package("m.pt2");
  Package p = Package::open("m.pt2");
  CHECK(p.prefix() == "pkg/");
  REQUIRE(p.models().size() == 1);
  const ModelFiles& m = p.select_model("");
  CHECK(m.name == "model");
  CHECK(m.device_key() == "cpu");
  CHECK(m.wrapper_cpp == "pkg/data/aotinductor/model/abc.wrapper.cpp");
  CHECK(m.kernel_cpp == "pkg/data/aotinductor/model/def.kernel.cpp");
  CHECK(m.shared_object == "pkg/data/aotinductor/model/abc.wrapper.so");
  CHECK(p.exported_programs().empty());
  CHECK(p.wrapper_info(m).call_sites.size() == 4);
}

TEST_CASE("Package::open finds an exported program inside (package_pt2 layout)") {
  make_zip("both.pt2", {{"both/data/aotinductor/model/a.wrapper.cpp", "x"},
                        {"both/data/aotinductor/model/a.wrapper.so", "y"},
                        {"both/models/model.json", "{}"}});
  Package p = Package::open("both.pt2");
  REQUIRE(p.exported_programs().size() == 1);
  CHECK(p.exported_programs()[0] == "model");
}

TEST_CASE("Package::open: bad packages get one clear line and exit code 4") {
  SUBCASE("missing file") {
    CHECK(error_of([] { Package::open("nope.pt2"); }) == "package 'nope.pt2' does not exist");
  }
  SUBCASE("not a zip") {
    write_file_atomic("text.pt2", "hello, this is not a zip archive at all");
    CHECK(error_of([] { Package::open("text.pt2"); }) ==
          "package 'text.pt2' is not a zip archive (a .pt2 package is one)");
  }
  SUBCASE("truncated") {
    make_package("full.pt2");
    std::string bytes = read_file("full.pt2", "x");
    write_file_atomic("cut.pt2", bytes.substr(0, bytes.size() / 2));
    std::string msg = error_of([] { Package::open("cut.pt2"); });
    CHECK(msg.find("package 'cut.pt2' ") == 0);
    bool damaged = msg.find("damaged or truncated") != std::string::npos || msg.find("not a zip") != std::string::npos;
    CHECK(damaged);
  }
  SUBCASE("no AOTI model") {
    make_zip("ep.pt2", {{"ep/models/model.json", "{}"}, {"ep/data/weights/w0", "0"}});
    CHECK(error_of([] { Package::open("ep.pt2"); }).find("holds no AOTInductor model") != std::string::npos);
  }
  SUBCASE("a directory") {
    fs::create_directories("dir.pt2");
    CHECK(error_of([] { Package::open("dir.pt2"); }).find("is a directory") != std::string::npos);
  }
  try {
    Package::open("nope.pt2");
  } catch (const Error& e) {
    CHECK(exit_code_of(e.kind()) == ExitCode::cannot_test);
  }
}

TEST_CASE("Package::select_model: an unknown name lists the models there are") {
  make_package("m.pt2");
  Package p = Package::open("m.pt2");
  try {
    p.select_model("encoder");
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "package 'm.pt2' has no model 'encoder'; it holds: model");
    CHECK(e.kind() == ErrorKind::usage);
  }
}

TEST_CASE("Package::extract writes the tree and returns the folder holding data/") {
  make_package("m.pt2");
  Package p = Package::open("m.pt2");
  fs::path root = p.extract("x");
  CHECK(root == fs::path("x/pkg"));
  CHECK(fs::file_size(root / "data/aotinductor/model/abc.wrapper.so") == 5000);
}

TEST_CASE("Package::extract for one model: its files and the shared weights, not the rest") {
  make_zip("two.pt2", {{"two/data/aotinductor/enc/a.wrapper.cpp", "x"},
                       {"two/data/aotinductor/enc/a.wrapper.so", "y"},
                       {"two/data/aotinductor/enc/a_metadata.json", "{\"AOTI_DEVICE_KEY\": \"cpu\"}"},
                       {"two/data/aotinductor/dec/b.wrapper.cpp", "x"},
                       {"two/data/aotinductor/dec/b.wrapper.so", "z"},
                       {"two/data/aotinductor/dec/b_metadata.json", "{\"AOTI_DEVICE_KEY\": \"cpu\"}"},
                       {"two/data/weights/weight_0", "w"},
                       {"two/data/constants/tensor_0", "c"},
                       {"two/data/sample_inputs/enc.pt", "s"},
                       {"two/models/enc.json", "{}"}});
  Package p = Package::open("two.pt2");
  fs::path root = p.extract("x", &p.select_model("enc"));
  CHECK(root == fs::path("x/two"));
  CHECK(fs::exists(root / "data/aotinductor/enc/a.wrapper.so"));
  CHECK(fs::exists(root / "data/aotinductor/enc/a_metadata.json"));
  CHECK(fs::exists(root / "data/weights/weight_0"));
  CHECK(fs::exists(root / "data/constants/tensor_0"));
  CHECK_FALSE(fs::exists(root / "data/aotinductor/dec"));
  CHECK_FALSE(fs::exists(root / "data/sample_inputs"));
  CHECK_FALSE(fs::exists(root / "models"));
  fs::path all = p.extract("y");
  CHECK(fs::exists(all / "data/aotinductor/dec/b.wrapper.so"));
  CHECK(fs::exists(all / "models/enc.json"));
}

TEST_CASE("Package::extract refuses entries that escape the folder") {
  make_zip("evil.pt2", {{"data/aotinductor/model/a.wrapper.so", "y"}, {"../evil.txt", "z"}});
  Package p = Package::open("evil.pt2");
  CHECK(error_of([&] { p.extract("x"); }).find("unsafe entry name '../evil.txt'") != std::string::npos);
  CHECK_FALSE(fs::exists("evil.txt"));
}

TEST_SUITE_END();
