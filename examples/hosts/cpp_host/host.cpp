// A C++ host that runs an AOTI package in a loop, as a simulation or a
// server does: `aoti-bisect capture`'s C++ host.
//
//   host PACKAGE [CALLS] [BAD]
//
// Loads PACKAGE (the token_id_range example: token and position embeddings,
// ids of shape [2, 16] into a 50-row table) with LibTorch's
// AOTIModelPackageLoader and runs it CALLS times (default 5) on random ids;
// call BAD (default 3) holds id 57, past the table, so the kernel's index
// check throws, the loader's run throws, and the host dies of the uncaught
// exception.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: host PACKAGE [CALLS] [BAD]\n");
    return 2;
  }
  const int calls = argc > 2 ? std::atoi(argv[2]) : 5;
  const int bad = argc > 3 ? std::atoi(argv[3]) : 3;
  torch::inductor::AOTIModelPackageLoader loader(argv[1]);
  at::manual_seed(0);
  for (int call = 1; call <= calls; ++call) {
    at::Tensor ids = at::randint(0, 50, {2, 16}, at::kLong);
    if (call == bad) {
      ids.index_put_({1, 5}, 57);
    }
    std::vector<at::Tensor> out = loader.run({ids});
    std::printf("call %d: output %lld elements\n", call, static_cast<long long>(out.at(0).numel()));
    std::fflush(stdout);
  }
  return 0;
}
