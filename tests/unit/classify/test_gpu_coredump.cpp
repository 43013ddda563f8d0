#include <doctest/doctest.h>

#include "classify/gpu_coredump.hpp"

using namespace aoti_bisect;

// The texts below are in the formats of NVIDIA's documentation (the CUDA-GDB
// manual, "GPU core dump support", and the driver's progress lines with
// CUDA_COREDUMP_SHOW_PROGRESS=1 as its examples show them), with this
// project's kind of kernel in them: no GPU of this project has written one
// yet (scripts/device-check's coredump variant will).
namespace {

constexpr const char* k_progress = R"(aoti-bisect-runner: start
[03:12:40.102217] coredump: Starting GPU coredump generation
[03:12:40.102301] coredump: SM 1/132 has finished state collection
[03:12:40.106480] coredump: SM 77/132 has finished state collection
[03:12:40.106512] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)
[03:12:40.106514] coredump:   - Device: 0
[03:12:40.106516] coredump:   - SM: 77
[03:12:40.106518] coredump:   - Warp: exception was detected after the warp has exited
[03:12:40.106520] coredump:   - PC 0x7f3c2a1f96d0
[03:12:40.106533] coredump: SM 78/132 has finished state collection
[03:12:40.308411] coredump: Writing ELF file to gpucore.48213
[03:12:40.311207] coredump: Done
)";

constexpr const char* k_cuda_gdb = R"(Opening GPU coredump: gpucore.48213

CUDA Exception: Warp Illegal Address
The exception was triggered at PC 0x7f3c2a1f96d0  triton_poi_fused_index_0(float*, long*, float*, int)
[Current focus set to CUDA kernel 0, grid 3, block (12,0,0), thread (64,0,0), device 0, sm 77, warp 2, lane 0]
#0  0x00007f3c2a1f96e0 in triton_poi_fused_index_0(float*, long*, float*, int)<<<(64,1,1),(128,1,1)>>> ()
)";

}  // namespace

TEST_SUITE_BEGIN("classify");

TEST_CASE("a GPU core dump's progress lines: exception, device, SM, PC and file") {
  auto d = coredump_from_progress(k_progress);
  REQUIRE(d.has_value());
  CHECK(d->exception == "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS");
  CHECK(d->device == 0);
  CHECK(d->sm == 77);
  CHECK(d->pc == "0x7f3c2a1f96d0");
  CHECK(d->file == "gpucore.48213");
  CHECK(d->kernel.empty());  // the driver's lines do not name it
  CHECK_FALSE(d->read_by_debugger);
  CHECK_FALSE(coredump_from_progress("RuntimeError: CUDA error: an illegal memory access was encountered\n"));
  CHECK_FALSE(coredump_from_progress(""));
}

TEST_CASE("cuda-gdb's reading of a core dump: kernel, grid, block, thread, launch") {
  GpuCoreDump d = *coredump_from_progress(k_progress);
  REQUIRE(read_cuda_gdb_output(k_cuda_gdb, d));
  CHECK(d.read_by_debugger);
  CHECK(d.exception == "Warp Illegal Address");
  CHECK(d.kernel == "triton_poi_fused_index_0");
  CHECK(d.pc == "0x7f3c2a1f96d0");
  CHECK(d.grid == "3");
  CHECK(d.block == "(12,0,0)");
  CHECK(d.thread == "(64,0,0)");
  CHECK(d.launch == "<<<(64,1,1),(128,1,1)>>>");
  CHECK(d.device == 0);
  CHECK(d.sm == 77);
  CHECK(d.file == "gpucore.48213");  // kept from the progress lines

  GpuCoreDump none;
  CHECK_FALSE(read_cuda_gdb_output("\"target cudacore\": no such file\n", none));
  CHECK(none.kernel.empty());
  CHECK_FALSE(none.read_by_debugger);
}

TEST_CASE("kernel_name_of drops arguments, launch dimensions and a return type") {
  CHECK(kernel_name_of("illegalMemoryAccessKernel(int*, int)") == "illegalMemoryAccessKernel");
  CHECK(kernel_name_of("triton_red_fused_sum_1(float*, float*, int, int)<<<(8,1,1),(64,1,1)>>> ()") ==
        "triton_red_fused_sum_1");
  CHECK(kernel_name_of("void at::native::vectorized_elementwise_kernel<4, float>(int, float*)") ==
        "at::native::vectorized_elementwise_kernel<4, float>");
  CHECK(kernel_name_of("  plain  ") == "plain");
}

TEST_SUITE_END();
