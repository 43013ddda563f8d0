// aoti-bisect: parse the command line, run one subcommand, map the outcome to
// an exit code. Every user-facing error is caught here, once.

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "job/job.hpp"
#include "process/process.hpp"

namespace ab = aoti_bisect;

namespace {

// "aoti-bisect: error: <message>"; messages that carry their own location
// ("nightly.yaml:3:1: error: ...") keep it.
void print_error(const std::string& message) {
  std::string text = ab::redact_paths(message);
  if (text.find(": error: ") != std::string::npos) {
    std::fprintf(stderr, "aoti-bisect: %s\n", text.c_str());
  } else {
    std::fprintf(stderr, "aoti-bisect: error: %s\n", text.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // No fastbins: the driver builds and frees millions of small JSON nodes
  // (a 10,000-site trace run writes 17 MB of events), and every large free
  // then consolidated them all (malloc_consolidate led its profile); a
  // quarter less CPU on that model (docs/benchmark.md).
  ::mallopt(M_MXFAST, 0);
  std::vector<std::string> args(argv, argv + argc);
  bool git_bisect = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--exit-codes=git-bisect" ||
        (args[i] == "--exit-codes" && i + 1 < args.size() && args[i + 1] == "git-bisect")) {
      git_bisect = true;
    }
  }
  auto code_of = [&](ab::ExitCode c) { return git_bisect ? ab::git_bisect_exit_code(c) : static_cast<int>(c); };

  CLI::App app{"aoti-bisect: finds the first kernel of an AOTInductor package that crashes or produces bad values"};
  app.set_version_flag("--version", std::string("aoti-bisect ") + AOTI_BISECT_VERSION);
  app.require_subcommand(1);
  app.footer(
      "The manual: docs/ beside this tool's sources (docs/run.md: run and its options; docs/reports.md: the "
      "reports and exit codes; docs/triage.md; docs/configs.md), and README.md.");
  // The subcommands, one table: the source of --help and of dispatch.
  std::vector<std::pair<std::string, ab::cli::Action>> commands = {
      {"run", ab::cli::add_run_command(app, args)}, {"bisect", ab::cli::add_bisect_command(app, args)},
      {"build", ab::cli::add_build_command(app)},   {"inspect", ab::cli::add_inspect_command(app)},
      {"triage", ab::cli::add_triage_command(app)}, {"triage-merge", ab::cli::add_triage_merge_command(app)},
      {"verify", ab::cli::add_verify_command(app)}, {"capture", ab::cli::add_capture_command(app)},
      {"setup", ab::cli::add_setup_command(app)},
  };
  // An unknown word where the subcommand goes: name it and the known ones.
  if (args.size() > 1 && !args[1].empty() && args[1][0] != '-' &&
      std::none_of(commands.begin(), commands.end(), [&](const auto& c) { return c.first == args[1]; })) {
    std::string known;
    for (const auto& c : commands) {
      known += (known.empty() ? "" : ", ") + c.first;
    }
    std::fprintf(stderr, "aoti-bisect: error: unknown subcommand '%s' (known: %s); see 'aoti-bisect --help'\n",
                 ab::redact_paths(args[1]).c_str(), known.c_str());
    return code_of(ab::ExitCode::usage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (auto& c : msg) {
      if (c == '\n') {
        c = ' ';
      }
    }
    // The subcommand's own help, where one was named: its options are there.
    std::string help = "aoti-bisect --help";
    if (args.size() > 1 &&
        std::any_of(commands.begin(), commands.end(), [&](const auto& c) { return c.first == args[1]; })) {
      help = "aoti-bisect " + args[1] + " --help";
    }
    std::fprintf(stderr, "aoti-bisect: error: %s; see '%s'\n", msg.c_str(), help.c_str());
    return code_of(ab::ExitCode::usage);
  }
  try {
    for (auto& [name, action] : commands) {
      if (app.got_subcommand(name)) {
        return code_of(static_cast<ab::ExitCode>(action()));
      }
    }
    return code_of(ab::ExitCode::usage);
  } catch (const ab::Error& e) {
    if (ab::interrupt_requested()) {
      std::fprintf(stderr, "aoti-bisect: interrupted by %s\n", ab::signal_name(ab::interrupt_signal()).c_str());
      return code_of(ab::ExitCode::interrupted);
    }
    print_error(e.what());
    return code_of(ab::exit_code_of(e.kind()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aoti-bisect: error: internal error: %s (a bug of aoti-bisect: please report it)\n",
                 ab::redact_paths(e.what()).c_str());
    return code_of(ab::ExitCode::internal);
  }
}
