#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "commands.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "harness/runner_build.hpp"
#include "harness/runner_choice.hpp"
#include "package/inspect.hpp"
#include "package/package_torch.hpp"

namespace aoti_bisect::cli {

namespace {

namespace fs = std::filesystem;

// Which runner `run` would use for the package's first model (its torch,
// and whether a runner against it is built yet): harness/runner_choice.hpp.
struct RunnerLine {
  std::string text;
  nlohmann::ordered_json json;
};

RunnerLine runner_line(const Package& pkg, const std::string& model, const std::string& python) {
  RunnerLine out;
  const char* env_runner = std::getenv("AOTI_BISECT_RUNNER");
  const ModelFiles& m = model.empty() ? pkg.models().front() : pkg.select_model(model);
  PickInputs p =
      pick_inputs(m.wrapper_cpp.empty() ? "" : pkg.read_entry(m.wrapper_cpp),
                  m.compile_flags_json.empty() ? "" : pkg.read_entry(m.compile_flags_json), python, "--python", false);
  RunnerPick pick = pick_runner(p, python3_torch);
  std::string state;
  switch (pick.kind) {
    case RunnerPick::Kind::named:
      out.text = fmt::format("{} (AOTI_BISECT_RUNNER)", display_path(env_runner));
      state = "named";
      break;
    case RunnerPick::Kind::beside:
      out.text = pick.torch.version.empty()
                     ? std::string("the one beside aoti-bisect")
                     : fmt::format("torch {}, the one beside aoti-bisect ({})", pick.torch.version, pick.why);
      state = "beside";
      break;
    case RunnerPick::Kind::per_torch: {
      std::error_code ec;
      fs::path cached = runner_cache_path(pick.torch, fs::path());
      bool built = !cached.empty() && fs::is_regular_file(cached, ec);
      state = built ? "cached" : "to_build";
      out.text = fmt::format("torch {} ({}): {}", pick.torch.version, pick.why,
                             built ? "built, in " + display_path(cached) : std::string("built on the first run"));
      break;
    }
    case RunnerPick::Kind::none:
      out.text = fmt::format("none: no torch found ({}); give --python PATH", pick.why);
      state = "none";
      break;
  }
  out.json = {{"state", state},
              {"torch_version", pick.torch.version.empty() ? nlohmann::ordered_json(nullptr)
                                                           : nlohmann::ordered_json(pick.torch.version)},
              {"why", pick.why}};
  return out;
}

}  // namespace

Action add_inspect_command(CLI::App& app) {
  struct Opts {
    std::string package;
    std::string model;
    std::string python;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("inspect", "Show the models, device key, metadata and kernel call sites of a package");
  cmd->add_option("package", opts->package, "the .pt2 package")->required();
  cmd->add_option("--model", opts->model, "only this model of the package");
  cmd->add_option("--python", opts->python, "a Python whose torch would run the package, as for run");
  cmd->add_flag("--json", opts->json, "print JSON for scripts instead of a table");
  return [opts]() {
    Package pkg = Package::open(opts->package);
    RunnerLine runner = runner_line(pkg, opts->model, opts->python);
    std::string text;
    if (opts->json) {
      auto j = inspect_json(pkg, opts->model);
      j["runner"] = runner.json;
      text = j.dump(2) + "\n";
    } else {
      text = inspect_table(pkg, opts->model);
      text += fmt::format("\nrunner       {}\n", runner.text);
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    return static_cast<int>(ExitCode::clean);
  };
}

}  // namespace aoti_bisect::cli
