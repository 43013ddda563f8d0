#include <cstdio>

#include "commands.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "inductor/build.hpp"
#include "process/process.hpp"

namespace aoti_bisect::cli {

Action add_build_command(CLI::App& app) {
  struct Opts {
    std::string exported_program, model = "model", cache_dir, torch_version;
    std::vector<std::string> configs;
    int level = 1;
    double timeout = 1800;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "build",
      "Only the instrumented build: compile an exported program with the intermediate-value printer on "
      "(cached); prints the package path");
  cmd->add_option("exported_program", o->exported_program,
                  "torch.export.save file, or a package_pt2 archive holding the exported program")
      ->required();
  cmd->add_option("--model", o->model, "which exported program of an archive")->capture_default_str();
  cmd->add_option("--inductor-config", o->configs, "key=value (repeatable)")->allow_extra_args(false);
  cmd->add_option("--level", o->level, "printer level: 1 save (probes), 2 print, 3 kernel names")
      ->check(CLI::Range(1, 3))
      ->capture_default_str();
  cmd->add_option("--cache-dir", o->cache_dir, "build cache (default ~/.cache/aoti-bisect/builds)");
  cmd->add_option("--build-timeout", o->timeout, "seconds the build may take")->check(CLI::PositiveNumber);
  return [o]() {
    BuildRequest req;
    req.exported_program = o->exported_program;
    req.model_name = o->model;
    for (const auto& kv : o->configs) {
      add_inductor_config(req.inductor_configs, kv);
    }
    req.printer_level = o->level;
    req.cache_dir = o->cache_dir;
    req.timeout_s = o->timeout;
    require_file(req.exported_program, "exported program");
    install_interrupt_handlers();  // Ctrl-C stops the helper's group and removes its work folder: exit 130
    BuildResult r = build_instrumented(req);
    std::printf("%s\n", r.package.c_str());
    std::fprintf(
        stderr, "aoti-bisect: %s (torch %s, key %s)\n",
        r.cache_hit ? "found in the cache" : ("built in " + std::to_string(static_cast<int>(r.seconds)) + " s").c_str(),
        r.torch_version.c_str(), r.key.substr(0, 12).c_str());
    return static_cast<int>(ExitCode::clean);
  };
}

}  // namespace aoti_bisect::cli
