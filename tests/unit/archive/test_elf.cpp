#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include <doctest/doctest.h>

#include "archive/elf.hpp"
#include "common/error.hpp"

using namespace aoti_bisect;

TEST_SUITE_BEGIN("archive/elf");

TEST_CASE("read_elf_facts: the slots an executable calls libraries through, and no DT_SYMBOLIC") {
  ElfFacts f = read_elf_facts("/proc/self/exe");
  CHECK_FALSE(f.symbolic);
  REQUIRE_FALSE(f.slots.empty());
  // This test program calls operator new (libstdc++) through a slot.
  bool has_new = std::any_of(f.slots.begin(), f.slots.end(), [](const GotSlot& s) { return s.symbol == "_Znwm"; });
  CHECK(has_new);
  for (const auto& s : f.slots) {
    CHECK(s.offset > 0);
  }
}

TEST_CASE("parse_elf_facts: not ELF, truncated, and wrong class are one-line cannot_test errors") {
  auto message = [](const std::string& bytes) {
    try {
      parse_elf_facts(bytes, "the model library 'm.so'");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::cannot_test);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message("hello").find("'m.so' is not an ELF file") != std::string::npos);
  std::string header(64, '\0');
  header[0] = 0x7f, header[1] = 'E', header[2] = 'L', header[3] = 'F';
  header[4] = 1;  // ELFCLASS32
  header[5] = 1;
  CHECK(message(header).find("64-bit") != std::string::npos);
  header[4] = 2;
  header[0x20] = 0x40;  // e_phoff
  header[0x36] = 56;    // e_phentsize
  header[0x38] = 3;     // e_phnum: past the end
  CHECK(message(header).find("truncated") != std::string::npos);
}

TEST_CASE("parse_elf_facts: a library cut short past its tables is truncated, not loadable") {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  REQUIRE(bytes.size() > 100000);
  bytes.resize(65536);  // past the headers, short of the loaded segments
  try {
    parse_elf_facts(bytes, "the model library 'm.so'");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("'m.so' is truncated") != std::string::npos);
  }
}

TEST_SUITE_END();
