#include <doctest/doctest.h>

#include "classify/sanitizer.hpp"

using namespace aoti_bisect;

// In the format of the Compute Sanitizer manual's memcheck examples, with
// this project's kind of kernel (no GPU of this project has run one yet).
namespace {

constexpr const char* k_memcheck = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at triton_poi_fused_index_put_0+0x1b0
=========     by thread (64,0,0) in block (12,0,0)
=========     Address 0x7f1200000c0c is out of bounds
=========     and is 12 bytes after the nearest allocation at 0x7f1200000800 of size 1024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: [0x2dbcde] in libcuda.so.1
=========
========= Invalid __global__ read of size 4 bytes
=========     at triton_poi_fused_index_put_0+0x120
=========     by thread (65,0,0) in block (12,0,0)
=========     Address 0x7f12000007f0 is out of bounds
=========
========= ERROR SUMMARY: 2 errors
)";

std::vector<BufferExtent> buffers() {
  return {{"buf7", "float32", {8, 32}, 0x7f1200000800, 1024}, {"arg3_1", "int64", {8}, 0x7f1200001000, 64}};
}

}  // namespace

TEST_SUITE_BEGIN("classify");

TEST_CASE("compute-sanitizer's errors: kind, kernel, thread, block, address") {
  auto e = parse_sanitizer_errors(k_memcheck);
  REQUIRE(e.size() == 2);
  CHECK(e[0].what == "Invalid __global__ write of size 4 bytes");
  CHECK(e[0].kernel == "triton_poi_fused_index_put_0");
  CHECK(e[0].thread == "(64,0,0)");
  CHECK(e[0].block == "(12,0,0)");
  REQUIRE(e[0].address);
  CHECK(*e[0].address == 0x7f1200000c0cULL);
  CHECK(e[0].address_note ==
        "is out of bounds; and is 12 bytes after the nearest allocation at 0x7f1200000800 of size 1024 bytes");
  CHECK(e[1].what == "Invalid __global__ read of size 4 bytes");
  CHECK(*e[1].address == 0x7f12000007f0ULL);
  CHECK(parse_sanitizer_errors(k_memcheck, 1).size() == 1);
  CHECK(parse_sanitizer_errors("========= ERROR SUMMARY: 0 errors\n").empty());
  auto init = parse_sanitizer_errors(
      "========= Uninitialized __global__ memory read of size 4 bytes\n"
      "=========     at triton_red_fused_sum_1+0x90\n"
      "=========     by thread (0,0,0) in block (3,0,0)\n"
      "=========     Address 0x7f1200002000\n");
  REQUIRE(init.size() == 1);
  CHECK(init[0].what == "Uninitialized __global__ memory read of size 4 bytes");
  CHECK(init[0].kernel == "triton_red_fused_sum_1");
}

TEST_CASE("describe_address: a sanitizer's address named as the buffer it falls in or next to") {
  CHECK(describe_address(0x7f1200000c0c, buffers()) == "12 bytes past the end of buf7 (float32 [8, 32], 1024 bytes)");
  CHECK(describe_address(0x7f1200000828, buffers()) == "inside buf7 (float32 [8, 32], 1024 bytes) at byte 40");
  CHECK(describe_address(0x7f12000007f0, buffers()) ==
        "16 bytes before the start of buf7 (float32 [8, 32], 1024 bytes)");
  CHECK(describe_address(0x7f1200001048, buffers()) == "8 bytes past the end of arg3_1 (int64 [8], 64 bytes)");
  CHECK(describe_address(0x10, {}).empty());
}

TEST_CASE("memcheck_command: aimed at a device kernel, with padding") {
  std::string aimed = memcheck_command("/opt/cuda/bin/compute-sanitizer", "triton_poi_fused_index_put_0", true);
  CHECK(aimed.rfind("/opt/cuda/bin/compute-sanitizer --tool memcheck --padding 32", 0) == 0);
  CHECK(aimed.find("--kernel-name kns=triton_poi_fused_index_put_0") != std::string::npos);
  CHECK(aimed.find("--error-exitcode 86") != std::string::npos);
  // An extern call's name is the shim's, not a device function's: no filter.
  CHECK(memcheck_command("compute-sanitizer", "aoti_torch_cuda_index_put", false).find("--kernel-name") ==
        std::string::npos);
}

TEST_SUITE_END();
