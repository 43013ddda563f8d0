// The runner's inputs loader (LibTorch's unpickler) on mutants of a real
// inputs file: each goes through the driver's check first, as in a real
// run; a handful of those it lets through then go to the runner, which must
// end with one of its defined exit statuses (no signal), within its time
// and memory. Built with LibTorch only (the runner and the examples).

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "common/error.hpp"
#include "fuzz/targets.hpp"
#include "hand_zip.hpp"
#include "inputs/tensor_file.hpp"
#include "package/package.hpp"
#include "package_fixture.hpp"

namespace fs = std::filesystem;

namespace {

constexpr long k_runner_max_rss_kb = 2L << 20;  // 2 GiB: a loaded CPU model takes about 0.15
constexpr double k_runner_timeout_s = 120;

struct ChildRun {
  int status = 0;
  long max_rss_kb = 0;
  double seconds = 0;
  bool timed_out = false;
};

// fork/exec with wait4, for the child's peak memory (run_process keeps none).
ChildRun run_child(const std::vector<std::string>& argv, const fs::path& log) {
  ChildRun r;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    rlimit lim{};
    getrlimit(RLIMIT_AS, &lim);
    lim.rlim_cur = lim.rlim_max;  // the fuzz binary's own limit is not the runner's
    setrlimit(RLIMIT_AS, &lim);
    int in = open("/dev/null", O_RDONLY);
    int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    std::vector<char*> args;
    for (const auto& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  rusage ru{};
  while (true) {
    pid_t got = wait4(pid, &r.status, WNOHANG, &ru);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (got == pid) {
      break;
    }
    if (r.seconds > k_runner_timeout_s && !r.timed_out) {
      r.timed_out = true;
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.max_rss_kb = ru.ru_maxrss;
  return r;
}

// A mutant of the whole file, or (every other time) of its data.pkl alone in
// an otherwise intact archive, which reaches the unpickler more often.
std::string mutant(fuzz::Mutator& m, const std::string& seed, const std::vector<hand_zip::Entry>& entries) {
  if (m.below(2) == 0) {
    return m.mutate(seed, {});
  }
  auto edited = entries;
  for (auto& e : edited) {
    if (e.name.ends_with("data.pkl")) {
      e.data = m.mutate(e.data, {});
    }
  }
  return hand_zip::archive(edited);
}

}  // namespace

TEST_SUITE_BEGIN("fuzz");

TEST_CASE("fuzz: the runner's inputs loader, on mutants the driver's check lets through") {
  const fs::path example = fs::path(AOTI_BISECT_EXAMPLES) / "healthy.pt2";
  const fs::path inputs = fs::path(AOTI_BISECT_EXAMPLES) / "healthy.inputs.pt";
  // ctest's fuzz entry requires the examples fixture: without them this fails.
  REQUIRE_MESSAGE((fs::exists(example) && fs::exists(inputs)), "the examples are not built (ctest -R examples_build)");
  auto pkg = aoti_bisect::Package::open(example);
  const auto& model = pkg.select_model("");
  const fs::path dir = pkg.extract("pkg");
  const std::string seed = fixture::read(inputs);
  const auto entries = hand_zip::entries_of(inputs);
  fuzz::Mutator m(0x5eed0005);
  int checked = 0;
  int refused = 0;
  int ran = 0;
  std::map<int, int> codes;
  for (int i = 0; i < 300 && ran < 8; ++i) {
    std::string input = mutant(m, seed, entries);
    std::ofstream("in.pt", std::ios::binary | std::ios::trunc) << input;
    ++checked;
    bool passes = true;
    std::string broken = fuzz::violation([&] {
      try {
        aoti_bisect::check_tensor_file("in.pt", "inputs file");
      } catch (const aoti_bisect::Error&) {
        passes = false;
        throw;
      }
    });
    INFO("mutant ", i);
    REQUIRE(broken == "");
    if (!passes) {
      ++refused;
      continue;
    }
    if (input == seed) {
      continue;
    }
    ChildRun r = run_child({AOTI_BISECT_RUNNER_BIN, "--package-dir", dir.string(), "--model", model.name,
                            "--device-key", model.device_key(), "--inputs", "in.pt", "--events", "events.jsonl"},
                           "runner.log");
    ++ran;
    if (!WIFEXITED(r.status) || r.max_rss_kb > k_runner_max_rss_kb) {
      std::ofstream(fmt::format("runner-mutant-{}.pt", i), std::ios::binary) << input;
    }
    INFO("runner on mutant ", i, " (kept as runner-mutant-", i, ".pt): ", fixture::read("runner.log"));
    CHECK_FALSE(r.timed_out);
    REQUIRE(WIFEXITED(r.status));
    const int code = WEXITSTATUS(r.status);
    ++codes[code];
    // ran, model_error, input_mismatch, cannot_test (lib/protocol/runner.hpp)
    CHECK((code == 0 || code == 10 || code == 11 || code == 12));
    CHECK(r.max_rss_kb <= k_runner_max_rss_kb);
  }
  std::string tally;
  for (const auto& [code, n] : codes) {
    tally += fmt::format(" exit {}: {}", code, n);
  }
  MESSAGE("runner inputs: " << checked << " mutants checked, " << refused << " refused by the driver, " << ran
                            << " run by the runner (" << tally << " )");
  CHECK(ran >= 4);
}
