// Hostile zip archives: declared sizes that lie, entries past the cap,
// entries that clash as file and folder. Each gets one line, cannot_test,
// and memory that follows the archive's real content.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "archive/zip_libzip.hpp"
#include "archive/zip_stored.hpp"
#include "common/error.hpp"
#include "hand_zip.hpp"
#include "package/package.hpp"
#include "package_fixture.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

using fixture::error_of;

const std::string k_so = "pkg/data/aotinductor/model/abc.wrapper.so";
const std::string k_meta = "pkg/data/aotinductor/model/abc.wrapper_metadata.json";

// fixture::make_package's entries, written by hand so that sizes can lie.
std::vector<hand_zip::Entry> package_entries() {
  return {{"pkg/archive_format", "pt2"},
          {"pkg/data/aotinductor/model/abc.wrapper.cpp", fixture::text("nan_plain.wrapper.cpp")},
          {"pkg/data/aotinductor/model/def.kernel.cpp", "// kernels"},
          {k_meta, R"({"AOTI_DEVICE_KEY": "cpu", "AOTI_PLATFORM": "linux"})"},
          {k_so, std::string(5000, 'x')}};
}

// The package with entry `name` claiming `declared` bytes (deflated, as a
// real bomb would be).
std::string lying_package(const std::string& file, const std::string& name, uint64_t declared) {
  auto entries = package_entries();
  for (auto& e : entries) {
    if (e.name == name) {
      e.declared = declared;
      e.deflate = true;
    }
  }
  hand_zip::write(file, entries);
  return file;
}

std::optional<ErrorKind> kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return std::nullopt;
}

std::string cap_text(const std::string& file) {
  uint64_t size = fs::file_size(file);
  return fmt::format("a {}-byte archive can hold (at most {})", size, zip_expansion_cap(size));
}

}  // namespace

TEST_SUITE_BEGIN("archive/zip");

TEST_CASE("zip_expansion_cap: 1100 times the archive plus 1 MiB, saturating") {
  CHECK(zip_expansion_cap(0) == 1048576);
  CHECK(zip_expansion_cap(1000) == 1100000 + 1048576);
  CHECK(zip_expansion_cap(UINT64_MAX) == UINT64_MAX);
}

TEST_CASE("the hand-written archive reads back as a normal package") {
  hand_zip::write("honest.pt2", package_entries());
  Package p = Package::open("honest.pt2");
  CHECK(p.select_model("").device_key() == "cpu");
  CHECK(p.wrapper_info(p.select_model("")).call_sites.size() == 4);
  fs::path root = p.extract("out");
  CHECK(fs::file_size(root / "data/aotinductor/model/abc.wrapper.so") == 5000);
}

TEST_CASE("a large stored entry is copied whole and its checksum checked; a deflated one is streamed") {
  auto entries = package_entries();
  std::string so(300000, '\0');
  for (size_t i = 0; i < so.size(); ++i) {
    so[i] = static_cast<char>((i * 7919) % 251);
  }
  entries.back().data = so;
  entries.push_back({"pkg/data/aotinductor/model/big.deflated", so, std::nullopt, true});
  hand_zip::write("stored.pt2", entries);
  auto stored = stored_entry("stored.pt2", k_so);
  REQUIRE(stored.has_value());
  CHECK(stored->size == so.size());
  CHECK(stored->crc == hand_zip::crc32(so));
  CHECK(fixture::read("stored.pt2").substr(stored->data_offset, so.size()) == so);
  CHECK_FALSE(stored_entry("stored.pt2", "pkg/data/aotinductor/model/big.deflated").has_value());
  CHECK_FALSE(stored_entry("stored.pt2", "pkg/no/such/entry").has_value());
  CHECK(copy_stored("stored.pt2", *stored, "copied.so") == CopyResult::copied);
  CHECK(fixture::read("copied.so") == so);
  fs::path root = Package::open("stored.pt2").extract("out");
  CHECK(fixture::read(root / "data/aotinductor/model/abc.wrapper.so") == so);
  CHECK(fixture::read(root / "data/aotinductor/model/big.deflated") == so);

  // One byte of the library changed in the archive: damaged, in one line.
  std::string bytes = fixture::read("stored.pt2");
  bytes[stored->data_offset + 1234] ^= 0x5A;
  std::ofstream("damaged.pt2", std::ios::binary | std::ios::trunc) << bytes;
  CHECK(copy_stored("damaged.pt2", *stored, "copied2.so") == CopyResult::bad_crc);
  Package damaged = Package::open("damaged.pt2");
  CHECK(error_of([&] { damaged.extract("out2"); }) ==
        fmt::format("package 'damaged.pt2': entry '{}' is damaged (truncated or bad checksum); rebuild the package",
                    k_so));
}

TEST_CASE("extract with `unchecked`: the large stored entries copied unread, check_copies reads them back") {
  auto entries = package_entries();
  std::string so(300000, '\0');
  for (size_t i = 0; i < so.size(); ++i) {
    so[i] = static_cast<char>((i * 31) % 253);
  }
  entries.back().data = so;
  hand_zip::write("later.pt2", entries);
  const std::string damaged_line = fmt::format(
      "package 'later_bad.pt2': entry '{}' is damaged (truncated or bad checksum); rebuild the package", k_so);

  std::vector<UncheckedCopy> unchecked;
  fs::path root = Package::open("later.pt2").extract("later_out", nullptr, &unchecked);
  REQUIRE(unchecked.size() == 1);  // the library only: the small entries are streamed and checked as read
  CHECK(unchecked[0].entry == k_so);
  CHECK(unchecked[0].file == root / "data/aotinductor/model/abc.wrapper.so");
  CHECK(fixture::read(unchecked[0].file) == so);
  CHECK(error_of([&] { check_copies("later.pt2", unchecked); }) == "(no error)");

  std::string bytes = fixture::read("later.pt2");
  auto stored = stored_entry("later.pt2", k_so);
  REQUIRE(stored.has_value());
  bytes[stored->data_offset + 777] ^= 0x21;
  std::ofstream("later_bad.pt2", std::ios::binary | std::ios::trunc) << bytes;
  std::vector<UncheckedCopy> bad;
  SUBCASE("a changed byte: the extraction passes, the check names the entry") {
    Package::open("later_bad.pt2").extract("later_bad_out", nullptr, &bad);
    REQUIRE(bad.size() == 1);
    CHECK(error_of([&] { check_copies("later_bad.pt2", bad); }) == damaged_line);
  }
  SUBCASE("a copy that cannot be read back: the archive's own entry is checked instead") {
    Package::open("later_bad.pt2").extract("later_gone_out", nullptr, &bad);
    REQUIRE(bad.size() == 1);
    fs::remove(bad[0].file);
    CHECK(error_of([&] { check_copies("later_bad.pt2", bad); }) == damaged_line);
  }
}

TEST_CASE("stored_entry: a ZIP64 entry's sizes come from its extra field") {
  auto entries = package_entries();
  const std::string so(100000, 'y');
  entries.back().data = so;
  entries.back().zip64 = true;
  hand_zip::write("zip64.pt2", entries);
  auto stored = stored_entry("zip64.pt2", k_so);
  REQUIRE(stored.has_value());
  CHECK(stored->size == so.size());
  CHECK(fixture::read("zip64.pt2").substr(stored->data_offset, so.size()) == so);
  fs::path root = Package::open("zip64.pt2").extract("out");
  CHECK(fixture::read(root / "data/aotinductor/model/abc.wrapper.so") == so);
}

TEST_CASE("Package::open: an entry that declares 64 GB is refused, naming the entry") {
  SUBCASE("the shared object") {
    std::string f = lying_package("big_so.pt2", k_so, uint64_t{64} << 30);
    CHECK(error_of([&] { Package::open(f); }) ==
          fmt::format("package 'big_so.pt2': entry '{}' declares 68719476736 bytes, more than {}; rebuild the package",
                      k_so, cap_text(f)));
    CHECK(kind_of([&] { Package::open(f); }) == ErrorKind::cannot_test);
  }
  SUBCASE("the metadata, which opening reads") {
    std::string f = lying_package("big_meta.pt2", k_meta, uint64_t{64} << 30);
    CHECK(error_of([&] { Package::open(f); }) ==
          fmt::format("package 'big_meta.pt2': entry '{}' declares 68719476736 bytes, more than {}; rebuild the "
                      "package",
                      k_meta, cap_text(f)));
  }
}

TEST_CASE("Package::open: entries that declare more than the cap in all are refused") {
  auto entries = package_entries();
  for (int i = 0; i < 4; ++i) {
    entries.push_back({fmt::format("pkg/extra/{}", i), "small", 1, true});
  }
  hand_zip::write("sum.pt2", entries);
  const uint64_t size = fs::file_size("sum.pt2");
  for (size_t i = entries.size() - 4; i < entries.size(); ++i) {
    entries[i].declared = zip_expansion_cap(size) / 3;  // each under the cap, four over it
  }
  hand_zip::write("sum.pt2", entries);
  REQUIRE(fs::file_size("sum.pt2") == size);
  std::string e = error_of([] { Package::open("sum.pt2"); });
  CHECK(e.find("package 'sum.pt2': entry 'pkg/extra/") == 0);
  CHECK(e.find("brings the bytes its entries declare to ") != std::string::npos);
  CHECK(e.find("; rebuild the package") != std::string::npos);
}

TEST_CASE("declared sizes that disagree with the bytes read are refused, reading or extracting") {
  SUBCASE("metadata that holds more than it declares") {
    std::string f = lying_package("meta_short.pt2", k_meta, 10);
    CHECK(error_of([&] { Package::open(f); }) ==
          fmt::format("package '{}': entry '{}' holds more bytes than the 10 it declares; rebuild the package", f,
                      k_meta));
  }
  SUBCASE("a shared object that holds fewer bytes than it declares") {
    std::string f = lying_package("so_long.pt2", k_so, 6000);
    Package p = Package::open(f);
    CHECK(error_of([&] { p.extract("out"); }) ==
          fmt::format("package '{}': entry '{}' declares 6000 bytes but holds 5000 (truncated or damaged); rebuild "
                      "the package",
                      f, k_so));
    CHECK(kind_of([&] { p.extract("out2"); }) == ErrorKind::cannot_test);
  }
  SUBCASE("a shared object that holds more bytes than it declares") {
    std::string f = lying_package("so_short.pt2", k_so, 4000);
    Package p = Package::open(f);
    CHECK(error_of([&] { p.extract("out"); }) ==
          fmt::format("package '{}': entry '{}' holds more bytes than the 4000 it declares; rebuild the package", f,
                      k_so));
  }
  SUBCASE("an entry read by name") {
    std::string f = lying_package("wrapper_short.pt2", "pkg/data/aotinductor/model/def.kernel.cpp", 3);
    Package p = Package::open(f);
    CHECK(error_of([&] {
            p.read_entry("pkg/data/aotinductor/model/def.kernel.cpp");
          }).find("holds more bytes than the 3 it declares; rebuild the package") != std::string::npos);
  }
}

TEST_CASE("Package::open: entries that clash as file and folder are refused") {
  struct Case {
    std::vector<std::string> extra;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{k_so + "/inner"}, fmt::format("entry '{}' is both a file and the folder of entry '{}/inner'", k_so, k_so)},
           {{"pkg/a/b/c", "pkg/a/b"}, "entry 'pkg/a/b' is both a file and the folder of entry 'pkg/a/b/c'"},
           {{"pkg/a/b", "pkg/a//b/./c"}, "entry 'pkg/a/b' is both a file and the folder of entry 'pkg/a//b/./c'"},
           {{"pkg/a/b/", "pkg/a/b"}, "entry 'pkg/a/b' is both a file and a folder (entry 'pkg/a/b/')"}}) {
    CAPTURE(c.says);
    auto entries = package_entries();
    for (const auto& name : c.extra) {
      entries.push_back({name, name.back() == '/' ? "" : "data"});
    }
    hand_zip::write("clash.pt2", entries);
    CHECK(error_of([] { Package::open("clash.pt2"); }) == "package 'clash.pt2': " + c.says + "; rebuild the package");
    CHECK(kind_of([] { Package::open("clash.pt2"); }) == ErrorKind::cannot_test);
  }
}

TEST_CASE("Package::extract: an entry that names no file is refused, not an internal error") {
  auto entries = package_entries();
  entries.push_back({"pkg/data/.", "x"});
  hand_zip::write("dot.pt2", entries);
  std::string e = error_of([] { Package::open("dot.pt2").extract("out"); });
  CHECK(e.find("package 'dot.pt2': entry 'pkg/data") == 0);
  CHECK(kind_of([] { Package::open("dot.pt2").extract("out"); }) == ErrorKind::cannot_test);
}

TEST_CASE("Package::extract: a name too long for the file system is the archive's fault") {
  auto entries = package_entries();
  entries.push_back({"pkg/" + std::string(300, 'n'), "x"});
  hand_zip::write("long.pt2", entries);
  Package p = Package::open("long.pt2");
  std::string e = error_of([&] { p.extract("out"); });
  CHECK(e.find("cannot be extracted (File name too long); rebuild the package") != std::string::npos);
  CHECK(kind_of([&] { p.extract("out"); }) == ErrorKind::cannot_test);
}

TEST_CASE("messages name entries on one line, whatever characters the names hold") {
  auto entries = package_entries();
  entries.push_back({"pkg/evil\nname\t\x7f", "data", uint64_t{64} << 30, true});
  hand_zip::write("newline.pt2", entries);
  std::string e = error_of([] { Package::open("newline.pt2"); });
  CHECK(e.find("package 'newline.pt2': entry 'pkg/evil\\nname\\x09\\x7f' declares 68719476736 bytes") == 0);
  CHECK(e.find('\n') == std::string::npos);
}
