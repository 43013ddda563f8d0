#pragma once
// The reference phase of `aoti-bisect run` (--against-eager): the exported
// program run eagerly on the inputs by the Python helper
// (inductor/build.hpp), its outputs the reference the runs are compared with.

#include <filesystem>

#include "harness/recorder.hpp"
#include "harness/settings.hpp"
#include "job/inspect.hpp"
#include "job/step.hpp"

namespace aoti_bisect {

// The reference to compare with: the user's (--reference), the eager one,
// or none (an empty path: no --against-eager, or eager failed on these
// inputs too, which a note says). Error(usage) when --against-eager has no
// exported program to run.
Step<std::filesystem::path> reference_phase(const Settings& s, const Inspected& in, const std::filesystem::path& work,
                                            Recorder& rec);

}  // namespace aoti_bisect
