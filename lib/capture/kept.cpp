// Kept calls made into inputs files, and checked alone (kept.hpp).
#include "capture/kept.hpp"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "harness/runner_build.hpp"
#include "harness/runner_choice.hpp"
#include "inputs/call_spec.hpp"
#include "package/package.hpp"
#include "process/process.hpp"
#include "protocol/runner.hpp"

namespace aoti_bisect::capture_detail {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::string kept_file_text(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) ? read_file(path, "capture file") : std::string();
}

}  // namespace

OpenedPackage read_package(const fs::path& path) {
  OpenedPackage o;
  o.path = path;
  try {
    Package pkg = Package::open(path);
    for (const auto& m : pkg.models()) {
      if (!m.shared_object.empty()) {
        o.so_to_model[fs::path(m.shared_object).filename().string()] = m.name;
      }
      if (!m.wrapper_cpp.empty()) {
        o.in_specs[m.name] = call_spec_text(pkg.read_entry(m.wrapper_cpp)).in;
      }
    }
  } catch (const Error& e) {
    o.error = e.what();
  }
  return o;
}

fs::path runner_for(const fs::path& package, const std::string& model) {
  Package pkg = Package::open(package);
  const ModelFiles& m = pkg.select_model(pkg.models().size() == 1 ? "" : model);
  std::string wrapper = m.wrapper_cpp.empty() ? "" : pkg.read_entry(m.wrapper_cpp);
  std::string flags = m.compile_flags_json.empty() ? "" : pkg.read_entry(m.compile_flags_json);
  PickInputs p = pick_inputs(wrapper, flags, "", "--python", false);
  const char* named = std::getenv("AOTI_BISECT_RUNNER");
  if (p.runner_named && named != nullptr && *named != '\0') {
    return named;
  }
  RunnerPick pick = pick_runner(p, python3_torch);
  if (pick.kind == RunnerPick::Kind::none) {
    throw Error(ErrorKind::cannot_test, "no torch found to write the kept inputs with (" + pick.why +
                                            "); set AOTI_BISECT_PYTHON to a Python with torch");
  }
  if (pick.kind != RunnerPick::Kind::per_torch) {
    return self_executable().parent_path() / "aoti-bisect-runner";
  }
  return build_runner(pick.torch, "", 1800, [](const std::string& line) {
           std::fprintf(stderr, "aoti-bisect: %s\n", redact_paths(line).c_str());
         }).runner;
}

// The kept calls' raw inputs made into inputs files by the runner.
std::map<long, fs::path> convert_kept(const fs::path& runner, const fs::path& raw_dir, const fs::path& dest,
                                      const std::string& in_spec, const std::vector<CapturedCall>& calls, long up_to,
                                      std::vector<std::string>& notes) {
  std::map<long, fs::path> made;
  Json calls_json = Json::array();
  for (const auto& c : calls) {
    if (!c.kept || c.index > up_to || !fs::exists(raw_dir / fmt::format("call-{}.json", c.index))) {
      continue;
    }
    fs::path out = fs::absolute(dest / fmt::format("call-{}.pt", c.index));
    calls_json.push_back(Json{{"meta", fs::absolute(raw_dir / fmt::format("call-{}.json", c.index)).string()},
                              {"bin", fs::absolute(raw_dir / fmt::format("call-{}.bin", c.index)).string()},
                              {"out", out.string()}});
  }
  if (calls_json.empty()) {
    return made;
  }
  fs::create_directories(dest);
  fs::path request = raw_dir / "kept-request.json";
  fs::path result = raw_dir / "kept-result.json";
  write_file_atomic(request,
                    Json{{"in_spec", in_spec}, {"calls", calls_json}, {"result", fs::absolute(result).string()}}.dump());
  SpawnSpec spec;
  spec.argv = {runner.string(), std::string(k_kept_inputs_flag), fs::absolute(request).string()};
  spec.env = current_environment();
  spec.stderr_path = raw_dir / "kept.stderr";
  spec.timeout_s = 600;
  ExitStatus st = run_process(spec);
  Json r = Json::parse(kept_file_text(result), nullptr, false);
  if (!st.ok() || !r.is_array()) {
    notes.push_back("the kept inputs could not be saved as inputs files: " + last_nonempty_line(st.stderr_tail));
    return made;
  }
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i]["error"].is_string()) {
      notes.push_back("a kept call's inputs could not be saved: " + r[i]["error"].get<std::string>());
      continue;
    }
    fs::path out = r[i]["out"].get<std::string>();
    long index = std::atol(out.stem().string().substr(5).c_str());
    made[index] = out;
  }
  return made;
}

// Whether `aoti-bisect run PKG --inputs FILE` in a fresh process fails as the call did.
std::optional<bool> fails_alone(const fs::path& package, const fs::path& inputs, const fs::path& out) {
  SpawnSpec spec;
  spec.argv = {self_executable().string(), "run", fs::absolute(package).string(), "--inputs",
               fs::absolute(inputs).string(), "--no-matrix", "--no-bisect", "--no-shrink", "--no-judge",
               "--out", fs::absolute(out).string()};
  spec.env = current_environment();
  spec.timeout_s = 900;
  ExitStatus st = run_process(spec);
  Json report = Json::parse(kept_file_text(out / "report.json"), nullptr, false);
  if (!report.is_object() || !report["verdict"].is_string()) {
    return std::nullopt;
  }
  const std::string verdict = report["verdict"].get<std::string>();
  if (verdict == "could_not_test" || verdict == "internal_error") {
    return std::nullopt;
  }
  return verdict != "clean";
}

std::string shell_word(const std::string& s) {
  return s.find_first_of(" '\"$\\") == std::string::npos ? s : "'" + s + "'";
}

}  // namespace aoti_bisect::capture_detail
