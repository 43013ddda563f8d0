#pragma once
// What the report says about the machine: OS, Python, the git revision of the
// working directory, the CPU model. Each probe is best effort and bounded in
// time; a missing tool leaves its field empty.

#include "report/report.hpp"

namespace aoti_bisect {

// Fills os, python_version, git_revision and, for CPU devices, device_name.
void probe_host_environment(Environment& env);

}  // namespace aoti_bisect
