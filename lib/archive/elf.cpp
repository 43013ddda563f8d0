// What a model library's ELF file says about how it calls functions (DT_SYMBOLIC, GOT slots).
#include "archive/elf.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "common/error.hpp"

namespace aoti_bisect {
namespace {

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& what) : m_b(bytes), m_what(what) {}

  template <typename T>
  T at(uint64_t off) const {
    if (off > m_b.size() || sizeof(T) > m_b.size() - off) {
      throw Error(ErrorKind::cannot_test, m_what + " is truncated (a table points past its end); rebuild the package");
    }
    T v;
    std::memcpy(&v, m_b.data() + off, sizeof(T));
    return v;
  }

  std::string str(uint64_t off) const {
    if (off >= m_b.size()) {
      throw Error(ErrorKind::cannot_test, m_what + " is truncated (a name points past its end); rebuild the package");
    }
    size_t end = m_b.find('\0', off);
    return std::string(m_b.substr(off, (end == std::string_view::npos ? m_b.size() : end) - off));
  }

 private:
  std::string_view m_b;
  const std::string& m_what;
};

// The dynamic table's entries parse_elf_facts reads: where the tables lie
// (virtual addresses) and their sizes.
struct ElfDynamicTable {
  uint64_t strtab = 0, symtab = 0, rela = 0, relasz = 0, jmprel = 0, pltrelsz = 0, syment = sizeof(Elf64_Sym);
  uint64_t gnu_hash = 0, hash = 0;  // gnu_hash is read but not used
  std::vector<uint64_t> needed;     // DT_NEEDED names, as offsets into the string table
};

// One parse of an ELF file's bytes: its segments, its dynamic table, and the
// facts gathered from them, every read through the bounds-checking Reader.
struct ElfParse {
  std::string_view bytes;
  const std::string& what;
  Reader r;
  std::vector<Elf64_Phdr> loads;
  std::optional<Elf64_Phdr> dynamic;
  ElfDynamicTable dyn;
  uint64_t str_off = 0, sym_off = 0;  // the string and symbol tables' file offsets
  ElfFacts facts;

  // The PT_LOAD segments and the PT_DYNAMIC one.
  void read_program_headers(const Elf64_Ehdr& eh) {
    for (int i = 0; i < eh.e_phnum; ++i) {
      auto ph = r.at<Elf64_Phdr>(eh.e_phoff + static_cast<uint64_t>(i) * eh.e_phentsize);
      if (ph.p_type == PT_LOAD) {
        loads.push_back(ph);
      } else if (ph.p_type == PT_DYNAMIC) {
        dynamic = ph;
      }
    }
  }

  // Every loaded segment's bytes within the file.
  void check_loads_in_file() const {
    for (const auto& ph : loads) {
      if (ph.p_offset + ph.p_filesz > bytes.size()) {
        throw Error(ErrorKind::cannot_test,
                    what + fmt::format(" is truncated ({} bytes; its segments need {}); rebuild the package",
                                       bytes.size(), ph.p_offset + ph.p_filesz));
      }
    }
  }

  // Virtual address -> file offset through the PT_LOAD segments.
  uint64_t file_off(uint64_t vaddr) const {
    for (const auto& ph : loads) {
      if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
        return ph.p_offset + (vaddr - ph.p_vaddr);
      }
    }
    throw Error(ErrorKind::cannot_test, what + " has a dynamic table outside its loaded segments (corrupt)");
  }

  // The dynamic table's entries up to DT_NULL; DT_SYMBOLIC and DF_SYMBOLIC go to facts.
  void read_dynamic_table() {
    for (uint64_t off = dynamic->p_offset; off + sizeof(Elf64_Dyn) <= dynamic->p_offset + dynamic->p_filesz;
         off += sizeof(Elf64_Dyn)) {
      auto d = r.at<Elf64_Dyn>(off);
      if (d.d_tag == DT_NULL) {
        break;
      }
      switch (d.d_tag) {
        case DT_STRTAB: dyn.strtab = d.d_un.d_ptr; break;
        case DT_SYMTAB: dyn.symtab = d.d_un.d_ptr; break;
        case DT_RELA: dyn.rela = d.d_un.d_ptr; break;
        case DT_RELASZ: dyn.relasz = d.d_un.d_val; break;
        case DT_JMPREL: dyn.jmprel = d.d_un.d_ptr; break;
        case DT_PLTRELSZ: dyn.pltrelsz = d.d_un.d_val; break;
        case DT_SYMENT: dyn.syment = d.d_un.d_val; break;
        case DT_HASH: dyn.hash = d.d_un.d_ptr; break;
        case DT_GNU_HASH: dyn.gnu_hash = d.d_un.d_ptr; break;
        case DT_SYMBOLIC: facts.symbolic = true; break;
        case DT_NEEDED: dyn.needed.push_back(d.d_un.d_val); break;
        case DT_FLAGS: facts.symbolic = facts.symbolic || (d.d_un.d_val & DF_SYMBOLIC) != 0; break;
        default: break;
      }
    }
  }

  // Dynamic symbol `index`, DT_SYMENT bytes apart.
  Elf64_Sym sym(uint64_t index) const { return r.at<Elf64_Sym>(sym_off + index * dyn.syment); }

  // The function slots a relocation table (PLT or GOT) fills.
  void collect_slots(uint64_t table, uint64_t size) {
    if (table == 0) {
      return;
    }
    uint64_t base = file_off(table);
    for (uint64_t off = 0; off + sizeof(Elf64_Rela) <= size; off += sizeof(Elf64_Rela)) {
      auto rel = r.at<Elf64_Rela>(base + off);
      uint32_t type = ELF64_R_TYPE(rel.r_info);
      uint32_t index = ELF64_R_SYM(rel.r_info);
      if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || index == 0) {
        continue;
      }
      auto s = sym(index);
      if (ELF64_ST_TYPE(s.st_info) != STT_FUNC &&
          !(ELF64_ST_TYPE(s.st_info) == STT_NOTYPE && s.st_shndx == SHN_UNDEF)) {
        continue;
      }
      facts.slots.push_back({r.str(str_off + s.st_name), rel.r_offset, type == R_X86_64_JUMP_SLOT});
    }
  }

  uint64_t dynamic_symbol_count() const {
    // The number of dynamic symbols: from DT_HASH, or the end of the symbol
    // table where the string table begins (the usual layout).
    uint64_t nsyms = 0;
    if (dyn.hash != 0) {
      nsyms = r.at<uint32_t>(file_off(dyn.hash) + 4);
    } else if (dyn.strtab > dyn.symtab) {
      nsyms = (dyn.strtab - dyn.symtab) / dyn.syment;
    }
    return nsyms;
  }

  // The functions the library defines, and where its _binary_* blobs lie.
  void collect_defined(uint64_t nsyms) {
    for (uint64_t i = 1; i < nsyms; ++i) {
      auto s = sym(i);
      if (s.st_shndx == SHN_UNDEF || s.st_name == 0) {
        continue;
      }
      if (ELF64_ST_TYPE(s.st_info) == STT_FUNC) {
        facts.defined.emplace(r.str(str_off + s.st_name), s.st_value);
      } else if (std::string name = r.str(str_off + s.st_name); name.rfind("_binary_", 0) == 0) {
        // Where an embedded blob (the weights) lies in the file.
        for (const auto& ph : loads) {
          if (s.st_value >= ph.p_vaddr && s.st_value <= ph.p_vaddr + ph.p_filesz) {
            facts.blobs[name] = {ph.p_offset + (s.st_value - ph.p_vaddr), (ph.p_flags & PF_W) != 0};
          }
        }
      }
    }
  }
};

}  // namespace

ElfFacts parse_elf_facts(std::string_view bytes, const std::string& what) {
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    throw Error(ErrorKind::cannot_test, what + " is not an ELF file (truncated or corrupt); rebuild the package");
  }
  ElfParse p{bytes, what, Reader(bytes, what)};
  auto eh = p.r.at<Elf64_Ehdr>(0);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    throw Error(ErrorKind::cannot_test, what + " is not a 64-bit little-endian ELF file");
  }
  p.read_program_headers(eh);
  p.check_loads_in_file();
  if (!p.dynamic) {
    throw Error(ErrorKind::cannot_test, what + " has no dynamic section: it is not a shared object AOTI can load");
  }
  p.read_dynamic_table();
  if (p.dyn.strtab == 0 || p.dyn.symtab == 0 || p.dyn.syment < sizeof(Elf64_Sym)) {
    throw Error(ErrorKind::cannot_test, what + " has no dynamic symbol table");
  }
  p.str_off = p.file_off(p.dyn.strtab);
  p.sym_off = p.file_off(p.dyn.symtab);
  for (uint64_t n : p.dyn.needed) {
    p.facts.needed.push_back(p.r.str(p.str_off + n));
  }
  p.collect_slots(p.dyn.jmprel, p.dyn.pltrelsz);
  p.collect_slots(p.dyn.rela, p.dyn.relasz);
  p.collect_defined(p.dynamic_symbol_count());
  return std::move(p.facts);
}

// Mapped, not read: a model's library can hold gigabytes of weights.
ElfFacts read_elf_facts(const std::filesystem::path& path) {
  std::string what = "the model library '" + path.filename().string() + "'";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(ErrorKind::cannot_test, what + " cannot be read: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    throw Error(ErrorKind::cannot_test, what + " is empty; rebuild the package");
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    throw Error(ErrorKind::cannot_test, what + " cannot be mapped: " + std::strerror(errno));
  }
  try {
    ElfFacts facts =
        parse_elf_facts(std::string_view(static_cast<const char*>(map), static_cast<size_t>(st.st_size)), what);
    ::munmap(map, static_cast<size_t>(st.st_size));
    return facts;
  } catch (...) {
    ::munmap(map, static_cast<size_t>(st.st_size));
    throw;
  }
}

std::optional<uint64_t> embedded_weight_bytes(const ElfFacts& elf) {
  auto start = elf.blobs.find("_binary_constants_bin_start");
  auto end = elf.blobs.find("_binary_constants_bin_end");
  if (start == elf.blobs.end() || end == elf.blobs.end() || end->second.file_offset < start->second.file_offset) {
    return std::nullopt;
  }
  return end->second.file_offset - start->second.file_offset;
}

}  // namespace aoti_bisect
