// The runner phase: the runner chosen, the package extracted for it, the runner's fit checked.
#include "job/runner_phase.hpp"

#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "codegen/sources_only.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "harness/runner_build.hpp"
#include "inductor/build.hpp"
#include "job/matrix_phase.hpp"
#include "package/facts.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

Step<> RunnerPhase::choose(const Inspected& in) {
  try {
    choose_runner(in);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::usage) {
      throw;
    }
    return Stop{Verdict::could_not_test, e.what()};
  }
  return Go{};
}

namespace {

// What a shared work folder's extraction was made from: the package (its
// path, size and time) and the model. A later job of the same verify finds
// it there and extracts nothing: the fork server holding that model serves it.
std::string extraction_stamp(const Inspected& in) {
  std::error_code ec;
  const auto size = fs::file_size(in.pkg->path(), ec);
  const auto time = fs::last_write_time(in.pkg->path(), ec).time_since_epoch().count();
  return fmt::format("{}\n{}\n{}\n{}\n", fs::absolute(in.pkg->path()).string(), size, time, in.model->name);
}

}  // namespace

Step<ModelDir> RunnerPhase::extract(Inspected& in, const fs::path& work, const Settings& s) {
  ModelDir model;
  try {
    std::vector<UncheckedCopy> unchecked;
    const fs::path stamp = work / "extracted-from";
    std::error_code ec;
    const std::string made = fs::is_regular_file(stamp, ec) ? read_file(stamp, "extraction stamp") : "";
    const std::string from = extraction_stamp(in);
    if (!m_opt.shared_work.empty() && made.size() > from.size() && made.compare(0, from.size(), from) == 0) {
      model.dir = made.substr(from.size());  // the folder the extraction gave the runner
    } else {
      fs::remove(stamp, ec);
      model.dir = in.pkg->extract(work / "package", in.model, &unchecked);
      if (!m_opt.shared_work.empty()) {
        write_file_atomic(stamp, from + model.dir.string());
      }
    }
    if (!unchecked.empty()) {
      m_copies = std::async(std::launch::async, [path = in.pkg->path(), unchecked = std::move(unchecked)] {
        check_copies(path, unchecked);
      });
    }
    build_from_sources(in, model.dir, s);
    note_package_torch(in, model.dir);
    model.facts = write_model_facts(in.wrapper, work / "package-facts.json");
    m_facts = model.facts;
    check_model_library(model.dir, *in.model, in.wrapper);
  } catch (const Error& e) {
    return stop_of(e);
  }
  return model;
}

Step<> RunnerPhase::settle_copies() {
  if (!m_copies.valid()) {
    return Go{};
  }
  try {
    m_copies.get();
  } catch (const Error& e) {
    return stop_of(e);
  }
  return Go{};
}

void RunnerPhase::choose_runner(const Inspected& in) {
  const char* env_python = std::getenv("AOTI_BISECT_PYTHON");
  const bool python_given = env_python != nullptr && *env_python != '\0';
  std::string wrapper = in.model->wrapper_cpp.empty() ? "" : in.pkg->read_entry(in.model->wrapper_cpp);
  std::string flags = in.model->compile_flags_json.empty() ? "" : in.pkg->read_entry(in.model->compile_flags_json);
  PickInputs p = pick_inputs(wrapper, flags, m_opt.python, "--python", !m_opt.runner.empty());
  if (p.runner_named) {
    m_pick.kind = RunnerPick::Kind::named;
    return;
  }
  if (p.named_python) {
    m_python = p.named_python->python;  // the exported program's build and the eager run use it too
  }
  m_pick = pick_runner(p, python3_torch);
  if (m_pick.kind == RunnerPick::Kind::none) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("no torch found to run the package ({}); give --python PATH: a Python whose torch "
                            "built the package (aoti-bisect builds a runner against it once)",
                            m_pick.why));
  }
  if (m_pick.kind != RunnerPick::Kind::per_torch) {
    return;
  }
  const TorchInstall& torch = m_pick.torch;
  m_rec.begin_phase("build", fmt::format("a runner against torch {} ({})", torch.version, m_pick.why));
  RunnerBuild built = build_runner(torch, m_opt.cache_dir, m_opt.build_timeout_s,
                                   [this](const std::string& line) { m_rec.progress().note(line); });
  m_built = built.runner;
  BuildRecord record;
  record.purpose = "runner";
  record.source = m_pick.why;
  record.fidelity = "the tool's own runner, built against the torch that runs the package";
  record.key = built.key;
  record.cache_hit = built.cache_hit;
  record.seconds = built.seconds;
  record.torch_version = torch.version;
  m_rec.build(record, !built.cache_hit);
  m_rec.progress().note(
      fmt::format("runner: against torch {} ({}), {}", torch.version, m_pick.why,
                  built.cache_hit ? "found in the cache" : fmt::format("built in {:.0f} s", built.seconds)));
  // The exported program's build and the eager run use the same torch.
  if (!python_given && !p.named_python && !torch.python.empty()) {
    m_python = torch.python;
  }
}

// Which torch built the package (its recorded compile command, the
// libraries its library needs), for the report and for the line that says
// why a runner of another torch cannot load it.
void RunnerPhase::note_package_torch(const Inspected& in, const fs::path& package_dir) {
  const fs::path so =
      package_dir / "data" / "aotinductor" / in.model->name / fs::path(in.model->shared_object).filename();
  std::string wrapper = in.model->wrapper_cpp.empty() ? "" : in.pkg->read_entry(in.model->wrapper_cpp);
  std::string flags = in.model->compile_flags_json.empty() ? "" : in.pkg->read_entry(in.model->compile_flags_json);
  m_built_with = package_torch(wrapper, flags, in.model->shared_object.empty() ? fs::path() : so);
  m_rec.package_torch(m_built_with.version, m_built_with.torch_dir.empty() ? "" : display_path(m_built_with.torch_dir),
                      m_built_with.libraries);
}

// A runner that cannot load the package because it was built by another
// torch (its library needs libtorch.so where this LibTorch has none, or
// AOTInductor runtime symbols of another version): one line naming both
// versions and how to get a matching runner.
Stop RunnerPhase::versions_apart(const Stop& stop, const std::map<std::string, std::string>& runner_env) const {
  std::string runner = runner_env.count("torch") ? runner_env.at("torch") : "";
  const std::string& built = m_built_with.version;
  bool load_failed = stop.message.find("cannot be loaded") != std::string::npos;
  // The package's torch folder holds no torch now: only where it was is known.
  const bool absent = m_pick.package_torch_absent && built.empty();
  if (stop.verdict != Verdict::could_not_test || !load_failed || runner.empty() || (built.empty() && !absent) ||
      torch_release(built) == torch_release(runner)) {
    return stop;
  }
  std::string why = stop.message.substr(stop.message.find("cannot be loaded"));
  std::string links =
      m_built_with.libraries.empty() ? "" : fmt::format(", it links {}", join(m_built_with.libraries, ", "));
  std::string package_torch =
      absent ? fmt::format("the torch at {} (no longer installed there{})", display_path(m_built_with.torch_dir), links)
             : fmt::format("torch {}{}", built, links.empty() ? "" : " (" + links.substr(2) + ")");
  std::string what_to_do =
      absent ? "install that torch again, or give --python PATH: a Python whose torch built the package; aoti-bisect "
               "builds a runner against it once"
             : fmt::format("give --python PATH: a Python with torch {}; aoti-bisect builds a runner against it once",
                           built);
  return {Verdict::could_not_test,
          fmt::format("package '{}' was built by {}, and this runner's LibTorch is {}: the model {}; {}",
                      display_path(m_opt.package), package_torch, runner, why, what_to_do)};
}

// A package that ships its model's sources, not its library
// (package_cpp_only): the library built from them with their own flags
// against the runner's LibTorch, once (cached), as LibTorch's loader would
// at every load.
void RunnerPhase::build_from_sources(Inspected& in, const fs::path& package_dir, const Settings& s) {
  const fs::path model_dir = package_dir / "data" / "aotinductor" / in.model->name;
  std::optional<SourcesOnly> src = sources_only(model_dir, *in.model);
  if (!src) {
    return;
  }
  m_rec.begin_phase("build", "the model's library from the package's own sources (package_cpp_only)");
  RunnerVersions runner = runner_versions(m_opt, m_built);
  if (runner.torch_dir.empty()) {
    throw Error(ErrorKind::cannot_test,
                "the package holds sources only (package_cpp_only), and the runner does not say where its LibTorch "
                "is, to compile them against");
  }
  fs::path cache = s.cache_dir.empty() ? default_cache_dir() : s.cache_dir;
  SourcesOnlyBuild built = build_sources_only(*src, runner.torch_dir, cache, s.build_timeout_s,
                                              [this](const std::string& line) { m_rec.progress().note(line); });
  BuildRecord record;
  record.purpose = "model library";
  record.source = "package sources (package_cpp_only)";
  record.fidelity = "the package's own sources and flags, compiled as LibTorch's loader compiles them";
  record.key = built.library.parent_path().filename().string();
  record.cache_hit = built.cache_hit;
  record.seconds = built.seconds;
  record.torch_version = runner.torch;
  m_rec.build(record, !built.cache_hit);
  m_rec.note(
      fmt::format("the package holds sources only (package_cpp_only): its model library was built from them "
                  "with their own flags against torch {} ({}, {})",
                  runner.torch, display_path(built.compiler),
                  built.cache_hit ? "found in the cache" : fmt::format("{:.1f} s", built.seconds)));
  in.built = *in.model;
  in.built.shared_object = in.built.dir + src->library.filename().string();
  in.model = &in.built;
}

// The baseline's word on the runner: one that cannot load the package, with
// both torches named where they differ (versions_apart); one of another
// torch that ran it, a note.
Step<> RunnerPhase::fits(const ChildResult& baseline) {
  const auto& runner_env = baseline.cls.environment;
  if (auto stop = broken_run(baseline)) {
    return versions_apart(*stop, runner_env);
  }
  std::string runner = torch_release(runner_env.count("torch") ? runner_env.at("torch") : "");
  if (!m_built_with.version.empty() && !runner.empty() && m_built_with.version != runner) {
    m_rec.note(
        fmt::format("the package was built by torch {}, the runner's LibTorch is {}: a package runs with the "
                    "LibTorch it was built with (AOTInductor's runtime is compiled into it)",
                    m_built_with.version, runner));
  }
  return Go{};
}

void RunnerPhase::serve(const Settings& s, const std::string& device_key) {
  if (device_key == "cpu") {
    use_forkserver(s.runner);
  } else if (persistent_runs(device_key)) {
    use_forkserver(s.runner, false);  // no run is forked from a process that may have started a device runtime
  }
  const bool extracted_before = !m_opt.shared_work.empty() && fs::exists(m_opt.shared_work / "extracted-from");
  if (device_key == "cpu" && !s.plan.empty() && !extracted_before) {
    std::map<std::string, std::string> env = current_environment();
    for (const auto& [k, v] : s.plan[0].env) {
      env[k] = v;
    }
    forkserver_prestart(env);
  }
}

}  // namespace aoti_bisect
