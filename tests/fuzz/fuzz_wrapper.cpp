// libFuzzer target: the wrapper parser (a generated wrapper.cpp).
// Build and run: docs/trust.md, "Fuzzing".

#include <cstdint>
#include <string>

#include "fuzz/fuzz_main.hpp"
#include "fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  fuzz::check_property([&] { fuzz::wrapper_parser(input); });
  return 0;
}
