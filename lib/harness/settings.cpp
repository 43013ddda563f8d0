// Resolving a job's settings once: the backend profile, the user's config file, then the command line;
// the runner's path and versions, and the reproduce command.

#include "harness/settings.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "process/process.hpp"
#include "protocol/runner.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

fs::path runner_path(const RunOptions& opt, const fs::path& found = {}) {
  if (!found.empty()) {
    return found;
  }
  if (!opt.runner.empty()) {
    return opt.runner;
  }
  if (const char* env = std::getenv("AOTI_BISECT_RUNNER"); env && *env) {
    return env;
  }
  return self_executable().parent_path() / "aoti-bisect-runner";
}

}  // namespace

UserConfig load_config(const RunOptions& opt) {
  if (opt.jobs && *opt.jobs < 1) {
    throw Error(ErrorKind::usage, "--jobs must be at least 1");
  }
  return opt.config.empty() ? UserConfig{} : load_user_config(opt.config.string());
}

Profile choose_profile(const RunOptions& opt, const std::string& device_key, const std::string& runner_hip) {
  std::string backend = opt.backend;
  if (backend.empty()) {
    backend = device_key == "cuda" && !runner_hip.empty() ? "rocm" : device_key;
  }
  return builtin_profile(backend);
}

Profile choose_profile(const RunOptions& opt, const std::string& device_key, const PhaseFindings& found) {
  const bool ask = opt.backend.empty() && device_key == "cuda";
  return choose_profile(opt, device_key, ask ? runner_hip_version(opt, found.runner) : "");
}

RunnerVersions runner_versions(const RunOptions& opt, const fs::path& runner) {
  RunnerVersions v;
  SpawnSpec spec;
  spec.argv = {runner_path(opt, runner).string(), std::string(k_runner_versions_flag)};
  spec.env = current_environment();
  // In the job's own folder (locked by now), removed at once.
  spec.stdout_path = opt.out_dir / fmt::format(".runner-versions-{}.json", ::getpid());
  spec.timeout_s = 120;  // LibTorch's start-up; no model, no device work
  spec.tail_bytes = 4096;
  ExitStatus st = run_process(spec);
  std::error_code ec;
  fs::remove(spec.stdout_path, ec);
  if (!st.ok()) {
    return v;
  }
  // The last line: LibTorch may print warnings before it.
  std::string out = st.stdout_tail;
  while (!out.empty() && out.back() == '\n') {
    out.pop_back();
  }
  auto j =
      nlohmann::json::parse(out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1), nullptr, false);
  if (!j.is_object()) {
    return v;
  }
  auto text = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  v.ran = true;
  v.torch = text("torch");
  v.hip = text("hip");
  v.torch_dir = text("torch_dir");
  return v;
}

std::string runner_hip_version(const RunOptions& opt, const fs::path& runner) {
  return runner_versions(opt, runner).hip;
}

Settings resolve_settings(const RunOptions& opt, const UserConfig& user, const Profile& profile,
                          const std::vector<std::filesystem::path>& batches, const PhaseFindings& found) {
  Settings s;
  s.package = opt.package;
  s.model = opt.model;
  s.inputs = !batches.empty() ? batches.front() : !found.inputs.empty() ? found.inputs : opt.inputs;
  s.batches = batches.size() > 1
                  ? batches
                  : std::vector<std::filesystem::path>(static_cast<size_t>(std::max(1, opt.calls)), s.inputs);
  s.calls = batches.size() <= 1 && opt.calls > 1;
  s.sample_inputs = found.sample_inputs;
  for (const auto& lib : opt.load_libraries) {
    s.load_libraries.push_back(std::filesystem::absolute(lib));
  }
  s.python_library = found.python_library;
  s.all_batches = opt.all_batches;
  s.reference = opt.reference;
  s.against_eager = opt.against_eager;
  s.eager_device = opt.eager_device;
  s.contiguous_inputs = opt.contiguous_inputs;
  s.out_dir = opt.out_dir;
  s.junit = opt.junit;
  s.command_line = opt.command_line;
  s.runner = runner_path(opt, found.runner);

  s.profile = profile;
  UserConfig planned = user;
  for (const auto& [k, v] : opt.env) {
    planned.env[k] = v;
  }
  s.plan = plan_matrix(profile, planned, opt.repeats);
  s.unavailable_variants = unavailable_variants(profile, planned);
  s.findings = profile.findings;
  s.findings.insert(s.findings.end(), user.findings.begin(), user.findings.end());
  s.variants = static_cast<int>((user.replace_variants ? 0 : profile.variants.size()) + user.variants.size());
  if (opt.no_matrix || opt.bisect_only) {
    s.plan.resize(1);
  }
  s.timeout_s = opt.timeout_s.value_or(user.timeout_s.value_or(profile.timeout_s));
  s.memory_limit_bytes = opt.memory_limit_bytes.value_or(profile.backend == "cpu" ? physical_memory_bytes() : 0);
  s.jobs = opt.jobs.value_or(user.jobs.value_or(1));
  s.tolerances = profile.tolerances;
  s.tolerances.set_all(user.tolerance_atol, user.tolerance_rtol);
  s.tolerances.merge(user.tolerance);
  s.tolerances.set_all(opt.atol, opt.rtol);
  s.tolerance_given = opt.atol.has_value() || opt.rtol.has_value();

  s.bisect = !opt.no_bisect;
  s.shrink = !opt.no_shrink;
  s.check_masked = opt.check_masked;
  s.judge = !opt.no_judge;
  s.replay = !opt.no_replay;
  s.answer_first = !opt.matrix_first;
  s.strategy = opt.strategy;
  s.bisect_repeats = opt.bisect_repeats;
  s.rebuild_per_step = opt.rebuild_per_step || opt.source == ProbeSource::guide;
  s.source = opt.source;
  s.exported_program = opt.exported_program;
  s.inductor_configs = user.inductor_configs;
  for (auto& [k, v] : opt.inductor_configs.items()) {
    s.inductor_configs[k] = v;
  }
  s.cache_dir = opt.cache_dir;
  s.build_timeout_s = opt.build_timeout_s;
  return s;
}

std::string reproduce_command(const Settings& s, const std::map<std::string, std::string>& env,
                              const std::vector<fs::path>& batches) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : env) {
    parts.push_back(k + "=" + shell_quote(v));
  }
  parts.push_back("aoti-bisect run");
  parts.push_back(shell_quote(display_path(s.package)));
  if (!s.model.empty()) {
    parts.push_back("--model " + shell_quote(s.model));
  }
  if (s.sample_inputs) {
    // the package's own sample inputs: no --inputs
  } else if (batches.size() > 1 && s.calls) {
    parts.push_back("--inputs " + shell_quote(display_path(s.inputs)) + fmt::format(" --calls {}", batches.size()));
  } else {
    for (const auto& b : batches.empty() ? std::vector<fs::path>{s.inputs} : batches) {
      parts.push_back("--inputs " + shell_quote(display_path(b)));
    }
  }
  if (s.contiguous_inputs) {
    parts.push_back("--contiguous-inputs");
  }
  for (const auto& lib : s.load_libraries) {
    parts.push_back("--load-library " + shell_quote(display_path(lib)));
  }
  if (!s.reference.empty()) {
    parts.push_back("--reference " + shell_quote(display_path(s.reference)));
  } else if (s.against_eager) {
    parts.push_back("--against-eager");
    if (!s.exported_program.empty()) {
      parts.push_back("--exported-program " + shell_quote(display_path(s.exported_program)));
    }
  }
  parts.push_back("--no-matrix --no-bisect");
  return join(parts, " ");
}

}  // namespace aoti_bisect
