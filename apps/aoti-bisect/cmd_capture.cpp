// `aoti-bisect capture --out CAP -- COMMAND ARGS...`: the inputs from the
// user's own process (lib/capture).

#include "capture/capture.hpp"
#include "commands.hpp"

namespace aoti_bisect::cli {

Action add_capture_command(CLI::App& app) {
  auto o = std::make_shared<CaptureOptions>();
  auto out = std::make_shared<std::string>("aoti-bisect-capture");
  CLI::App* cmd = app.add_subcommand(
      "capture",
      "Run a program unchanged (Python or a C++ host) and keep the inputs of the first call of an AOTI package "
      "that goes bad (NaN/Inf from finite inputs, an error, a death inside the call), with the calls before it");
  cmd->add_option("--out", *out, "folder for capture.json and the kept calls' inputs (calls/call-N.pt)")
      ->capture_default_str();
  cmd->add_option("--keep", o->keep, "calls kept before the first bad one (default 8)")->check(CLI::Range(0, 1000000));
  cmd->add_option("--max-bytes", o->max_bytes, "bytes of kept inputs on disk at most (default 1 GiB)")
      ->check(CLI::Range(1LL, 1LL << 50));
  cmd->add_option("--call", o->call, "keep call N (from 1) only")->check(CLI::Range(1L, 1L << 40));
  cmd->add_flag("--every", o->every, "keep every call, within --max-bytes");
  cmd->add_option("--package", o->package, "only the calls of this package (its file name without .pt2)");
  cmd->add_flag("--then-run", o->then_run, "go straight on to `aoti-bisect run` on the first bad call (CAP/run/)");
  cmd->add_option("command", o->command, "the program and its arguments, after --")->required();
  return [o, out]() {
    o->out = *out;
    return run_capture(*o);
  };
}

}  // namespace aoti_bisect::cli
