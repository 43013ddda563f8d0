#pragma once
// The fixed texts of the one-kernel replay (repro/replay.hpp): the driver's
// C++ helpers and the script, with @NAME@ placeholders.

#include <string_view>

namespace aoti_bisect {

// C++ compiled into OUT/repro/driver.cpp ahead of its generated main():
// namespace replay with load/alloc/view, the signal guard and the three
// judges (judge_fault, judge_nonfinite, judge_mismatch).
std::string_view replay_driver_prelude();

// OUT/repro/replay (bash).
std::string_view replay_script_template();

}  // namespace aoti_bisect
