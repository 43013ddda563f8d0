#pragma once
// What a model's shared object says about how it calls functions, read from
// the file (ELF64, little-endian): whether it binds its own symbols
// (DT_SYMBOLIC), which functions it reaches through its GOT (PLT or
// -fno-plt slots), and what it defines. The driver uses it to decide whether
// interposition can see every call site; the runner, to find the GOT slots
// it rebinds (lib/torchside/hook_binding.cpp).

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

struct GotSlot {
  std::string symbol;
  uint64_t offset = 0;  // r_offset: the slot's address relative to the load base
  bool plt = false;     // R_X86_64_JUMP_SLOT (else GLOB_DAT)
};

struct ElfFacts {
  bool symbolic = false;                    // DT_SYMBOLIC or DF_SYMBOLIC: own calls bypass the PLT
  std::vector<GotSlot> slots;               // function slots by symbol name
  std::map<std::string, uint64_t> defined;  // functions it defines -> value (relative to the load base)
  // Symbols named _binary_* (the start and end of embedded blobs such as
  // the weights, _binary_constants_bin_start/_end): where they lie in the file.
  struct Place {
    uint64_t file_offset = 0;
    bool writable = false;  // in a writable segment (.ldata, not .lrodata)
  };
  std::map<std::string, Place> blobs;
  std::vector<std::string> needed;  // DT_NEEDED: the libraries it links ("libtorch_cpu.so")
};

// The bytes of the weights the library embeds (from _binary_constants_bin_start
// to _end); nullopt when it has no such symbols.
std::optional<uint64_t> embedded_weight_bytes(const ElfFacts& elf);

// Throws Error(cannot_test) naming `path` when it is not a readable ELF64
// shared object ("truncated", "not an ELF file", ...).
ElfFacts read_elf_facts(const std::filesystem::path& path);
ElfFacts parse_elf_facts(std::string_view bytes, const std::string& what);

}  // namespace aoti_bisect
