// The guard-page CPU allocator (lib/torchside/guard_pages.cpp), in a forked
// child so that this process keeps LibTorch's own allocator: a write past a
// tensor's end faults at once; inside the tensor and its 16-byte alignment
// it does not; a tensor's memory is unmapped when it is freed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "torch_doctest.hpp"
#include "torchside/torchside.hpp"

using namespace aoti_bisect::torchside;

namespace {

// How the child ended: 0 exited normally, else the signal that ended it.
int child_signal(const std::function<void()>& body) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGSEGV, SIG_DFL);
    install_guard_page_allocator();
    body();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) {
    return WTERMSIG(status);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

}  // namespace

TEST_CASE("guard pages: 10 float32 (40 bytes, 48 aligned): element 11 is still the tensor's slack, element 12 faults") {
  CHECK(child_signal([] {
          at::Tensor t = at::zeros({10}, at::kFloat);
          volatile float* p = t.data_ptr<float>();
          p[9] = 1.0f;
          p[11] = 2.0f;  // the alignment's slack: in the mapping
        }) == 0);
  CHECK(child_signal([] {
          at::Tensor t = at::zeros({10}, at::kFloat);
          volatile float* p = t.data_ptr<float>();
          p[12] = 2.0f;  // the guard page
        }) == SIGSEGV);
}

TEST_CASE("guard pages: a read past the end faults too, and so does a read after the tensor is freed") {
  CHECK(child_signal([] {
          at::Tensor t = at::ones({1024}, at::kFloat);  // exactly one page
          volatile const float* p = t.data_ptr<float>();
          float x = p[1024];
          (void)x;
        }) == SIGSEGV);
  CHECK(child_signal([] {
          volatile const float* p = nullptr;
          {
            at::Tensor t = at::ones({100}, at::kFloat);
            p = t.data_ptr<float>();
            REQUIRE(p[99] == 1.0f);
          }
          float x = p[0];
          (void)x;
        }) == SIGSEGV);
}

TEST_CASE("guard pages: ATen's own operators run on the guarded tensors with the same results") {
  CHECK(child_signal([] {
          at::Tensor a = at::arange(1000, at::kFloat).reshape({10, 100});
          at::Tensor s = a.sum(1);  // row 9: 900 + ... + 999
          if (s[9].item<float>() != 94950.0f || a.t().contiguous()[99][9].item<float>() != 999.0f) {
            ::_exit(3);
          }
        }) == 0);
}
