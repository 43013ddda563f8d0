// The poison of memory no kernel wrote (lib/torchside/poison.cpp): what
// poison_count counts as still unwritten, per dtype, and what it leaves out.
#include <cmath>
#include <limits>

#include "torch_doctest.hpp"
#include "torchside/internal.hpp"

using namespace aoti_bisect::torchside;

TEST_CASE("poison_count: float32's signaling NaN 0x7fa00dea counts, a NaN a kernel computed does not") {
  at::Tensor t = at::empty({6}, at::kFloat);
  t.view(at::kInt).fill_(0x7fa00dea);
  CHECK(poison_count(t) == 6);
  CHECK(t.isnan().all().item<bool>());  // a kernel that reads it computes NaN
  t[0] = 1.5f;                          // written by a kernel
  t[1] = std::nanf("");                 // a computed (quiet) NaN: not the pattern
  t.narrow(0, 2, 1).mul_(2.0f);         // arithmetic on the poison: quiet NaN
  CHECK(poison_count(t) == 3);
  CHECK(t.isnan().sum().item<int64_t>() == 5);
}

TEST_CASE("poison_count: each dtype's own pattern (float64, float16, bfloat16, integers at their maximum, bool true)") {
  at::Tensor d = at::empty({4}, at::kDouble);
  d.view(at::kLong).fill_(0x7ff4000000000deaLL);
  d[3] = 0.0;
  CHECK(poison_count(d) == 3);
  at::Tensor h = at::empty({5}, at::kHalf);
  h.view(at::kShort).fill_(0x7d00);
  CHECK(poison_count(h) == 5);
  at::Tensor b = at::empty({5}, at::kBFloat16);
  b.view(at::kShort).fill_(0x7fa0);
  b[0] = 2.0f;
  CHECK(poison_count(b) == 4);
  at::Tensor i = at::full({3}, std::numeric_limits<int64_t>::max(), at::kLong);
  i[1] = 7;
  CHECK(poison_count(i) == 2);
  CHECK(poison_count(at::full({4}, std::numeric_limits<int32_t>::max(), at::kInt)) == 4);
  CHECK(poison_count(at::full({4}, 255, at::kByte)) == 4);
  at::Tensor flags = at::ones({4}, at::kBool);
  flags[2] = false;
  CHECK(poison_count(flags) == 3);
  CHECK(poison_count(at::zeros({8}, at::kFloat)) == 0);
}

TEST_CASE("poison_count: -1 where a dtype has no poison or nothing can be read") {
  CHECK(poison_count(at::zeros({2}, at::kComplexFloat)) == -1);
  CHECK(poison_count(at::empty({0}, at::kFloat)) == -1);
  CHECK(poison_count(at::zeros({2, 2}, at::kFloat).to_sparse()) == -1);
}

TEST_CASE("poison_count: a strided view counts its own elements only") {
  at::Tensor t = at::zeros({4, 4}, at::kFloat);
  t.view(at::kInt).select(1, 0).fill_(0x7fa00dea);  // column 0 unwritten
  CHECK(poison_count(t) == 4);
  CHECK(poison_count(t.select(1, 0)) == 4);
  CHECK(poison_count(t.select(1, 1)) == 0);
  CHECK(poison_count(t.narrow(0, 1, 2)) == 2);
}
