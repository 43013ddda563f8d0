#pragma once
// The coredump variant's core dump, read after the runs (issue 41, item 2):
// the run's progress lines say the exception, device, SM, PC and file; where
// cuda-gdb is on PATH it reads the file for the kernel, block and thread,
// and the kernel is matched to the wrapper's call sites and to the search's
// culprit.

#include <filesystem>
#include <optional>
#include <vector>

#include "report/report.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// The first run on record of `report` that set CUDA_ENABLE_COREDUMP_ON_EXCEPTION
// and left the driver's progress lines in its stderr.txt (under
// runs_dir/ID/); none when no run made one. cuda-gdb's output is kept in
// the run's folder as cuda-gdb.txt; it may take `timeout_s`.
std::optional<CoreDumpReading> read_gpu_coredump(const std::filesystem::path& runs_dir, const Report& report,
                                                 const std::vector<CallSite>& sites, double timeout_s = 120);

}  // namespace aoti_bisect
