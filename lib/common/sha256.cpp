// SHA-256 without a crypto library: a portable block function, and the x86 SHA-NI one, chosen at run
// time where the CPU has it.

#include "common/sha256.hpp"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define AOTI_BISECT_SHA_NI 1
#endif

namespace aoti_bisect {

namespace {

alignas(16) constexpr uint32_t k_round[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::array<uint32_t, 8> k_initial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

void blocks_portable(uint32_t* s, const uint8_t* p, size_t count) {
  for (; count > 0; --count, p += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) | (uint32_t(p[4 * i + 2]) << 8) |
             uint32_t(p[4 * i + 3]);
    }
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k_round[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
    s[4] += e;
    s[5] += f;
    s[6] += g;
    s[7] += h;
  }
}

#ifdef AOTI_BISECT_SHA_NI

bool cpu_has_sha_ni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) {
    return false;
  }
  const bool ssse3 = (c & (1u << 9)) != 0, sse41 = (c & (1u << 19)) != 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    return false;
  }
  return ssse3 && sse41 && (b & (1u << 29)) != 0;
}

// Intel's SHA extensions: four rounds per pair of sha256rnds2, the message
// schedule by sha256msg1/msg2 (the sequence of Intel's white paper "New
// Instructions Supporting the Secure Hash Algorithm on Intel Architecture
// Processors", written as one loop over the 16 groups of 4 rounds).
__attribute__((target("sha,sse4.1,ssse3"))) void blocks_sha_ni(uint32_t* s, const uint8_t* p, size_t count) {
  const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&s[0]));
  __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&s[4]));
  tmp = _mm_shuffle_epi32(tmp, 0xB1);                // CDAB
  state1 = _mm_shuffle_epi32(state1, 0x1B);          // EFGH
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);  // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);       // CDGH
  for (; count > 0; --count, p += 64) {
    const __m128i abef = state0, cdgh = state1;
    __m128i w[4];
    // Unrolled, so that every index below is a constant and w[] stays in registers.
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) {
      __m128i& cur = w[g % 4];
      if (g < 4) {
        cur = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), mask);
      }
      __m128i msg = _mm_add_epi32(cur, _mm_load_si128(reinterpret_cast<const __m128i*>(&k_round[4 * g])));
      state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
      if (g >= 3 && g <= 14) {
        __m128i& next = w[(g + 1) % 4];
        next = _mm_add_epi32(next, _mm_alignr_epi8(cur, w[(g + 3) % 4], 4));
        next = _mm_sha256msg2_epu32(next, cur);
      }
      msg = _mm_shuffle_epi32(msg, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, msg);
      if (g >= 1 && g <= 12) {
        w[(g + 3) % 4] = _mm_sha256msg1_epu32(w[(g + 3) % 4], cur);
      }
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);        // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);     // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0);  // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);     // ABEF
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&s[0]), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&s[4]), state1);
}

#else

bool cpu_has_sha_ni() {
  return false;
}
void blocks_sha_ni(uint32_t* s, const uint8_t* p, size_t count) {
  blocks_portable(s, p, count);
}

#endif

}  // namespace

bool sha256_uses_cpu_extensions() {
  static const bool has = cpu_has_sha_ni();
  return has;
}

Sha256::Sha256() : Sha256(false) {}

Sha256::Sha256(bool portable) : m_state(k_initial), m_fast(!portable && sha256_uses_cpu_extensions()) {}

void Sha256::blocks(const uint8_t* p, size_t count) {
  if (m_fast) {
    blocks_sha_ni(m_state.data(), p, count);
  } else {
    blocks_portable(m_state.data(), p, count);
  }
}

void Sha256::update(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  m_length += n;
  if (m_buffered > 0) {
    size_t take = std::min(n, 64 - m_buffered);
    std::memcpy(m_buffer.data() + m_buffered, p, take);
    m_buffered += take;
    p += take;
    n -= take;
    if (m_buffered < 64) {
      return;
    }
    blocks(m_buffer.data(), 1);
    m_buffered = 0;
  }
  if (n >= 64) {
    blocks(p, n / 64);
    p += n / 64 * 64;
    n %= 64;
  }
  std::memcpy(m_buffer.data(), p, n);
  m_buffered = n;
}

std::string Sha256::hex() {
  const uint64_t bits = m_length * 8;
  uint8_t tail[128] = {};
  std::memcpy(tail, m_buffer.data(), m_buffered);
  tail[m_buffered] = 0x80;
  const size_t total = m_buffered + 1 + 8 <= 64 ? 64 : 128;
  for (int i = 0; i < 8; ++i) {
    tail[total - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  }
  blocks(tail, total / 64);
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(64, '0');
  for (int i = 0; i < 32; ++i) {
    uint8_t byte = static_cast<uint8_t>(m_state[i / 4] >> (24 - 8 * (i % 4)));
    out[2 * i] = digits[byte >> 4];
    out[2 * i + 1] = digits[byte & 15];
  }
  return out;
}

}  // namespace aoti_bisect
