// Tensor statistics and checksums, on the tensor's own device, in its own
// dtype, with only the scalars copied back (design.md "Probes").
//
// Statistics and checksum read the elements in memory order: a tensor whose
// elements fill one block of memory (contiguous, or dense with other
// strides, such as the transposed weight an addmm reads) in place, any other
// view through a row-major copy. The statistics do not depend on the order.
//
// The checksum (TensorStats::checksum, 16 hex digits) is a fast
// non-cryptographic hash of those bytes:
//   host tensors:   XXH3-64 (xxHash) of each 1 MiB block of the bytes, and
//                   the checksum XXH3-64 of those block hashes (each 8 bytes,
//                   little-endian), so that blocks hash in parallel and the
//                   result does not depend on the number of threads;
//   device tensors: "dev1": the bytes as little-endian 32-bit words w_i
//                   (zero-padded), m_i = (w_i + i * 0x9E3779B97F4A7C15) mod
//                   2^64, then m ^= m >> 31 (arithmetic), m *= 0xBF58476D1CE4E5B9,
//                   m ^= m >> 29, and the checksum the wrapping sum of the
//                   m_i, xor the byte count; computed by ATen on the device.
// Checksums are compared only within one job's runs (same device), never
// across devices.
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/files.hpp"
#include "torchside/internal.hpp"

namespace aoti_bisect::torchside {

namespace {

constexpr int64_t k_block_bytes = int64_t{1} << 20;

std::string hex16(uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) {
    out[i] = digits[v & 15];
  }
  return out;
}

// One block's share of the statistics.
struct Partial {
  int64_t nan = 0;
  int64_t inf = 0;
  int64_t finite = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  void merge(const Partial& o) {
    nan += o.nan;
    inf += o.inf;
    finite += o.finite;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    sum += o.sum;
  }
};

template <typename T>
Partial floating_partial(const T* p, int64_t n) {
  Partial r;
  float lo = std::numeric_limits<float>::infinity();
  float hi = -lo;
  double sum = 0;
  int64_t nan = 0;
  int64_t inf = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(p[i]);
    bool is_nan = v != v;
    bool is_inf = std::fabs(v) == std::numeric_limits<float>::infinity();
    nan += is_nan;
    inf += is_inf;
    bool fin = !(is_nan || is_inf);
    sum += fin ? static_cast<double>(v) : 0.0;
    lo = fin && v < lo ? v : lo;
    hi = fin && v > hi ? v : hi;
  }
  r.nan = nan;
  r.inf = inf;
  r.finite = n - nan - inf;
  r.sum = sum;
  if (r.finite > 0) {
    r.min = lo;
    r.max = hi;
  }
  return r;
}

// float32, the common case: the loop above is bound by its one chain of
// double additions (about 2.8 GB/s a thread here). This form keeps every
// statistic in vector lanes (GCC's vector extensions: 128-bit lanes
// anywhere, 256-bit with AVX2 where the CPU has it) and sums the finite
// values in double lanes, 2.5x and 5x the loop's speed on this project's
// machine. The same statistics; the sum adds in another order (its last
// bits may differ from the loop above, never between runs on one machine).
#if defined(__GNUC__) && !defined(__clang__)  // GCC's vector extensions; Clang takes the loop above (untested there)
#define AOTI_BISECT_FLOAT_LANES 1
struct Lanes4 {  // 128-bit: SSE2, NEON
  typedef float Floats __attribute__((vector_size(16)));
  typedef int32_t Ints __attribute__((vector_size(16)));
  typedef float Half __attribute__((vector_size(8)));
  typedef double Doubles __attribute__((vector_size(16)));
  static constexpr int k_lanes = 4;
};
struct Lanes8 {  // 256-bit: AVX2
  typedef float Floats __attribute__((vector_size(32)));
  typedef int32_t Ints __attribute__((vector_size(32)));
  typedef float Half __attribute__((vector_size(16)));
  typedef double Doubles __attribute__((vector_size(32)));
  static constexpr int k_lanes = 8;
};

template <class L>
__attribute__((always_inline)) inline Partial float_lanes(const float* p, int64_t n) {
  using Floats = typename L::Floats;
  using Ints = typename L::Ints;
  using Half = typename L::Half;
  using Doubles = typename L::Doubles;
  constexpr int k_lanes = L::k_lanes;
  constexpr float k_inf = std::numeric_limits<float>::infinity();
  Floats inf;
  Ints magnitude;
  for (int j = 0; j < k_lanes; ++j) {
    inf[j] = k_inf;
    magnitude[j] = 0x7fffffff;
  }
  const Floats zero = {};
  Floats lo = inf;
  Floats hi = -inf;
  Ints bad = {};  // NaN or Inf, per lane (a block has at most 2^18 floats)
  Ints nans = {};
  Doubles sum_lo = {};
  Doubles sum_hi = {};
  const int64_t whole = n - n % k_lanes;
  for (int64_t i = 0; i < whole; i += k_lanes) {
    Floats v;
    std::memcpy(&v, p + i, sizeof v);
    Floats a = reinterpret_cast<Floats>(reinterpret_cast<Ints>(v) & magnitude);
    Ints fin = a < inf;  // -1 where finite (false for NaN and Inf)
    bad -= ~fin;
    nans -= (a != a);
    lo = (fin & (v < lo)) ? v : lo;
    hi = (fin & (v > hi)) ? v : hi;
    Floats f = fin ? v : zero;
    Half h0;
    Half h1;
    std::memcpy(&h0, &f, sizeof h0);
    std::memcpy(&h1, reinterpret_cast<const char*>(&f) + sizeof h0, sizeof h1);
    sum_lo += __builtin_convertvector(h0, Doubles);
    sum_hi += __builtin_convertvector(h1, Doubles);
  }
  int64_t nan = 0;
  int64_t nonfinite = 0;
  float l = k_inf;
  float h = -k_inf;
  double sum = 0;
  for (int j = 0; j < k_lanes; ++j) {
    nan += nans[j];
    nonfinite += bad[j];
    l = std::min(l, lo[j]);
    h = std::max(h, hi[j]);
  }
  for (int j = 0; j < k_lanes / 2; ++j) {
    sum += sum_lo[j] + sum_hi[j];
  }
  for (int64_t i = whole; i < n; ++i) {
    float v = p[i];
    bool fin = std::fabs(v) < k_inf;
    nan += static_cast<int64_t>(v != v);
    nonfinite += static_cast<int64_t>(!fin);
    if (fin) {
      sum += static_cast<double>(v);
      l = std::min(l, v);
      h = std::max(h, v);
    }
  }
  Partial r;
  r.nan = nan;
  r.inf = nonfinite - nan;
  r.finite = n - nonfinite;
  r.sum = sum;
  if (r.finite > 0) {
    r.min = l;
    r.max = h;
  }
  return r;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) Partial float_partial_avx2(const float* p, int64_t n) {
  return float_lanes<Lanes8>(p, n);
}
#endif
#endif

// `narrow`: the 128-bit lanes even where AVX2 is present (tests compare the two).
Partial float_partial(const float* p, int64_t n, bool narrow) {
#if defined(AOTI_BISECT_FLOAT_LANES) && defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx2 && !narrow) {
    return float_partial_avx2(p, n);
  }
#endif
#if defined(AOTI_BISECT_FLOAT_LANES)
  return float_lanes<Lanes4>(p, n);
#else
  (void)narrow;
  return floating_partial(p, n);
#endif
}

template <>
Partial floating_partial<double>(const double* p, int64_t n) {
  Partial r;
  for (int64_t i = 0; i < n; ++i) {
    double v = p[i];
    if (std::isnan(v)) {
      ++r.nan;
    } else if (std::isinf(v)) {
      ++r.inf;
    } else {
      ++r.finite;
      r.sum += v;
      r.min = std::min(r.min, v);
      r.max = std::max(r.max, v);
    }
  }
  return r;
}

template <typename T>
Partial integral_partial(const T* p, int64_t n) {
  Partial r;
  r.finite = n;
  if (n == 0) {
    return r;
  }
  T lo = p[0];
  T hi = p[0];
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    lo = p[i] < lo ? p[i] : lo;
    hi = p[i] > hi ? p[i] : hi;
    sum += static_cast<double>(p[i]);
  }
  r.min = static_cast<double>(lo);
  r.max = static_cast<double>(hi);
  r.sum = sum;
  return r;
}

// The statistics of `n` elements of dtype `type` at `p`; false when the
// dtype has none here (complex, quantized, float8).
bool partial_of(at::ScalarType type, const void* p, int64_t n, Partial& out, bool narrow) {
  switch (type) {
    case at::kFloat: out = float_partial(static_cast<const float*>(p), n, narrow); return true;
    case at::kDouble: out = floating_partial(static_cast<const double*>(p), n); return true;
    case at::kHalf: out = floating_partial(static_cast<const at::Half*>(p), n); return true;
    case at::kBFloat16: out = floating_partial(static_cast<const at::BFloat16*>(p), n); return true;
    case at::kLong: out = integral_partial(static_cast<const int64_t*>(p), n); return true;
    case at::kInt: out = integral_partial(static_cast<const int32_t*>(p), n); return true;
    case at::kShort: out = integral_partial(static_cast<const int16_t*>(p), n); return true;
    case at::kChar: out = integral_partial(static_cast<const int8_t*>(p), n); return true;
    case at::kByte: out = integral_partial(static_cast<const uint8_t*>(p), n); return true;
    case at::kBool: out = integral_partial(static_cast<const uint8_t*>(p), n); return true;
    default: return false;
  }
}

void fill(TensorStats& s, const Partial& p, bool floating) {
  if (floating) {
    s.nan_count = p.nan;
    s.inf_count = p.inf;
  }
  if (p.finite > 0) {
    s.min = p.min;
    s.max = p.max;
    s.mean = p.sum / static_cast<double>(p.finite);
  }
}

void device_stats_or_none(const at::Tensor& c, TensorStats& s);

// Host: blocks of 1 MiB in parallel, each hashed and summarized while it is
// in cache; the statistics only when `with_stats`. `c`'s elements fill one
// block of memory from its data pointer on (memory_order's result, or a
// dense tensor as it is: its strides are not negative, so its first element
// has the lowest address), read in place.
void host_pass(const at::Tensor& c, bool with_stats, TensorStats& s, bool narrow = false) {
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  const int64_t nbytes = static_cast<int64_t>(c.numel()) * static_cast<int64_t>(c.element_size());
  const int64_t esize = static_cast<int64_t>(c.element_size());
  const int64_t blocks = (nbytes + k_block_bytes - 1) / k_block_bytes;
  std::vector<uint64_t> hashes(static_cast<size_t>(std::max<int64_t>(blocks, 0)));
  std::vector<Partial> partials(with_stats ? hashes.size() : 0);
  std::atomic<bool> known = true;
  at::parallel_for(0, blocks, 1, [&](int64_t from, int64_t to) {
    for (int64_t b = from; b < to; ++b) {
      int64_t off = b * k_block_bytes;
      int64_t len = std::min(k_block_bytes, nbytes - off);
      hashes[b] = XXH3_64bits(bytes + off, static_cast<size_t>(len));
      if (with_stats && !partial_of(c.scalar_type(), bytes + off, len / esize, partials[b], narrow)) {
        known = false;
      }
    }
  });
  std::vector<unsigned char> joined(hashes.size() * 8);
  for (size_t i = 0; i < hashes.size(); ++i) {
    for (int k = 0; k < 8; ++k) {
      joined[8 * i + k] = static_cast<unsigned char>(hashes[i] >> (8 * k));
    }
  }
  s.checksum = hex16(XXH3_64bits(joined.data(), joined.size()));
  if (with_stats && known && !c.is_complex()) {
    Partial all;
    for (const auto& p : partials) {
      all.merge(p);
    }
    fill(s, all, c.is_floating_point());
  } else if (with_stats && !c.is_complex()) {
    device_stats_or_none(c.reshape({-1}), s);  // a dtype without a loop here (unsigned, float8): ATen's reductions
  }
}

// A host tensor of at least one element whose elements fill one block of
// memory: host_pass reads it as it is, without the views memory_order makes
// through ATen's dispatcher (two or three operators a probe, most of what a
// small tensor's probe cost).
bool dense_on_host(const at::Tensor& t) {
  return t.layout() == at::kStrided && t.has_storage() && t.device().is_cpu() && t.numel() > 0 &&
         t.is_non_overlapping_and_dense();
}

// Device: ATen's reductions on the tensor's device, in chunks (bounded
// temporary memory), the scalars stacked and copied back once.
constexpr int64_t k_device_chunk = int64_t{1} << 26;  // elements

std::string device_checksum(const at::Tensor& c) {
  at::Tensor bytes = c.reshape({-1}).view(at::kByte);
  const int64_t nbytes = bytes.numel();
  const int64_t pad = (4 - nbytes % 4) % 4;
  if (pad > 0) {
    bytes = at::cat({bytes, at::zeros({pad}, bytes.options())});
  }
  at::Tensor words = bytes.view(at::kInt);
  at::Tensor total = at::zeros({}, words.options().dtype(at::kLong));
  const int64_t n = words.numel();
  for (int64_t from = 0; from < n; from += k_device_chunk) {
    int64_t len = std::min(k_device_chunk, n - from);
    at::Tensor w = words.narrow(0, from, len).to(at::kLong).bitwise_and(0xFFFFFFFFLL);
    at::Tensor i = at::arange(from, from + len, w.options());
    at::Tensor m = w + i * static_cast<int64_t>(0x9E3779B97F4A7C15ULL);
    m = m.bitwise_xor(m.bitwise_right_shift(31));
    m = m * static_cast<int64_t>(0xBF58476D1CE4E5B9ULL);
    m = m.bitwise_xor(m.bitwise_right_shift(29));
    total += m.sum();
  }
  auto h = static_cast<uint64_t>(total.cpu().item<int64_t>()) ^ static_cast<uint64_t>(nbytes);
  return hex16(h);
}

void device_stats(const at::Tensor& c, TensorStats& s) {
  at::Tensor flat = c.reshape({-1});
  if (flat.scalar_type() == at::kBool) {
    flat = flat.to(at::kByte);
  }
  const bool floating = flat.is_floating_point();
  const auto inf = std::numeric_limits<double>::infinity();
  std::vector<at::Tensor> parts;  // per chunk: nan, inf, finite, min, max, sum (float64)
  for (int64_t from = 0; from < flat.numel(); from += k_device_chunk) {
    at::Tensor x = flat.narrow(0, from, std::min(k_device_chunk, flat.numel() - from));
    if (floating) {
      at::Tensor fin = x.isfinite();
      at::Tensor lo = at::where(fin, x, inf).amin().to(at::kDouble);
      at::Tensor hi = at::where(fin, x, -inf).amax().to(at::kDouble);
      at::Tensor sum = at::where(fin, x, 0).sum(at::kDouble);
      parts.push_back(at::stack(
          {x.isnan().sum().to(at::kDouble), x.isinf().sum().to(at::kDouble), fin.sum().to(at::kDouble), lo, hi, sum}));
    } else {
      at::Tensor zero = at::zeros({}, x.options().dtype(at::kDouble));
      parts.push_back(at::stack({zero, zero, zero + static_cast<double>(x.numel()), x.amin().to(at::kDouble),
                                 x.amax().to(at::kDouble), x.sum(at::kDouble)}));
    }
  }
  at::Tensor host = at::stack(parts).cpu();  // the only copy back
  auto a = host.accessor<double, 2>();
  Partial all;
  for (int64_t r = 0; r < host.size(0); ++r) {
    Partial p;
    p.nan = static_cast<int64_t>(a[r][0]);
    p.inf = static_cast<int64_t>(a[r][1]);
    p.finite = static_cast<int64_t>(a[r][2]);
    p.min = a[r][3];
    p.max = a[r][4];
    p.sum = a[r][5];
    all.merge(p);
  }
  fill(s, all, floating);
}

// A dtype ATen cannot reduce (isfinite of a float8 on some devices): the
// counts and the checksum only, never a failed probe.
void device_stats_or_none(const at::Tensor& c, TensorStats& s) {
  try {
    device_stats(c, s);
  } catch (const std::exception&) {
    s.nan_count = 0;
    s.inf_count = 0;
    s.min.reset();
    s.max.reset();
    s.mean.reset();
  }
}

// The elements in memory order, without a copy where they fill one block
// of memory (any strides: a transposed weight is read in place); a
// row-major copy of any other view.
at::Tensor memory_order(const at::Tensor& t) {
  if (t.is_contiguous()) {
    return t.reshape({-1});
  }
  if (t.is_non_overlapping_and_dense()) {
    return t.as_strided({t.numel()}, {1});
  }
  return t.contiguous().reshape({-1});
}

TensorStats describe(const std::string& name, const at::Tensor& t) {
  TensorStats s;
  s.name = name;
  s.dtype = dtype_name(t.scalar_type());
  s.shape = to_vec(t.sizes());
  s.numel = t.numel();
  return s;
}

}  // namespace

std::optional<at::Tensor> readable_copy(const at::Tensor& t, std::string& layout) {
  layout.clear();
  if (t.layout() == at::kStrided && t.has_storage()) {
    return t;
  }
  if (t.is_mkldnn()) {
    layout = "mkldnn";
  } else {
    std::ostringstream name;
    name << t.layout();  // "Sparse", "SparseCsr"
    layout = name.str();
  }
  try {
    return t.to_dense();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string tensor_sha256(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU).contiguous();
  return sha256_hex(std::string(static_cast<const char*>(c.data_ptr()), c.nbytes()));
}

std::string tensor_checksum(const at::Tensor& t) {
  if (dense_on_host(t)) {
    TensorStats s;
    host_pass(t, false, s);
    return s.checksum;
  }
  at::Tensor c = memory_order(t.detach());
  if (c.numel() == 0 || !c.has_storage()) {
    return hex16(XXH3_64bits(nullptr, 0));
  }
  if (c.device().is_cpu()) {
    TensorStats s;
    host_pass(c, false, s);
    return s.checksum;
  }
  return device_checksum(c);
}

namespace {
TensorStats measured_stats(const std::string& name, const at::Tensor& t0, StatsPath path);
}  // namespace

TensorStats tensor_stats(const std::string& name, const at::Tensor& t0, StatsPath path) {
  TensorStats s = measured_stats(name, t0, path);
  if (poison_active() && !s.opaque) {
    s.unwritten = poison_count(t0);
  }
  return s;
}

namespace {
TensorStats measured_stats(const std::string& name, const at::Tensor& t0, StatsPath path) {
  TensorStats s = describe(name, t0);
  if (path != StatsPath::device_ops && dense_on_host(t0)) {
    host_pass(t0, true, s, path == StatsPath::narrow_lanes);
    return s;
  }
  // A oneDNN-layout constant (a frozen, packed weight) has no storage: its
  // statistics come from a dense copy, or there are none.
  std::optional<at::Tensor> dense = readable_copy(t0.detach(), s.layout);
  if (!dense) {
    s.opaque = true;
    return s;
  }
  at::Tensor c = memory_order(*dense);
  if (c.numel() == 0) {
    s.checksum = tensor_checksum(c);
    return s;
  }
  bool host = c.device().is_cpu() && path != StatsPath::device_ops;
  if (host) {
    host_pass(c, true, s, path == StatsPath::narrow_lanes);
    return s;
  }
  s.checksum = device_checksum(c);
  if (!c.is_complex()) {
    device_stats_or_none(c, s);
  }
  return s;
}
}  // namespace

TensorStats StatsCache::get(const std::string& name, const at::Tensor& t) {
  int64_t version = -1;
  if (!t.is_inference()) {
    try {
      version = static_cast<int64_t>(t._version());
    } catch (const std::exception&) {
      version = -1;
    }
  }
  bool strided = t.layout() == at::kStrided && t.has_storage();
  auto id = strided ? reinterpret_cast<uintptr_t>(t.data_ptr()) : reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl());
  Key key{id, version, static_cast<int>(t.scalar_type()), to_vec(t.sizes()),
          strided ? to_vec(t.strides()) : std::vector<int64_t>{}};
  auto it = m_entries.find(key);
  if (it != m_entries.end() && (!strided || it->second.opaque || tensor_checksum(t) == it->second.checksum)) {
    TensorStats again = it->second;
    again.name = name;
    return again;
  }
  ++m_measured;
  TensorStats stats = tensor_stats(name, t);
  m_entries[key] = stats;
  return stats;
}

}  // namespace aoti_bisect::torchside
