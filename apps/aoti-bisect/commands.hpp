#pragma once
// One file per subcommand: each adds its options to the CLI11 app and
// returns the exit code once it has run.

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace aoti_bisect::cli {

using Action = std::function<int()>;

// Registers `run`; the returned action runs it after parsing.
Action add_run_command(CLI::App& app, const std::vector<std::string>& argv);
Action add_bisect_command(CLI::App& app, const std::vector<std::string>& argv);
Action add_build_command(CLI::App& app);
Action add_inspect_command(CLI::App& app);
Action add_triage_command(CLI::App& app);
Action add_triage_merge_command(CLI::App& app);
Action add_verify_command(CLI::App& app);
Action add_capture_command(CLI::App& app);
Action add_setup_command(CLI::App& app);

bool stdout_color();  // stdout is a terminal and NO_COLOR is unset

}  // namespace aoti_bisect::cli
