#pragma once
// A test case that cannot run here (no root for a mount, an example the
// cache lacks) says so through skip(): the reason is printed, and where the
// environment asks (AOTI_BISECT_SKIP_EXIT, set by ctest on the entries that
// hold such cases), the test binary then exits with that code after an
// otherwise passing run, so that ctest shows the entry as skipped rather
// than passed (tests/CMakeLists.txt).

#include <string>
#include <vector>

namespace aoti_bisect::test {

// Records `why` and prints it; the case should return right after.
void skip(const std::string& why);
const std::vector<std::string>& skipped();

}  // namespace aoti_bisect::test
