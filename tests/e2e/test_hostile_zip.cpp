// Hostile archives (issue 10): packages and torch.save files whose declared
// sizes lie. Memory follows the real content; each ends in one line, exit 4,
// verdict could_not_test and a written report, with no child started for
// what the driver can see is wrong.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"
#include "hand_zip.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

namespace {

// A copy of `src` whose entry ending in `suffix` is edited by `edit`.
void edited_copy(const fs::path& src, const fs::path& dst, const std::string& suffix,
                 const std::function<void(hand_zip::Entry&)>& edit) {
  auto entries = hand_zip::entries_of(src);
  bool found = false;
  for (auto& e : entries) {
    if (e.name.ends_with(suffix)) {
      edit(e);
      found = true;
    }
  }
  REQUIRE(found);
  hand_zip::write(dst, entries);
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  s.replace(at, from.size(), to);
}

void check_could_not_test(const e2e::Result& r, const std::string& says) {
  CAPTURE(r.err);
  CHECK(r.code() == 4);
  CHECK(last_tool_line(r).find("aoti-bisect: error: ") == 0);
  CHECK(last_tool_line(r).find(says) != std::string::npos);
  REQUIRE(r.report.is_object());
  CHECK(r.report["verdict"] == "could_not_test");
  CHECK(r.report["error"].get<std::string>().find(says) != std::string::npos);
  CHECK(r.report["runs"].empty());  // refused before any child
}

}  // namespace

TEST_SUITE_BEGIN("e2e/hostile-zip");

TEST_CASE("hostile zip: a package entry that declares 64 GB") {
  edited_copy(example("nan_midway.pt2"), "bomb.pt2", ".wrapper.so", [](hand_zip::Entry& e) {
    e.declared = uint64_t{64} << 30;
    e.deflate = true;
  });
  auto r = run_tool({"run", "bomb.pt2", "--inputs", example("nan_midway.inputs.pt").string()}, "out");
  check_could_not_test(r, "package 'bomb.pt2': entry 'nan_midway/data/aotinductor/model/");
  CHECK(last_tool_line(r).find(".wrapper.so' declares 68719476736 bytes, more than a ") != std::string::npos);
  CHECK(last_tool_line(r).find("; rebuild the package") != std::string::npos);
}

TEST_CASE("hostile zip: package entries that clash as file and folder") {
  auto entries = hand_zip::entries_of(example("nan_midway.pt2"));
  entries.push_back({"nan_midway/byteorder/x", "little"});
  hand_zip::write("clash.pt2", entries);
  auto r = run_tool({"run", "clash.pt2", "--inputs", example("nan_midway.inputs.pt").string()}, "out");
  check_could_not_test(r,
                       "package 'clash.pt2': entry 'nan_midway/byteorder' is both a file and the folder of entry "
                       "'nan_midway/byteorder/x'; rebuild the package");
}

TEST_CASE("hostile zip: an inputs file whose record declares 4 GB") {
  edited_copy(example("nan_midway.inputs.pt"), "big.inputs.pt", "/data/0", [](hand_zip::Entry& e) {
    e.declared = uint64_t{0xFFFFFFFE};
    e.deflate = true;
  });
  auto r = run_tool({"run", example("nan_midway.pt2").string(), "--inputs", "big.inputs.pt"}, "out");
  check_could_not_test(r,
                       "inputs file 'big.inputs.pt': entry 'nan_midway.inputs/data/0' declares 4294967294 bytes, "
                       "more than a ");
  CHECK(last_tool_line(r).find("; save it again with torch.save") != std::string::npos);
}

TEST_CASE("hostile zip: torch.save files whose pickle asks for more than the file holds") {
  const fs::path src = example("nan_midway.inputs.pt");
  SUBCASE("one element expanded to 4 GiB (the child hashed 4 GiB, then said input_mismatch)") {
    edited_copy(src, "expand.inputs.pt", "/data.pkl", [&](hand_zip::Entry& e) {
      // (offset 0, size (8, 16), stride (16, 1)) -> size (8, 2^27), stride (0, 0)
      replace_once(e.data, std::string("K\x00K\x08K\x10\x86", 7), std::string("K\x00K\x08J\x00\x00\x00\x08\x86", 10));
      replace_once(e.data, std::string("K\x10K\x01\x86", 5), std::string("K\x00K\x00\x86", 5));
    });
    auto r = run_tool({"run", example("nan_midway.pt2").string(), "--inputs", "expand.inputs.pt"}, "out");
    check_could_not_test(r,
                         "inputs file 'expand.inputs.pt': a tensor of shape [8, 134217728] takes 4294967296 "
                         "bytes, more than a ");
  }
  SUBCASE("a storage that claims more elements than its record (the child crashed: a 'reproduced' failure)") {
    edited_copy(src, "lie.inputs.pt", "/data.pkl", [&](hand_zip::Entry& e) {
      replace_once(e.data, "K\x80t", std::string("J\x00\x00\x10\x00t", 6));  // 128 -> 2^20 elements
    });
    auto r = run_tool({"run", example("nan_midway.pt2").string(), "--inputs", "lie.inputs.pt"}, "out");
    check_could_not_test(r,
                         "inputs file 'lie.inputs.pt': storage '0' claims 1048576 elements of 4 bytes, but its "
                         "record holds 512 bytes; save it again with torch.save");
  }
  SUBCASE("the same for a reference file") {
    edited_copy(example("nan_midway.expected.pt"), "lie.expected.pt", "/data.pkl", [&](hand_zip::Entry& e) {
      replace_once(e.data, "K t", std::string("J\x00\x00\x10\x00t", 6));  // 32 -> 2^20 elements
    });
    auto r = run_tool(
        {"run", example("nan_midway.pt2").string(), "--inputs", src.string(), "--reference", "lie.expected.pt"}, "out");
    check_could_not_test(r, "reference file 'lie.expected.pt': storage '0' claims 1048576 elements");
  }
}
