#pragma once
// Helpers for end-to-end tests: run the real aoti-bisect binary on the real
// example packages (scripts/build-examples) and read what it reported.

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process/process.hpp"

namespace e2e {

struct Result {
  aoti_bisect::ExitStatus status;
  std::string out;        // stdout
  std::string err;        // stderr
  nlohmann::json report;  // report.json of --out, null when absent
  int code() const { return status.exit_code; }
};

std::filesystem::path example(const std::string& file);  // a file of the built examples
nlohmann::json meta_of(const std::string& name);         // the example's NAME.json
// Inductor's own compile cache, kept across test runs (the tool's build
// cache is fresh per test, so builds.count is what a test expects).
std::map<std::string, std::string> warm_inductor();
std::string read_text(const std::filesystem::path& path);
// Runs `script` (python -c) with `args` under the Python the tests use
// ($AOTI_BISECT_PYTHON, else python3); its stdout, or "" with a failed
// CHECK when it did not exit 0.
std::string python(const std::string& script, const std::vector<std::string>& args);
// Writes the reference file `src` (a tuple of tensors) to `dst` with row
// `row` (0-based) of output 0 moved by 1: a mismatch in that sample alone.
void shifted_reference(const std::filesystem::path& src, const std::filesystem::path& dst, int row);
// The last "aoti-bisect: error: ..." line of the run's stderr; "" when none.
std::string error_line(const Result& r);
// The last line of stderr from "aoti-bisect: " on (an error or a warning); "" when none.
std::string last_tool_line(const Result& r);
// Writes a copy of the package `src` to `dst` with its entries edited:
// `edit(name, bytes)` may change the bytes, and returns false to drop the
// entry. For packages that are broken or built in another way.
using EntryEdit = std::function<bool(const std::string& name, std::string& bytes)>;
void rewrite_package(const std::filesystem::path& src, const std::filesystem::path& dst, const EntryEdit& edit);

Result run_tool(std::vector<std::string> args, const std::string& out_dir,
                const std::map<std::string, std::string>& env = {}, double timeout_s = 600);

}  // namespace e2e
