// Binding the interposition hooks (codegen/hooks.hpp) into the model: the
// hook library is loaded RTLD_LOCAL (nothing it defines enters the global
// scope, and no child inherits it, unlike LD_PRELOAD), then each GOT slot of
// the model library whose symbol has a hook is pointed at the hook, and the
// hook's `real` pointer at the function the slot stood for. Only the model's
// own calls change; libtorch and the runner keep theirs.
//
// Why not the global scope: the runner links libtorch, which comes before
// any dlopen'ed library in the global search order, so a global definition
// of a C-shim function would never win the model's lookup.

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "archive/elf.hpp"
#include "codegen/hooks.hpp"
#include "common/error.hpp"
#include "torchside/internal.hpp"
#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {
namespace fs = std::filesystem;

namespace {

struct HookEntry {
  const char* symbol;
  void* hook;
  void** real;
};

struct Found {
  std::string want;
  std::string path;
  uintptr_t base = 0;
};

int find_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<Found*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') {
    return 0;
  }
  if (fs::path(info->dlpi_name).filename().string() == f->want) {
    f->path = info->dlpi_name;
    f->base = info->dlpi_addr;
  }
  return 0;  // keep the last one: the model is loaded after everything else
}

bool make_writable(void* address) {
  static const long page = ::sysconf(_SC_PAGESIZE);
  auto start = reinterpret_cast<uintptr_t>(address) & ~static_cast<uintptr_t>(page - 1);
  return ::mprotect(reinterpret_cast<void*>(start), static_cast<size_t>(page), PROT_READ | PROT_WRITE) == 0;
}

}  // namespace

ModelObject find_model_object(const std::string& model_library) {
  Found found;
  found.want = model_library;
  ::dl_iterate_phdr(find_object, &found);
  if (found.path.empty()) {
    throw Error(ErrorKind::internal, "the model library '" + model_library + "' is not loaded in the runner");
  }
  return {found.path, found.base, read_elf_facts(found.path)};
}

void* model_function(const ModelObject& model, const std::string& symbol) {
  if (auto d = model.elf.defined.find(symbol); d != model.elf.defined.end()) {
    return reinterpret_cast<void*>(model.base + d->second);  // the model's own kernel
  }
  if (void* f = ::dlsym(RTLD_DEFAULT, symbol.c_str())) {
    return f;  // libtorch's shim
  }
  // A library only the model depends on, loaded into its local scope
  // (libcuda.so.1 for cuLaunchKernel): the model's own lookup scope.
  void* f = nullptr;
  if (void* self = ::dlopen(model.path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    f = ::dlsym(self, symbol.c_str());
    ::dlclose(self);
  }
  return f;
}

int bind_got(const ModelObject& model, const std::vector<GotEntry>& entries, std::vector<std::string>& unbound) {
  std::map<std::string, const GotEntry*> by_symbol;
  for (const auto& e : entries) {
    by_symbol[e.symbol] = &e;
  }
  std::map<std::string, int> bound;
  int slots = 0;
  for (const auto& slot : model.elf.slots) {
    auto it = by_symbol.find(slot.symbol);
    if (it == by_symbol.end()) {
      continue;
    }
    const GotEntry* h = it->second;
    if (*h->real == nullptr) {
      *h->real = model_function(model, slot.symbol);
      if (*h->real == nullptr) {
        throw Error(ErrorKind::internal, "the function '" + slot.symbol + "' the model calls cannot be found");
      }
    }
    auto** got = reinterpret_cast<void**>(model.base + slot.offset);
    if (!make_writable(got)) {
      throw Error(ErrorKind::internal, "the model's GOT cannot be made writable: " + std::string(std::strerror(errno)));
    }
    *got = h->hook;
    ++bound[slot.symbol];
    ++slots;
  }
  for (const auto& [symbol, h] : by_symbol) {
    if (!bound.count(symbol)) {
      unbound.push_back(symbol);
    }
  }
  return slots;
}

HookBinding bind_hooks(const fs::path& hook_library, const std::string& model_library) {
  void* lib = ::dlopen(hook_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = ::dlerror();
    throw Error(ErrorKind::internal, std::string("the hook library cannot be loaded: ") + (err ? err : "?"));
  }
  auto* abi = static_cast<const int*>(::dlsym(lib, "aoti_bisect_hook_abi"));
  auto* table = static_cast<const HookEntry*>(::dlsym(lib, "aoti_bisect_hooks"));
  auto* count = static_cast<const int*>(::dlsym(lib, "aoti_bisect_hook_count"));
  if (abi == nullptr || table == nullptr || count == nullptr || *abi != k_hook_abi_version) {
    throw Error(ErrorKind::internal, "the hook library was made by another version of aoti-bisect");
  }
  ModelObject model = find_model_object(model_library);
  HookBinding out;
  out.hooks = *count;
  std::vector<GotEntry> entries;
  for (int i = 0; i < *count; ++i) {
    entries.push_back({table[i].symbol, table[i].hook, table[i].real});
  }
  out.slots = bind_got(model, entries, out.unbound);
  return out;
}

}  // namespace aoti_bisect::torchside
