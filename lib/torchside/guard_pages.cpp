// The guard-page CPU allocator: every tensor the model allocates on the CPU
// ends against an inaccessible page, so a kernel that writes (or reads) past
// the end of its buffer faults at once, inside that kernel, instead of
// corrupting the heap and dying later (SIGABRT in free(), SIGSEGV after the
// run). glibc's and electric-fence's debugging allocators cannot do this
// under LibTorch: libefence runs out of mappings during LibTorch's static
// initialization, and MALLOC_CHECK_ only notices at free(). Only the CPU
// allocator is replaced (tensors: inputs, buffers, outputs), so the cost is
// two mappings per live tensor.

#include <sys/mman.h>
#include <unistd.h>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {
namespace {

// The end of the data is at most this far from the guard page; also the
// data's alignment (malloc's), enough for Inductor's unaligned vector loads.
constexpr size_t k_alignment = 16;

struct Region {
  void* base;
  size_t size;
};

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

void release(void* ctx) {
  auto* r = static_cast<Region*>(ctx);
  ::munmap(r->base, r->size);  // a use after free faults too
  delete r;
}

class GuardPageAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    size_t used = round_up(n == 0 ? 1 : n, k_alignment);
    size_t body = round_up(used, page);
    size_t total = body + page;
    void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TORCH_CHECK(base != MAP_FAILED, "guard-page allocator: cannot map ", total, " bytes");
    char* guard = static_cast<char*>(base) + body;
    TORCH_CHECK(::mprotect(guard, page, PROT_NONE) == 0, "guard-page allocator: cannot protect the guard page");
    void* data = guard - used;
    return {data, new Region{base, total}, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
};

}  // namespace

void install_guard_page_allocator() {
  static GuardPageAllocator allocator;
  c10::SetCPUAllocator(&allocator, /*priority=*/100);
}

}  // namespace aoti_bisect::torchside
