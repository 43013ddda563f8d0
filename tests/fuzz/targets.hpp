#pragma once
// The parsers that read what a user (or an attacker) hands aoti-bisect, one
// entry point each, shared by the libFuzzer targets (tests/fuzz/fuzz_*.cpp)
// and the seeded mutation tests (tests/fuzz/mutation/). The property: every
// input ends in success or in an aoti_bisect::Error with a one-line message;
// no other exception, no crash, no hang, memory bounded by the input's size.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace fuzz {

// A package (.pt2 bytes): Package::open, select_model, wrapper_info,
// torch_version, extract into `scratch` (emptied afterwards).
void package_reader(const std::string& bytes, const std::filesystem::path& scratch);
// A wrapper source: parse_wrapper, returned_buffers, kernel_declarations,
// generate_hooks.
void wrapper_parser(const std::string& text);
// A YAML text as a backend profile and as a user config.
void config_parser(const std::string& text);
// An inputs or reference file (torch.save bytes): the driver's check before
// a child loads it.
void torch_save_check(const std::string& bytes, const std::filesystem::path& scratch);

// "" when `f` returned or threw an aoti_bisect::Error whose message is one
// non-empty line; otherwise what broke the property.
std::string violation(const std::function<void()>& f);

// Deterministic mutations of a seed: byte flips, interesting values,
// truncations, insertions, deletions, and splices of another seed.
class Mutator {
 public:
  explicit Mutator(uint64_t seed) : m_rng(seed) {}
  std::string mutate(const std::string& seed, const std::vector<std::string>& others);
  uint64_t below(uint64_t n) { return n == 0 ? 0 : m_rng() % n; }

 private:
  std::mt19937_64 m_rng;  // the same sequence on every platform
};

}  // namespace fuzz
