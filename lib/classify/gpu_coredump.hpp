#pragma once
// A GPU core dump, read (issue 41): with CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1
// the CUDA driver stops at a device exception (an illegal address, a
// device-side assert) and writes the faulting kernel's state to a file. Two
// readings, both of text:
//   - the driver's progress lines (CUDA_COREDUMP_SHOW_PROGRESS=1, on the
//     process's stderr): the exception type, device, SM, PC and the file;
//   - cuda-gdb's, where cuda-gdb is installed (`cuda-gdb --batch -ex
//     "target cudacore FILE"`): the kernel's name, its grid, the faulting
//     block and thread, and the launch's dimensions.
// The formats are those of the CUDA-GDB manual (section "GPU core dump
// support") and NVIDIA's driver as shown in its documentation's examples;
// no run on a GPU of this project has produced them yet (the unit tests'
// texts are written in that format, tests/unit/classify/test_gpu_coredump.cpp).

#include <optional>
#include <string>
#include <string_view>

namespace aoti_bisect {

struct GpuCoreDump {
  std::string file;       // the core file, as the driver named it
  std::string exception;  // "Warp Illegal Address" (cuda-gdb) or "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"
  std::string pc;         // "0x7f31abb9f6d0"
  std::string kernel;     // "triton_poi_fused_index_0" (cuda-gdb only; arguments dropped)
  std::string grid;       // cuda-gdb's grid number of the launch
  std::string block;      // "(0,0,0)", the faulting block
  std::string thread;     // "(0,0,0)", the faulting thread
  std::string launch;     // "<<<(1,1,1),(256,1,1)>>>", the launch's grid and block dimensions
  std::optional<int> device;
  std::optional<int> sm;
  bool read_by_debugger = false;  // cuda-gdb read the file (else the progress lines alone)
};

// The driver's progress lines ("coredump: ..."), from a run's stderr; none
// when the text holds no exception line.
std::optional<GpuCoreDump> coredump_from_progress(std::string_view stderr_text);

// cuda-gdb's reading of the file (the `target cudacore` command's output),
// into `dump`; false when the text names no exception or kernel.
bool read_cuda_gdb_output(std::string_view text, GpuCoreDump& dump);

// "illegalMemoryAccessKernel(int*, int)" -> "illegalMemoryAccessKernel";
// "void at::native::f<float>(float*)" -> "at::native::f<float>".
std::string kernel_name_of(std::string_view demangled);

}  // namespace aoti_bisect
