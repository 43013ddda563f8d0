// The probes' statistics and checksums (lib/torchside/tensor_stats.cpp)
// against ATen's own reductions, on the host path and on the device path
// (ATen's reductions, run here on CPU tensors).
#include <cmath>
#include <limits>

#include <ATen/Parallel.h>

#include "skip.hpp"
#include "torch_doctest.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "torchside/internal.hpp"

using namespace aoti_bisect;
using namespace aoti_bisect::torchside;

namespace {

// What the statistics must be, from ATen in float64 (the former probe code).
TensorStats reference(const at::Tensor& t) {
  TensorStats s;
  at::Tensor d = t.to(at::kDouble);
  at::Tensor finite = d;
  if (t.is_floating_point()) {
    s.nan_count = d.isnan().sum().item<int64_t>();
    s.inf_count = d.isinf().sum().item<int64_t>();
    finite = d.masked_select(d.isfinite());
  }
  if (finite.numel() > 0) {
    s.min = finite.min().item<double>();
    s.max = finite.max().item<double>();
    s.mean = finite.mean().item<double>();
  }
  return s;
}

void check_against_reference(const at::Tensor& t, StatsPath path) {
  CAPTURE(c10::toString(t.scalar_type()));
  TensorStats got = tensor_stats("x", t, path);
  TensorStats want = reference(t);
  CHECK(got.nan_count == want.nan_count);
  CHECK(got.inf_count == want.inf_count);
  REQUIRE(got.min.has_value() == want.min.has_value());
  if (want.min) {
    CHECK(*got.min == *want.min);
    CHECK(*got.max == *want.max);
    CHECK(*got.mean == doctest::Approx(*want.mean).epsilon(1e-9).scale(1.0));
  }
  CHECK(got.numel == t.numel());
  CHECK(got.checksum.size() == 16);
}

at::Tensor with_nonfinite(at::ScalarType type) {
  at::Tensor t = at::randn({300, 1000}).to(type);
  t.view(-1)[7] = std::numeric_limits<double>::quiet_NaN();
  t.view(-1)[123456] = std::numeric_limits<double>::quiet_NaN();
  t.view(-1)[99] = std::numeric_limits<double>::infinity();
  t.view(-1)[299999] = -std::numeric_limits<double>::infinity();
  return t;
}

}  // namespace

TEST_CASE("tensor_stats counts NaN and Inf and takes min, max and mean of the finite values, per dtype") {
  at::manual_seed(1);
  for (auto type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    at::Tensor t = with_nonfinite(type);
    check_against_reference(t, StatsPath::automatic);
    check_against_reference(t, StatsPath::device_ops);
    TensorStats s = tensor_stats("x", t);
    CHECK(s.nan_count == 2);
    CHECK(s.inf_count == 2);
  }
  for (auto type : {at::kLong, at::kInt, at::kShort, at::kChar, at::kByte, at::kBool}) {
    at::Tensor t = at::randint(-100, 100, {4096 * 300 + 17}).to(type);
    check_against_reference(t, StatsPath::automatic);
    check_against_reference(t, StatsPath::device_ops);
  }
}

TEST_CASE("float32's statistics in vector lanes, both widths: lengths that end inside a lane, NaN or Inf anywhere") {
  // float32 is read in vector lanes (4 or, with AVX2, 8) with a scalar
  // tail (tensor_stats.cpp float_lanes): lengths up to 48, and non-finite
  // values in the first lane, the middle and the tail, against ATen in
  // float64, on the wide and the narrow lanes.
  at::manual_seed(2);
  for (auto path : {StatsPath::automatic, StatsPath::narrow_lanes}) {
    for (int64_t n = 1; n <= 48; ++n) {
      at::Tensor base = at::randn({n});
      check_against_reference(base, path);
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()}) {
          CAPTURE(n);
          CAPTURE(at);
          at::Tensor t = base.clone();
          t[at] = bad;
          check_against_reference(t, path);
          TensorStats s = tensor_stats("x", t, path);
          CHECK(s.nan_count + s.inf_count == 1);
        }
      }
    }
    check_against_reference(with_nonfinite(at::kFloat), path);  // several blocks
  }
}

TEST_CASE("tensor_stats of a tensor with no finite value has counts and no min, max or mean") {
  at::Tensor t = at::full({10}, std::numeric_limits<float>::quiet_NaN());
  for (auto path : {StatsPath::automatic, StatsPath::device_ops}) {
    TensorStats s = tensor_stats("x", t, path);
    CHECK(s.nan_count == 10);
    CHECK_FALSE(s.min.has_value());
    CHECK_FALSE(s.mean.has_value());
  }
}

TEST_CASE("the host checksum is XXH3-64 of the 1 MiB blocks' XXH3-64 hashes, whatever the thread count") {
  at::manual_seed(2);
  at::Tensor t = at::randn({3 * 262144 + 5});  // three full blocks and a part
  const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
  std::vector<unsigned char> joined;
  for (size_t off = 0; off < t.nbytes(); off += 1 << 20) {
    uint64_t h = XXH3_64bits(bytes + off, std::min<size_t>(1 << 20, t.nbytes() - off));
    for (int k = 0; k < 8; ++k) {
      joined.push_back(static_cast<unsigned char>(h >> (8 * k)));
    }
  }
  char want[17];
  std::snprintf(want, sizeof want, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(joined.data(), joined.size())));
  CHECK(tensor_stats("x", t).checksum == want);
  CHECK(tensor_checksum(t) == want);
  int threads = at::get_num_threads();
  at::set_num_threads(1);
  TensorStats one = tensor_stats("x", t);
  at::set_num_threads(std::max(threads, 2));
  TensorStats two = tensor_stats("x", t);
  at::set_num_threads(threads);
  CHECK(one.checksum == two.checksum);
  CHECK(*one.mean == *two.mean);  // blocks are summed in block order
}

TEST_CASE("checksums follow the bytes in memory order, on both paths") {
  at::manual_seed(3);
  at::Tensor a = at::randn({64, 33});
  at::Tensor b = a.clone();
  // A dense view with other strides is read in place: the same bytes as the
  // tensor it views, and the same statistics as its copy.
  at::Tensor view = a.t();
  CHECK(tensor_checksum(view) == tensor_checksum(a));
  CHECK(*tensor_stats("x", view).mean == doctest::Approx(*tensor_stats("x", view.contiguous()).mean).epsilon(1e-12));
  CHECK(tensor_stats("x", view).max == tensor_stats("x", view.contiguous()).max);
  // A dense view that starts inside its storage (rows 10 to 19; the same rows permuted) is read
  // from its own first element: the bytes of its copy, not of the storage's start.
  at::Tensor rows = a.slice(0, 10, 20);
  CHECK(tensor_checksum(rows) == tensor_checksum(rows.clone()));
  CHECK(tensor_checksum(rows) != tensor_checksum(a.slice(0, 0, 10)));
  CHECK(tensor_stats("x", rows).max == tensor_stats("x", rows.clone()).max);
  at::Tensor cube = at::randn({4, 5, 6}).slice(0, 1, 3).permute({2, 0, 1});
  REQUIRE(cube.is_non_overlapping_and_dense());
  REQUIRE_FALSE(cube.is_contiguous());
  CHECK(tensor_checksum(cube) == tensor_checksum(cube.permute({1, 2, 0}).clone()));
  CHECK(*tensor_stats("x", cube).mean == doctest::Approx(*tensor_stats("x", cube.clone()).mean).epsilon(1e-12));
  // A view that does not fill its memory (every other column) goes through a row-major copy.
  at::Tensor strided = a.slice(1, 0, 33, 2);
  CHECK(tensor_checksum(strided) == tensor_checksum(strided.contiguous()));
  CHECK(tensor_stats("x", strided).min == tensor_stats("x", strided.contiguous()).min);
  CHECK(tensor_checksum(a) == tensor_checksum(b));
  CHECK(tensor_stats("x", a, StatsPath::device_ops).checksum == tensor_stats("x", b, StatsPath::device_ops).checksum);
  b.view(-1)[1000] = std::nextafter(b.view(-1)[1000].item<float>(), 1e9f);  // one bit
  CHECK(tensor_checksum(a) != tensor_checksum(b));
  CHECK(tensor_stats("x", a, StatsPath::device_ops).checksum != tensor_stats("x", b, StatsPath::device_ops).checksum);
  // Words swapped: a position-blind sum would not see it.
  at::Tensor w = at::arange(16, at::kInt);
  at::Tensor swapped = w.clone();
  swapped[0] = 1;
  swapped[1] = 0;
  CHECK(tensor_stats("x", w, StatsPath::device_ops).checksum !=
        tensor_stats("x", swapped, StatsPath::device_ops).checksum);
  // A byte count not a multiple of four (the device path pads with zeros) still counts the length.
  at::Tensor seven = at::zeros({7}, at::kByte);
  at::Tensor eight = at::zeros({8}, at::kByte);
  CHECK(tensor_stats("x", seven, StatsPath::device_ops).checksum !=
        tensor_stats("x", eight, StatsPath::device_ops).checksum);
}

TEST_CASE("empty and complex tensors have a checksum and no statistics") {
  TensorStats e = tensor_stats("x", at::zeros({0, 4}));
  CHECK(e.numel == 0);
  CHECK(e.checksum.size() == 16);
  CHECK_FALSE(e.mean.has_value());
  TensorStats c = tensor_stats("x", at::randn({8}, at::kComplexFloat));
  CHECK(c.checksum.size() == 16);
  CHECK_FALSE(c.mean.has_value());
}

TEST_CASE("a oneDNN tensor's statistics come from its dense copy and name its layout") {
  if (!at::hasMKLDNN()) {
    aoti_bisect::test::skip("this LibTorch is built without oneDNN (at::hasMKLDNN() is false)");
    return;
  }
  at::Tensor dense = with_nonfinite(at::kFloat);
  TensorStats s = tensor_stats("w", dense.to_mkldnn());
  CHECK(s.layout == "mkldnn");
  CHECK(s.nan_count == 2);
  CHECK(s.checksum == tensor_checksum(dense));
}

TEST_CASE("StatsCache: the same bytes are measured once; bytes written behind the version counter are measured again") {
  StatsCache cache;
  at::Tensor w = at::randn({256, 256});
  TensorStats first = cache.get("w", w);
  TensorStats again = cache.get("w again", w);
  CHECK(cache.measured() == 1);
  CHECK(again.name == "w again");
  CHECK(again.checksum == first.checksum);
  CHECK(*again.mean == *first.mean);
  // A kernel writing through its raw pointer does not bump the version counter.
  static_cast<float*>(w.data_ptr())[5] = std::numeric_limits<float>::quiet_NaN();
  TensorStats written = cache.get("w", w);
  CHECK(cache.measured() == 2);
  CHECK(written.nan_count == 1);
  CHECK(written.checksum != first.checksum);
  // An ATen in-place op does.
  w.mul_(2);
  TensorStats doubled = cache.get("w", w);
  CHECK(cache.measured() == 3);
  CHECK(*doubled.max == doctest::Approx(2 * *written.max));
  // A view with other strides is its own entry, with the same statistics.
  TensorStats t = cache.get("w.t", w.t());
  CHECK(cache.measured() == 4);
  CHECK(t.nan_count == 1);
  CHECK(t.checksum == doubled.checksum);
  CHECK(cache.get("w.t", w.t()).checksum == t.checksum);
  CHECK(cache.measured() == 4);
}

TEST_CASE(
    "diff_values counts the elements that differ, NaN/Inf mismatches included, and finds the largest difference") {
  at::Tensor first = at::arange(12, at::kFloat).reshape({3, 4});
  at::Tensor second = first.clone();
  second[0][1] = 1.0f + 1e-3f;   // a last-bits difference
  second[2][3] = 11.25f;         // the largest
  second[1][0] = std::nanf("");  // a NaN where the first run had 4
  ValueDiff d = diff_values(second, first);
  CHECK(d.differ == 3);
  CHECK(d.nonfinite == 1);
  CHECK(d.max_abs == doctest::Approx(0.25));
  CHECK(diff_values(first, first.clone()).differ == 0);
  at::Tensor both_nan = at::full({2}, std::nanf(""));
  CHECK(diff_values(both_nan, both_nan.clone()).differ == 0);  // NaN in both runs: the same
}

TEST_CASE("compare_rows: a sample's rows of the dimension that scales with the batch, or the whole tensor") {
  // The run of 4 samples holds rows 10*k + j; the run of sample 3 alone
  // (0-based 2), repeated to batch 2, holds its rows twice.
  at::Tensor batch = at::arange(4 * 3, at::kFloat).reshape({4, 3});
  at::Tensor alone = batch.narrow(0, 2, 1).repeat({2, 1});
  SampleRows rows{4, 2, 2};
  nlohmann::json same = compare_rows(batch, alone, rows);
  CHECK(same["differ"] == 0);
  CHECK(same["elements"] == 3);
  CHECK(same["rows"] == nlohmann::json{{"dim", 0}, {"from", 2}, {"count", 1}});
  // Another sample's rows differ; the sample's own do not count them.
  at::Tensor changed = batch.clone();
  changed[0][1] = 100.0f;
  CHECK(compare_rows(changed, alone, rows)["differ"] == 0);
  changed[2][1] = std::nanf("");
  nlohmann::json nan = compare_rows(changed, alone, rows);
  CHECK(nan["differ"] == 1);
  CHECK(nan["nonfinite"] == 1);
  CHECK(nan["worst"] == nlohmann::json::array({2, 1}));  // indexed in the batch's tensor
  // Flattened [batch * 5, 3]: the sample's chunk of 5 rows.
  at::Tensor flat = at::arange(4 * 5 * 3, at::kFloat).reshape({20, 3});
  nlohmann::json chunk = compare_rows(flat, flat.narrow(0, 10, 5).repeat({2, 1}), rows);
  CHECK(chunk["rows"] == nlohmann::json{{"dim", 0}, {"from", 10}, {"count", 5}});
  CHECK(chunk["differ"] == 0);
  // The batch on dimension 1 (a transposed layout).
  at::Tensor t = batch.t().contiguous();
  CHECK(compare_rows(t, alone.t().contiguous(), rows)["rows"]["dim"] == 1);
  // No dimension changed: a value over the whole batch, compared whole.
  at::Tensor mean = at::ones({3});
  nlohmann::json whole = compare_rows(mean, at::full({3}, 2.0f), rows);
  CHECK(whole["rows"] == nlohmann::json{{"whole", true}});
  CHECK(whole["differ"] == 3);
  // Two dimensions that scale, or one that changes otherwise: not compared.
  CHECK(compare_rows(at::zeros({4, 4}), at::zeros({2, 2}), rows).contains("unmatched"));
  CHECK(compare_rows(at::zeros({4, 3}), at::zeros({2, 5}), rows)["unmatched"] ==
        "sizes [4, 3] here, [2, 5] alone: no one dimension holds the batch");
  CHECK(compare_rows(at::zeros({4, 3}), at::zeros({6}), rows)["unmatched"] == "2 dimensions here, 1 alone");
}
