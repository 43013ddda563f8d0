// Seeded, bounded mutation tests of the parsers that read what users hand
// aoti-bisect (issue 10): the package reader, the wrapper parser, the config
// parser, and the inputs loader (the driver's check, then the runner on
// what passes it). Fixed seeds and iteration counts: the same inputs on
// every run, within the ctest's two minutes. The property (targets.hpp): success or
// one aoti_bisect::Error line; no other exception, no crash, no hang, and
// memory bounded (this process runs under an address-space limit).

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "common/error.hpp"
#include "fuzz/targets.hpp"
#include "hand_zip.hpp"
#include "inputs/torch_save.hpp"
#include "package/package.hpp"
#include "package_fixture.hpp"

namespace fs = std::filesystem;

namespace {

// Any allocation past this fails (std::bad_alloc, a violation) rather than
// taking the machine: the soft limit only, so the runner child can lift it.
constexpr rlim_t k_address_space = rlim_t{3} << 30;
constexpr double k_slowest_input_s = 5.0;

struct AddressSpaceLimit {
  AddressSpaceLimit() {
    rlimit lim{};
    getrlimit(RLIMIT_AS, &lim);
    lim.rlim_cur = std::min(lim.rlim_max, k_address_space);
    setrlimit(RLIMIT_AS, &lim);
  }
} const g_limit;

// Feeds `iterations` mutants of `seeds` to `target`; stops at the first
// violation, printing the input's seed and index so it can be replayed.
void run_mutants(const std::string& what, uint64_t rng_seed, int iterations, const std::vector<std::string>& seeds,
                 const std::function<void(const std::string&)>& target) {
  REQUIRE(!seeds.empty());
  fuzz::Mutator mutator(rng_seed);
  double slowest = 0;
  int refused = 0;
  for (int i = 0; i < iterations; ++i) {
    const std::string& seed = seeds[mutator.below(seeds.size())];
    std::string input = i < static_cast<int>(seeds.size()) ? seeds[i] : mutator.mutate(seed, seeds);
    auto start = std::chrono::steady_clock::now();
    std::string broken = fuzz::violation([&] {
      try {
        target(input);
      } catch (const aoti_bisect::Error&) {
        ++refused;
        throw;
      }
    });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    slowest = std::max(slowest, s);
    if (!broken.empty() || s > k_slowest_input_s) {
      std::ofstream(fmt::format("{}-{}.bin", what, i), std::ios::binary) << input;
    }
    INFO(what, " input ", i, " (kept as ", what, "-", i, ".bin)");
    REQUIRE(broken == "");
    REQUIRE(s <= k_slowest_input_s);
  }
  MESSAGE(what << ": " << iterations << " inputs (" << iterations - refused << " accepted, " << refused
               << " refused with one line), slowest " << slowest << " s");
}

std::vector<hand_zip::Entry> entries_of_bytes(const std::string& bytes) {
  std::ofstream("entries.zip", std::ios::binary | std::ios::trunc) << bytes;
  return hand_zip::entries_of("entries.zip");
}

// A mutant made at the level of entries, rewritten as a valid archive (byte
// mutations mostly end at a checksum): names, contents and declared sizes
// changed, entries dropped, doubled, or shadowed by a folder of their name.
std::string entry_mutant(fuzz::Mutator& m, std::vector<hand_zip::Entry> entries, const std::string& only_suffix = "") {
  static const uint64_t sizes[] = {0, 1, 0xFFFFFFFE, uint64_t{64} << 30, 1 << 20};
  const uint64_t rounds = 1 + m.below(3);
  for (uint64_t r = 0; r < rounds && !entries.empty(); ++r) {
    size_t i = m.below(entries.size());
    if (!only_suffix.empty()) {
      for (size_t k = 0; k < entries.size(); ++k) {
        const std::string& n = entries[k].name;
        if (n.ends_with(only_suffix)) {
          i = k;
        }
      }
    }
    hand_zip::Entry& e = entries[i];
    switch (only_suffix.empty() ? m.below(7) : 0) {
      case 0: e.data = m.mutate(e.data, {}); break;
      case 1: {
        std::string name = m.mutate(e.name, {});
        if (!name.empty() && name.find('\0') == std::string::npos) {
          e.name = name.substr(0, 400);
        }
        break;
      }
      case 2: e.declared = m.below(2) ? sizes[m.below(5)] : e.data.size() + m.below(3) - 1; break;
      case 3: entries.push_back(e); break;
      case 4: entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i)); break;
      case 5: entries.push_back({e.name + (m.below(2) ? "/x" : "/"), "shadow"}); break;
      default: e.deflate = !e.deflate;
    }
  }
  return hand_zip::archive(entries);
}

std::vector<std::string> package_seeds() {
  fixture::make_package("seed_libzip.pt2");
  fixture::make_zip("seed_two.pt2", {{"two/data/aotinductor/a/x.wrapper.cpp", fixture::text("nan_plain.wrapper.cpp")},
                                     {"two/data/aotinductor/a/x.wrapper.so", "so"},
                                     {"two/data/aotinductor/b/y.wrapper.so", "so"},
                                     {"two/data/aotinductor/b/y_metadata.json", R"({"AOTI_DEVICE_KEY": "cuda"})"},
                                     {"two/models/a.json", "{}"}});
  std::string so(3000, '\0');
  for (size_t i = 0; i < so.size(); ++i) {
    so[i] = static_cast<char>(i * 7);
  }
  std::string stored = hand_zip::archive(
      {{"pkg/archive_format", "pt2"},
       {"pkg/data/aotinductor/model/abc.wrapper.cpp", fixture::text("nan_level1.wrapper.cpp").substr(0, 6000)},
       {"pkg/data/aotinductor/model/abc.wrapper_metadata.json", R"({"AOTI_DEVICE_KEY": "cpu"})"},
       {"pkg/data/aotinductor/model/abc.wrapper.so", so, std::nullopt, true},
       {"pkg/data/", ""}});
  return {fixture::read("seed_libzip.pt2"), fixture::read("seed_two.pt2"), stored};
}

std::vector<std::string> wrapper_seeds() {
  std::vector<std::string> seeds;
  for (const char* name : {"nan_plain.wrapper.cpp", "nan_level1.wrapper.cpp", "cond_level1.wrapper.cpp",
                           "nan_level2_filtered.wrapper.cpp"}) {
    seeds.push_back(fixture::text(name));
  }
  return seeds;
}

std::vector<std::string> config_seeds() {
  std::vector<std::string> seeds;
  for (const char* name : {"cpu.yaml", "cuda.yaml", "rocm.yaml"}) {
    seeds.push_back(fixture::read(fs::path(AOTI_BISECT_SOURCE_DIR) / "configs" / name));
  }
  seeds.push_back(R"(repeats: 2
timeout: 60
jobs: 2
env:
  OMP_NUM_THREADS: "1"
variants_mode: append
variants:
  - name: blocking
    env: {CUDA_LAUNCH_BLOCKING: "1"}
    repeats: 5
tolerance: {atol: 1e-5, rtol: 1e-4}
inductor_configs: {max_autotune: false, "triton.cudagraphs": [1, 2.5, null]}
)");
  return seeds;
}

std::vector<std::string> torch_save_seeds() {
  std::string real = fixture::read(fs::path(AOTI_BISECT_TEST_DATA) / "fuzz_seed.inputs.pt");
  REQUIRE(real.size() > 1000);
  std::vector<std::string> seeds = {real};
  // The same archive with its records deflated, and with one lying size.
  fs::path tmp = "seed.pt";
  std::ofstream(tmp, std::ios::binary) << real;
  auto entries = hand_zip::entries_of(tmp);
  for (auto& e : entries) {
    e.deflate = true;
  }
  seeds.push_back(hand_zip::archive(entries));
  entries.back().declared = 100000;
  seeds.push_back(hand_zip::archive(entries));
  return seeds;
}

// The other forms users save tensors in (tests/data/tensor_files): the
// legacy format, safetensors, a tokenizer's BatchEncoding, an OrderedDict.
std::vector<std::string> tensor_file_seeds() {
  std::vector<std::string> seeds;
  for (const char* name : {"tf_legacy.pt", "tf.safetensors", "tf_batch.pt", "tf_ordered.pt", "tf_parameter.pt"}) {
    seeds.push_back(fixture::read(fs::path(AOTI_BISECT_TEST_DATA) / "tensor_files" / name));
  }
  return seeds;
}

}  // namespace

TEST_SUITE_BEGIN("fuzz");

TEST_CASE("fuzz: the package reader (open, select_model, wrapper_info, extract)") {
  const auto seeds = package_seeds();
  run_mutants("package", 0x5eed0001, 1500, seeds,
              [](const std::string& bytes) { fuzz::package_reader(bytes, "scratch"); });
  std::vector<std::string> restructured;
  fuzz::Mutator m(0x5eed0011);
  for (int i = 0; i < 1500; ++i) {
    restructured.push_back(entry_mutant(m, entries_of_bytes(seeds[m.below(seeds.size())])));
  }
  run_mutants("package-entries", 0x5eed0012, 1500, restructured,
              [](const std::string& bytes) { fuzz::package_reader(bytes, "scratch"); });
}

TEST_CASE("fuzz: the wrapper parser") {
  run_mutants("wrapper", 0x5eed0002, 3000, wrapper_seeds(),
              [](const std::string& text) { fuzz::wrapper_parser(text); });
}

TEST_CASE("fuzz: the config parser (profile and user config)") {
  run_mutants("config", 0x5eed0003, 3000, config_seeds(), [](const std::string& text) { fuzz::config_parser(text); });
}

TEST_CASE("fuzz: the driver's check of inputs and reference files") {
  const auto seeds = torch_save_seeds();
  run_mutants("torch_save", 0x5eed0004, 3000, seeds,
              [](const std::string& bytes) { fuzz::torch_save_check(bytes, "scratch"); });
  // Mutants of data.pkl alone, in an intact archive, and of the entries.
  std::vector<std::string> restructured;
  fuzz::Mutator m(0x5eed0014);
  const auto entries = entries_of_bytes(seeds[0]);
  for (int i = 0; i < 3000; ++i) {
    restructured.push_back(entry_mutant(m, entries, i % 3 == 0 ? "" : "data.pkl"));
  }
  run_mutants("torch_save-entries", 0x5eed0015, 3000, restructured,
              [](const std::string& bytes) { fuzz::torch_save_check(bytes, "scratch"); });
  // The legacy format, safetensors and pickled mapping objects: the same
  // rule (success or one line), through the pickle reader and writer.
  run_mutants("tensor_files", 0x5eed0016, 3000, tensor_file_seeds(),
              [](const std::string& bytes) { fuzz::torch_save_check(bytes, "scratch"); });
}
