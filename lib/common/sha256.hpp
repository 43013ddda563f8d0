#pragma once
// SHA-256 (FIPS 180-4), the project's own: the driver and the runner hash
// with it and link no crypto library (a runner is built on the user's
// machine against LibTorch alone). Where the CPU has the SHA extensions
// (x86 SHA-NI) the block function uses them, chosen at run time.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace aoti_bisect {

class Sha256 {
 public:
  Sha256();
  // `portable`: the plain C++ block function even where the CPU has SHA-NI
  // (the unit tests compare the two).
  explicit Sha256(bool portable);
  void update(const void* data, size_t n);
  // The digest as 64 lowercase hex digits. The object is spent after it.
  std::string hex();

 private:
  void blocks(const uint8_t* p, size_t count);
  std::array<uint32_t, 8> m_state;
  std::array<uint8_t, 64> m_buffer{};
  size_t m_buffered = 0;
  uint64_t m_length = 0;
  bool m_fast;
};

// Whether this CPU runs the SHA-NI block function.
bool sha256_uses_cpu_extensions();

}  // namespace aoti_bisect
