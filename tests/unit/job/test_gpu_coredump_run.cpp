// The coredump variant's core dump read after the runs: the progress lines,
// cuda-gdb (a stand-in script printing cuda-gdb's output format), the call
// sites and the search's culprit.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "job/gpu_coredump_run.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

constexpr const char* k_progress =
    "[03:12:40.106512] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)\n"
    "[03:12:40.106514] coredump:   - Device: 0\n"
    "[03:12:40.106516] coredump:   - SM: 77\n"
    "[03:12:40.106520] coredump:   - PC 0x7f3c2a1f96d0\n"
    "[03:12:40.308411] coredump: Writing ELF file to gpucore.48213\n";

// A cuda-gdb that prints what the real one prints for `target cudacore`
// (the CUDA-GDB manual's format), and checks it was asked for that file.
void fake_cuda_gdb(const fs::path& bin) {
  fs::create_directories(bin);
  std::ofstream(bin / "cuda-gdb") << "#!/bin/sh\n"
                                     "case \"$3\" in *'target cudacore '*gpucore.48213) ;; *) exit 3 ;; esac\n"
                                     "echo 'Opening GPU coredump: gpucore.48213'\n"
                                     "echo 'CUDA Exception: Warp Illegal Address'\n"
                                     "echo 'The exception was triggered at PC 0x7f3c2a1f96d0  "
                                     "triton_poi_fused_index_0(float*, long*, float*, int)'\n"
                                     "echo '[Current focus set to CUDA kernel 0, grid 3, block (12,0,0), thread "
                                     "(64,0,0), device 0, sm 77, warp 2, lane 0]'\n";
  fs::permissions(bin / "cuda-gdb", fs::perms::owner_all);
}

Report report_with_runs() {
  Report r;
  RunRecord base;
  base.id = "baseline";
  RunRecord dump;
  dump.id = "coredump.1";
  dump.variant = "coredump";
  dump.env = {{"CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1"}};
  r.runs = {base, dump};
  fs::create_directories("cd/runs/baseline");
  fs::create_directories("cd/runs/coredump.1");
  std::ofstream("cd/runs/baseline/stderr.txt") << k_progress;  // not the variant's run: never read
  std::ofstream("cd/runs/coredump.1/stderr.txt") << "runner: start\n" << k_progress;
  std::ofstream("cd/runs/coredump.1/gpucore.48213") << "ELF";
  return r;
}

std::vector<CallSite> sites() {
  std::vector<CallSite> out(5);
  const char* kernels[] = {"triton_poi_fused_add_0", "triton_per_fused_sum_1", "triton_poi_fused_add_0",
                           "triton_poi_fused_index_0", "triton_poi_fused_mul_2"};
  for (int i = 0; i < 5; ++i) {
    out[i].index = i + 1;
    out[i].kernel = kernels[i];
  }
  return out;
}

// PATH set for the scope of a test, then restored.
struct PathFirst {
  std::string old;
  explicit PathFirst(const fs::path& dir, bool keep_rest = true) {
    const char* p = std::getenv("PATH");
    old = p ? p : "";
    std::string now = fs::absolute(dir).string() + (keep_rest ? ":" + old : "");
    ::setenv("PATH", now.c_str(), 1);
  }
  ~PathFirst() { ::setenv("PATH", old.c_str(), 1); }
};

}  // namespace

TEST_SUITE_BEGIN("job/gpu_coredump_run");

TEST_CASE("read_gpu_coredump: cuda-gdb names the kernel, mapped to its call site and the search's culprit") {
  fake_cuda_gdb("cd/bin");
  PathFirst path("cd/bin");
  Report r = report_with_runs();
  Culprit c;
  c.call_index = 4;
  c.kernel = "triton_poi_fused_index_0";
  r.culprit = c;
  auto d = read_gpu_coredump("cd/runs", r, sites(), 30);
  REQUIRE(d.has_value());
  CHECK(d->run == "coredump.1");
  CHECK(d->read_by_debugger);
  CHECK(d->kernel == "triton_poi_fused_index_0");
  CHECK(d->exception == "Warp Illegal Address");
  CHECK(d->block == "(12,0,0)");
  CHECK(d->thread == "(64,0,0)");
  CHECK(d->pc == "0x7f3c2a1f96d0");
  CHECK(d->sm == 77);
  CHECK(d->call_sites == std::vector<int>{4});
  CHECK(d->agrees == true);
  CHECK(d->file.find("gpucore.48213") != std::string::npos);
  CHECK(fs::exists("cd/runs/coredump.1/cuda-gdb.txt"));

  r.culprit->kernel = "triton_poi_fused_add_0";  // the search named another kernel
  d = read_gpu_coredump("cd/runs", r, sites(), 30);
  REQUIRE(d.has_value());
  CHECK(d->agrees == false);
}

TEST_CASE("read_gpu_coredump without cuda-gdb: the progress lines alone, and why the kernel is not named") {
  fs::create_directories("cd-empty-bin");
  PathFirst path("cd-empty-bin", false);  // nothing else on PATH
  Report r = report_with_runs();
  auto d = read_gpu_coredump("cd/runs", r, sites(), 30);
  REQUIRE(d.has_value());
  CHECK_FALSE(d->read_by_debugger);
  CHECK(d->kernel.empty());
  CHECK(d->exception == "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS");
  CHECK(d->pc == "0x7f3c2a1f96d0");
  CHECK(d->debugger_note == "cuda-gdb is not on PATH");
  CHECK(d->call_sites.empty());
  CHECK_FALSE(d->agrees.has_value());
}

TEST_CASE("read_gpu_coredump: no run of the variant, or one that left no core dump, gives none") {
  Report r = report_with_runs();
  r.runs.pop_back();
  CHECK_FALSE(read_gpu_coredump("cd/runs", r, sites(), 30).has_value());
  r = report_with_runs();
  std::ofstream("cd/runs/coredump.1/stderr.txt") << "RuntimeError: CUDA error: an illegal memory access\n";
  CHECK_FALSE(read_gpu_coredump("cd/runs", r, sites(), 30).has_value());
}

TEST_SUITE_END();
