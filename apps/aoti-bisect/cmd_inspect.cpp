#include <cstdio>

#include "commands.hpp"
#include "common/error.hpp"
#include "package/inspect.hpp"

namespace aoti_bisect::cli {

Action add_inspect_command(CLI::App& app) {
  struct Opts {
    std::string package;
    std::string model;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show the models, device key, metadata and kernel call sites of a package");
  cmd->add_option("package", opts->package, "the .pt2 package")->required();
  cmd->add_option("--model", opts->model, "only this model of the package");
  cmd->add_flag("--json", opts->json, "print JSON for scripts instead of a table");
  return [opts]() {
    Package pkg = Package::open(opts->package);
    std::string text = opts->json ? inspect_json(pkg, opts->model).dump(2) + "\n" : inspect_table(pkg, opts->model);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return static_cast<int>(ExitCode::clean);
  };
}

}  // namespace aoti_bisect::cli
