#pragma once
// Renderings of a Report. Every function is pure (string out) except the
// writers, which write atomically.

#include <filesystem>
#include <string>

#include "report/report.hpp"

namespace aoti_bisect {

std::string report_to_json(const Report& report);      // report.json (pretty, 2-space indent)
std::string report_to_markdown(const Report& report);  // report.md for a bug report
std::string report_to_junit(
    const Report& report);  // junit.xml: one testsuite, one testcase per run + one for the verdict
std::string report_to_console(const Report& report, bool color);  // the summary printed on stdout

// Writes report.json, report.svg (when there are call sites to draw; an
// earlier one is removed when there are none), report.md (which links the
// picture) and junit.xml (when `junit` is set) into `dir`, each atomically.
void write_reports(const Report& report, const std::filesystem::path& dir, bool junit);

}  // namespace aoti_bisect
