// Writing the reports into the output folder: report.json, report.svg, report.md and junit.xml, each
// atomically, with every path redacted.

#include "report/sinks.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "report/sink_svg.hpp"

namespace aoti_bisect {

namespace fs = std::filesystem;

void write_reports(const Report& report, const fs::path& dir, bool junit) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(ErrorKind::internal,
                fmt::format("cannot create report directory '{}': {}", display_path(dir), ec.message()));
  }
  // Every path in a report goes through redaction once more, whatever field
  // or child's line it came from.
  write_file_atomic(dir / "report.json", redact_paths(report_to_json(report)));
  // The picture before the Markdown that links it. Its texts are redacted
  // one by one (sink_svg.cpp): the markup itself is never rewritten.
  std::string svg = report_to_svg(report);
  if (!svg.empty()) {
    write_file_atomic(dir / "report.svg", svg);
  } else {
    fs::remove(dir / "report.svg", ec);
  }
  write_file_atomic(dir / "report.md", redact_paths(report_to_markdown(report)));
  if (junit) {
    write_file_atomic(dir / "junit.xml", redact_paths(report_to_junit(report)));
  }
}

}  // namespace aoti_bisect
