// libFuzzer target: the driver's check of inputs and reference files (torch.save zips).
// Build and run: docs/trust.md, "Fuzzing".

#include <cstdint>
#include <string>

#include "fuzz/fuzz_main.hpp"
#include "fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  fuzz::check_property([&] { fuzz::torch_save_check(input, fuzz::scratch()); });
  return 0;
}
