// The one-kernel replay (lib/repro/replay.hpp): after isolation OUT/repro/
// holds `replay`, which rebuilds only the culprit call site and runs it on
// the saved tensors. It must exit 1 on the real examples' symptoms (NaN
// from a log, Inf from an extern addmm or convolution, a fault from a wild
// gather, wrong values from an injected relu bug), 0 once the saved input
// is made harmless, 2 when it cannot run; and the folder must name no
// private path.

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "e2e/e2e.hpp"
#include "skip.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::read_text;
using e2e::run_tool;
using e2e::warm_inductor;

namespace {

std::vector<std::string> package_only(const std::string& name, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"run",         example(name + ".pt2").string(),
                                   "--inputs",    example(name + ".inputs.pt").string(),
                                   "--repeats",   "1",
                                   "--cache-dir", fs::absolute("build-cache").string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

aoti_bisect::ExitStatus run(std::vector<std::string> argv, const std::map<std::string, std::string>& env = {}) {
  aoti_bisect::SpawnSpec spec;
  spec.argv = std::move(argv);
  spec.env = aoti_bisect::current_environment();
  for (const auto& [k, v] : env) {
    spec.env[k] = v;
  }
  static int counter = 0;
  std::string tag = std::to_string(++counter);
  spec.stdout_path = fs::absolute("replay.stdout." + tag + ".txt");
  spec.stderr_path = fs::absolute("replay.stderr." + tag + ".txt");
  spec.timeout_s = 600;
  spec.tail_bytes = 1 << 16;
  return aoti_bisect::run_process(spec);
}

aoti_bisect::ExitStatus replay(const fs::path& dir, const std::map<std::string, std::string>& env = {}) {
  auto st = run({fs::absolute(dir / "replay").string()}, env);
  MESSAGE("replay: exit " << st.exit_code << ": " << st.stdout_tail << st.stderr_tail.substr(0, 2000));
  return st;
}

// Isolated, with a replay the report names.
void check_isolated(const e2e::Result& r) {
  REQUIRE(r.report.is_object());
  CHECK(r.code() == 1);
  REQUIRE(r.report["verdict"] == "isolated");
  REQUIRE(r.report["repro"].is_object());
  CHECK(r.report["repro"]["replay"] == "out/repro/replay");
  CHECK(fs::exists("out/repro/replay"));
  CHECK(fs::exists("out/repro/README"));
  CHECK(read_text("out/report.md").find("out/repro/replay") != std::string::npos);
}

bool has_example(const std::string& name) {
  return fs::exists(example(name + ".json"));
}

}  // namespace

TEST_SUITE_BEGIN("e2e/replay");

TEST_CASE("replay: nan_midway reproduces (exit 1), not with positive inputs (exit 0); no private path") {
  auto r = run_tool(package_only("nan_midway"), "out", warm_inductor());
  check_isolated(r);
  std::string kernel = r.report["culprit"]["kernel"];
  auto st = replay("out/repro");
  CHECK(st.exit_code == 1);
  CHECK(st.stdout_tail.find(kernel + ": ") != std::string::npos);
  CHECK(st.stdout_tail.find("NaN after the call, inputs finite: reproduces") != std::string::npos);

  // Nothing in the folder names the home directory or where it was written.
  std::string home = std::getenv("HOME") ? std::getenv("HOME") : "/root";
  std::string out_abs = fs::absolute("out").string();
  int checked = 0;
  for (const auto& f : fs::directory_iterator("out/repro")) {
    std::string text = read_text(f.path());
    CHECK_MESSAGE(text.find(home + "/") == std::string::npos, f.path().string());
    CHECK_MESSAGE(text.find(out_abs) == std::string::npos, f.path().string());
    ++checked;
  }
  CHECK(checked >= 5);  // replay, README, driver.cpp, kernel.cpp and the saved tensors

  // The same call on positive inputs makes no NaN.
  auto fixed = run({"/usr/bin/env", "python3", "-c",
                    "import glob, torch\n"
                    "for f in glob.glob('out/repro/site*.pt'):\n"
                    "    t = torch.load(f)\n"
                    "    if t.is_floating_point(): torch.save(t.abs() + 1, f)\n"});
  REQUIRE(fixed.exit_code == 0);
  auto clean = replay("out/repro");
  CHECK(clean.exit_code == 0);
  CHECK(clean.stdout_tail.find("no new NaN/Inf after the call, inputs finite: does not reproduce") !=
        std::string::npos);

  {  // a broken folder cannot run: exit 2 with one clear line
    fs::remove_all("broken");
    fs::copy("out/repro", "broken", fs::copy_options::recursive);
    auto no_cxx = replay("broken", {{"CXX", "no-such-compiler-here"}});
    CHECK(no_cxx.exit_code == 2);
    CHECK(no_cxx.stdout_tail.find("replay: cannot run: no C++ compiler ('no-such-compiler-here') on PATH") !=
          std::string::npos);
    fs::remove("broken/kernel.cpp");
    auto no_source = replay("broken");
    CHECK(no_source.exit_code == 2);
    CHECK(no_source.stdout_tail.find("replay: cannot run: missing kernel.cpp") != std::string::npos);
    auto no_torch = replay("out/repro", {{"PYTHON", "no-such-python"}, {"TORCH_DIR", ""}});
    CHECK(no_torch.exit_code == 2);
    CHECK(no_torch.stdout_tail.find("replay: cannot run: no no-such-python on PATH") != std::string::npos);
  }
}

TEST_CASE("replay: extern_overflow's addmm makes Inf alone (exit 1)") {
  auto r = run_tool(package_only("extern_overflow"), "out", warm_inductor());
  check_isolated(r);
  CHECK(r.report["culprit"]["kernel"] == "aoti_torch_cpu_addmm_out");
  CHECK(!fs::exists("out/repro/kernel.cpp"));  // an extern call: the C shim, nothing to compile from the package
  auto st = replay("out/repro");
  CHECK(st.exit_code == 1);
  CHECK(st.stdout_tail.find("aoti_torch_cpu_addmm_out: ") != std::string::npos);
  CHECK(st.stdout_tail.find("Inf after the call, inputs finite: reproduces") != std::string::npos);
}

TEST_CASE("replay: conv_inf's convolution creates its output with Inf (exit 1)") {
  if (!has_example("conv_inf")) {
    aoti_bisect::test::skip("conv_inf not in the example cache: its replay case");
    return;
  }
  auto r = run_tool(package_only("conv_inf"), "out", warm_inductor());
  check_isolated(r);
  CHECK(r.report["culprit"]["kernel"] == "aoti_torch_cpu_convolution");
  auto st = replay("out/repro");
  CHECK(st.exit_code == 1);
  CHECK(st.stdout_tail.find("aoti_torch_cpu_convolution: ") != std::string::npos);
  CHECK(st.stdout_tail.find("after the call, inputs finite: reproduces") != std::string::npos);
}

TEST_CASE("replay: attn_fp16_overflow's bmm on two strided views makes Inf alone (exit 1)") {
  auto r = run_tool(package_only("attn_fp16_overflow"), "out", warm_inductor());
  check_isolated(r);
  CHECK(r.report["culprit"]["kernel"] == "aoti_torch_cpu_bmm_out");
  std::string driver = read_text("out/repro/driver.cpp");
  CHECK(driver.find("replay::view(\"view of ") != std::string::npos);
  auto st = replay("out/repro");
  CHECK(st.exit_code == 1);
  CHECK(st.stdout_tail.find("aoti_torch_cpu_bmm_out: ") != std::string::npos);
  CHECK(st.stdout_tail.find("Inf after the call, inputs finite: reproduces") != std::string::npos);
}

TEST_CASE("replay: bn_negative_var's batch-norm kernel makes NaN from its constant (exit 1)") {
  if (!has_example("bn_negative_var")) {
    aoti_bisect::test::skip("bn_negative_var not in the example cache: its replay case");
    return;
  }
  auto r = run_tool(package_only("bn_negative_var"), "out", warm_inductor());
  check_isolated(r);
  auto st = replay("out/repro");
  CHECK(st.exit_code == 1);
  CHECK(st.stdout_tail.find("NaN after the call, inputs finite: reproduces") != std::string::npos);
}

TEST_CASE("replay: wild_gather's kernel faults alone (exit 1, the signal named)") {
  auto r = run_tool(package_only("wild_gather"), "out", warm_inductor());
  check_isolated(r);
  std::string kernel = r.report["culprit"]["kernel"];
  auto st = replay("out/repro");
  CHECK(st.exit_code == 1);
  bool named = st.stdout_tail.find(kernel + ": died by SIGSEGV inside the call: reproduces") != std::string::npos ||
               st.stdout_tail.find(kernel + ": died by SIGBUS inside the call: reproduces") != std::string::npos;
  CHECK(named);
}

TEST_CASE("replay: relu_accuracy's kernel diverges from the saved eager value (exit 1)") {
  auto r = run_tool(package_only("relu_accuracy",
                                 {"--against-eager", "--no-judge",
                                     "--exported-program", example("relu_accuracy.ep.pt2").string()}),
                    "out", warm_inductor());
  check_isolated(r);
  std::string kernel = r.report["culprit"]["kernel"];
  std::string tensor = r.report["culprit"]["divergence"]["tensor"];
  CHECK(fs::exists("out/repro/site" + std::to_string(r.report["culprit"]["call_index"].get<int>()) + "_" + tensor +
                   ".expected.pt"));
  auto st = replay("out/repro");
  CHECK(st.exit_code == 1);
  CHECK(st.stdout_tail.find(kernel + ": " + tensor + " against the saved eager value: max abs error") !=
        std::string::npos);
  CHECK(st.stdout_tail.find("beyond tolerance, reproduces") != std::string::npos);
}

TEST_SUITE_END();
