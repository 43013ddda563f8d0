#pragma once
// compute-sanitizer's report, read (issue 41, item 3): each error's kind,
// kernel, thread, block and address, and the address named as one of the
// culprit's buffers. The format is that of the Compute Sanitizer manual's
// examples (`========= Invalid __global__ write of size 4 bytes`, `at
// KERNEL+0xOFF`, `by thread (x,y,z) in block (x,y,z)`, `Address 0x... is
// out of bounds`, `and is N bytes after the nearest allocation at 0x... of
// size M bytes`); no run on a GPU of this project has produced one yet.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

struct SanitizerError {
  std::string what;    // "Invalid __global__ write of size 4 bytes"
  std::string kernel;  // "triton_poi_fused_index_0" (the offset dropped)
  std::string thread;  // "(64,0,0)"
  std::string block;   // "(12,0,0)"
  std::optional<uint64_t> address;
  std::string address_note;  // the sanitizer's own lines about the address ("is out of bounds; and is 12 bytes ...")
};

// The errors in the order reported, at most `limit`.
std::vector<SanitizerError> parse_sanitizer_errors(std::string_view text, size_t limit = 10);

// A buffer the culprit touched, as its probes saw it: its allocation.
struct BufferExtent {
  std::string name;   // "buf7"
  std::string dtype;  // "float32"
  std::vector<int64_t> shape;
  uint64_t address = 0;  // the storage's first byte
  uint64_t bytes = 0;    // the storage's size
};

// "12 bytes past the end of buf7 (float32 [8, 32], 1024 bytes)", "inside
// buf7 at byte 40 (...)", "16 bytes before the start of buf3 (...)": the
// buffer nearest `address`; "" when there is none.
std::string describe_address(uint64_t address, const std::vector<BufferExtent>& buffers);

// The runner under compute-sanitizer's memcheck, aimed at one kernel where
// its name is a device function's (a Triton kernel), with 32 bytes of
// padding between allocations so that an overrun lands in no neighbour.
std::string memcheck_command(const std::string& sanitizer, const std::string& kernel, bool filter_to_kernel);

}  // namespace aoti_bisect
