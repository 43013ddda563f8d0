// The instrumented build: the model compiled again from its exported program by the embedded Python
// helper, cached by content, its torch version checked; and the eager reference computed by the helper.

#include "inductor/build.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/scratch_dir.hpp"
#include "common/text.hpp"
#include "inductor/helper_internal.hpp"
#include "package/package.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// Bumped when the meaning of a cache entry changes without the helper's text
// changing (the key also covers the helper).
constexpr const char* k_cache_format = "aoti-bisect-build/2";  // 2: level-1 entries carry a node map

// Prints the torch version the python would import, without importing torch
// (seconds saved): torch/version.py of the package `import torch` would find.
// Exit 3 when there is no torch.
constexpr const char* k_version_script = R"py(import importlib.util, os, re, sys
spec = importlib.util.find_spec('torch')
if spec is None or not spec.origin:
    sys.exit(3)
try:
    text = open(os.path.join(os.path.dirname(spec.origin), 'version.py')).read()
    print(re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", text, re.M).group(1))
except Exception:
    import torch
    print(torch.__version__)
)py";
constexpr double k_version_timeout_s = 120;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

fs::path resolve_python(const std::string& requested) {
  std::string name = requested;
  if (name.empty()) {
    name = env_or_empty("AOTI_BISECT_PYTHON");
  }
  bool chosen = !name.empty();
  std::optional<fs::path> found = find_program(chosen ? name : "python3");
  std::error_code ec;
  if (!found || !fs::exists(*found, ec)) {
    if (chosen) {
      throw Error(ErrorKind::cannot_test,
                  fmt::format("the instrumented build needs python3 with torch, and python '{}' "
                              "does not exist (set AOTI_BISECT_PYTHON or install torch)",
                              name));
    }
    throw Error(ErrorKind::cannot_test,
                "the instrumented build needs python3 with torch (set AOTI_BISECT_PYTHON or "
                "install torch)");
  }
  return *found;
}

// "2.13.0+cpu" -> "2.13.0", "2.13" -> "2.13.0", "2.6.0a0+git1" -> "2.6.0".
std::string release_of(const std::string& version) {
  static const std::regex re(R"(^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?)");
  std::smatch m;
  if (!std::regex_search(version, m, re)) {
    return version;
  }
  auto part = [&](int i) { return m[i].matched ? m[i].str() : std::string("0"); };
  return fmt::format("{}.{}.{}", part(1), part(2), part(3));
}

void rename_or_throw(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) {
    throw Error(ErrorKind::internal,
                fmt::format("cannot move '{}' to '{}': {}", from.string(), to.string(), ec.message()));
  }
}

// Writes inside the work folder, then renames into place: the cache never
// holds half a file, and builders racing on one key each rename whole files.
void publish(const ScratchDir& work, const fs::path& dest, const std::string& content) {
  fs::path tmp = work.path() / (dest.filename().string() + ".new");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out.flush()) {
      throw Error(ErrorKind::internal, fmt::format("cannot write '{}'", tmp.string()));
    }
  }
  rename_or_throw(tmp, dest);
}

std::string query_torch_version(const fs::path& python, const ScratchDir& work) {
  SpawnSpec spec;
  spec.argv = {python.string(), "-c", k_version_script};
  spec.env = current_environment();
  spec.stdout_path = work.path() / "version.stdout";
  spec.stderr_path = work.path() / "version.stderr";
  spec.timeout_s = k_version_timeout_s;
  ExitStatus status = run_process(spec);
  std::string version = last_nonempty_line(status.stdout_tail);
  if (!status.ok() || version.empty()) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("the instrumented build needs torch, and python '{}' cannot import it "
                            "({}; set AOTI_BISECT_PYTHON or install torch)",
                            display_path(python), status.describe()));
  }
  return version;
}

}  // namespace

std::optional<fs::path> python_shared_library(const fs::path& cache_dir, const std::string& requested) {
  fs::path python;
  try {
    python = resolve_python(requested);
  } catch (const Error&) {
    return std::nullopt;
  }
  ScratchDir work = ScratchDir::make_in(cache_dir.empty() ? default_cache_dir() : cache_dir);
  SpawnSpec spec;
  spec.argv = {python.string(), "-c",
               "import os, sysconfig\n"
               "d, n = sysconfig.get_config_var('LIBDIR'), sysconfig.get_config_var('LDLIBRARY') or ''\n"
               "print(os.path.join(d, n) if d and '.so' in n else '')"};
  spec.env = current_environment();
  spec.stdout_path = work.path() / "libpython.stdout";
  spec.timeout_s = k_version_timeout_s;
  ExitStatus status = run_process(spec);
  std::string found = last_nonempty_line(status.stdout_tail);
  std::error_code ec;
  if (!status.ok() || found.empty() || !fs::exists(found, ec)) {
    return std::nullopt;
  }
  return fs::path(found);
}

namespace {

void check_torch_version(const std::string& found, const fs::path& python, const std::string& expected) {
  if (expected.empty() || release_of(found) == release_of(expected)) {
    return;
  }
  throw Error(ErrorKind::cannot_test,
              fmt::format("the instrumented build would use torch {} ({}), the runner's LibTorch "
                          "is {}: the versions must match",
                          found, display_path(python), expected));
}

std::string iso8601_utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The cache entry <key>.json; nullopt when absent or unreadable (a miss).
std::optional<nlohmann::json> read_entry(const fs::path& path) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return std::nullopt;
  }
  return j;
}

fs::path write_helper(const fs::path& cache, const ScratchDir& work) {
  std::string text(build_helper_source());
  fs::path helper = cache / fmt::format("helper-{}.py", sha256_hex(text).substr(0, 16));
  std::error_code ec;
  if (!fs::exists(helper, ec)) {
    publish(work, helper, text);
  }
  return helper;
}

// The node map written beside a package: X.pt2 -> X.nodes.json.
fs::path node_map_path(const fs::path& package) {
  fs::path p = package;
  return p.replace_extension(".nodes.json");
}

// The operator libraries the exported program calls, for the helper to
// load (torch.ops.load_library).
void add_library_args(std::vector<std::string>& argv, const std::vector<fs::path>& libraries) {
  for (const auto& lib : libraries) {
    argv.insert(argv.end(), {"--load-library", fs::absolute(lib).string()});
  }
}

std::vector<std::string> helper_argv(const fs::path& python, const fs::path& helper, const BuildRequest& request,
                                     const fs::path& work, const fs::path& out) {
  std::vector<std::string> argv = {python.string(),
                                   helper.string(),
                                   "--exported-program",
                                   fs::absolute(request.exported_program).string(),
                                   "--model-name",
                                   request.model_name,
                                   "--configs",
                                   (work / "configs.json").string(),
                                   "--level",
                                   std::to_string(request.printer_level),
                                   "--out",
                                   out.string(),
                                   "--result",
                                   (work / "result.json").string()};
  if (!request.filtered_kernels.empty()) {
    argv.insert(argv.end(), {"--filter", join(request.filtered_kernels, ",")});
  }
  if (request.no_grad) {
    argv.push_back("--no-grad");
  }
  if (request.printer_level == 1) {
    argv.insert(argv.end(), {"--node-map", node_map_path(out).string()});
  }
  add_library_args(argv, request.libraries);
  return argv;
}

// Why the helper failed, in one line: its result's error, else the last line
// it wrote to stderr, else how it ended.
std::string failure_line(const ExitStatus& status, const fs::path& result_path) {
  if (auto result = read_entry(result_path)) {
    const auto& err = (*result)["error"];
    if (err.is_string() && !err.get<std::string>().empty()) {
      return err.get<std::string>();
    }
  }
  if (status.how == ExitStatus::How::spawn_failed) {
    return status.spawn_error;
  }
  std::string line = last_nonempty_line(status.stderr_tail);
  return line.empty() ? status.describe() : line;
}

// The helper refused the program as unsafe: that, not a failed build.
void throw_if_refused(const ExitStatus& status, const fs::path& result_path) {
  if (auto result = read_entry(result_path); result && (*result)["error_kind"] == "unsafe") {
    throw ProgramRefused(failure_line(status, result_path));
  }
}

// The helper runs in the work folder, its streams in files there.
SpawnSpec helper_spec(std::vector<std::string> argv, const ScratchDir& work, double timeout_s) {
  SpawnSpec spec;
  spec.argv = std::move(argv);
  spec.env = current_environment();
  spec.cwd = work.path();
  spec.stdout_path = work.path() / "helper.stdout";
  spec.stderr_path = work.path() / "helper.stderr";
  spec.timeout_s = timeout_s;
  spec.tail_bytes = 64 * 1024;
  return spec;
}

struct Compiled {
  double compile_seconds = 0;
};

// Runs the helper into the work folder and moves its package to `dest`.
Compiled run_helper(const BuildRequest& request, const fs::path& python, const fs::path& cache, const ScratchDir& work,
                    const fs::path& dest) {
  fs::path helper = write_helper(cache, work);
  publish(work, work.path() / "configs.json", request.inductor_configs.dump(2) + "\n");
  fs::path out = work.path() / dest.filename();

  SpawnSpec spec = helper_spec(helper_argv(python, helper, request, work.path(), out), work, request.timeout_s);
  // Inductor's compile cache stays beside ours (not in /tmp) unless the user
  // chose a place for it.
  if (spec.env.count("TORCHINDUCTOR_CACHE_DIR") == 0) {
    spec.env["TORCHINDUCTOR_CACHE_DIR"] = (cache / "inductor").string();
  }
  ExitStatus status = run_process(spec);

  if (status.how == ExitStatus::How::timed_out) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("instrumented build timed out after {:g} s (raise --build-timeout)", request.timeout_s));
  }
  if (status.how == ExitStatus::How::interrupted) {
    throw Error(ErrorKind::interrupted, "instrumented build interrupted");
  }
  fs::path result_path = work.path() / "result.json";
  if (!status.ok()) {
    throw_if_refused(status, result_path);
    throw Error(ErrorKind::cannot_test,
                fmt::format("instrumented build failed: {}", failure_line(status, result_path)));
  }
  std::error_code ec;
  if (!fs::is_regular_file(out, ec)) {
    throw Error(ErrorKind::cannot_test, "instrumented build failed: the helper exited 0 but wrote no package");
  }
  Compiled compiled;
  if (auto result = read_entry(result_path)) {
    compiled.compile_seconds = result->value("seconds", 0.0);
  }
  if (fs::is_regular_file(node_map_path(out), ec)) {
    rename_or_throw(node_map_path(out), node_map_path(dest));
  }
  rename_or_throw(out, dest);
  return compiled;
}

void validate(const BuildRequest& request) {
  if (request.printer_level < 1 || request.printer_level > 3) {
    throw Error(ErrorKind::usage, fmt::format("printer level must be 1, 2 or 3, got {}", request.printer_level));
  }
  if (!request.inductor_configs.is_object()) {
    throw Error(ErrorKind::usage, "inductor configs must map keys to values");
  }
  for (const auto& [key, value] : request.inductor_configs.items()) {
    if (value.is_structured()) {
      throw Error(ErrorKind::usage, fmt::format("inductor config '{}' must be a scalar, got {}", key, value.dump()));
    }
  }
  require_file(request.exported_program, "exported program");
  // A compiled package given where its exported program belongs: say so
  // before Python fails to deserialize it.
  std::optional<Package> pkg;
  try {
    pkg = Package::open(request.exported_program);
  } catch (const Error&) {
    return;  // not an AOTI package: a torch.export.save file, as expected
  }
  if (pkg->exported_programs().empty()) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("'{}' is an AOTInductor package without an exported program inside; give the model's "
                            "exported program (torch.export.save)",
                            display_path(request.exported_program)));
  }
}

}  // namespace

namespace inductor_helper {
fs::path python(const std::string& requested) { return resolve_python(requested); }
fs::path build_script(const fs::path& cache, const ScratchDir& work) { return write_helper(cache, work); }
void publish_file(const ScratchDir& work, const fs::path& dest, const std::string& content) {
  publish(work, dest, content);
}
SpawnSpec spec(std::vector<std::string> argv, const ScratchDir& work, double timeout_s) {
  return helper_spec(std::move(argv), work, timeout_s);
}
std::string failure(const ExitStatus& status, const fs::path& result_path) {
  return failure_line(status, result_path);
}
std::optional<nlohmann::json> result(const fs::path& path) { return read_entry(path); }
void refuse_if_unsafe(const ExitStatus& status, const fs::path& result_path) {
  throw_if_refused(status, result_path);
}
std::string torch_version(const fs::path& python, const ScratchDir& work) { return query_torch_version(python, work); }
}  // namespace inductor_helper

fs::path default_cache_dir() {
  std::string xdg = env_or_empty("XDG_CACHE_HOME");
  if (!xdg.empty() && fs::path(xdg).is_absolute()) {
    return fs::path(xdg) / "aoti-bisect" / "builds";
  }
  std::string home = env_or_empty("HOME");
  if (!home.empty()) {
    return fs::path(home) / ".cache" / "aoti-bisect" / "builds";
  }
  return fs::temp_directory_path() / "aoti-bisect-builds";
}

std::string build_cache_key(const BuildRequest& request, const std::string& torch_version) {
  // One JSON document, keys sorted by nlohmann's object map: the configs'
  // order never matters, and no field can run into the next.
  nlohmann::json doc = {
      {"format", k_cache_format},
      {"exported_program_sha256", sha256_file(request.exported_program)},
      {"model_name", request.model_name},
      {"inductor_configs", request.inductor_configs},
      {"printer_level", request.printer_level},
      {"filtered_kernels", request.filtered_kernels},
      {"no_grad", request.no_grad},
      {"helper_sha256", sha256_hex(std::string(build_helper_source()))},
      {"torch_version", torch_version},
  };
  return sha256_hex(doc.dump());
}

BuildResult build_instrumented(const BuildRequest& request) {
  auto start = Clock::now();
  validate(request);
  fs::path cache = fs::absolute(request.cache_dir.empty() ? default_cache_dir() : request.cache_dir);
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("cannot create the build cache '{}': {}", display_path(cache), ec.message()));
  }
  fs::path python = resolve_python(request.python);
  ScratchDir work = ScratchDir::make_in(cache / "tmp");

  BuildResult result;
  result.torch_version = query_torch_version(python, work);
  check_torch_version(result.torch_version, python, request.expected_torch_version);
  result.key = build_cache_key(request, result.torch_version);
  result.package = cache / (result.key + ".pt2");
  fs::path entry_path = cache / (result.key + ".json");

  auto entry = read_entry(entry_path);
  if (entry && fs::is_regular_file(result.package, ec)) {
    result.cache_hit = true;
    result.compile_seconds = entry->value("compile_seconds", 0.0);
    result.torch_version = entry->value("torch_version", result.torch_version);
    result.seconds = seconds_since(start);
    if (fs::is_regular_file(node_map_path(result.package), ec)) {
      result.node_map = node_map_path(result.package);
    }
    return result;
  }

  Compiled compiled = run_helper(request, python, cache, work, result.package);
  nlohmann::json record = {
      {"key", result.key},
      {"torch_version", result.torch_version},
      {"compile_seconds", compiled.compile_seconds},
      {"created", iso8601_utc_now()},
      {"model_name", request.model_name},
      {"printer_level", request.printer_level},
      {"exported_program", fs::absolute(request.exported_program).string()},
  };
  // Written last: an entry counts as present only once its record is there.
  publish(work, entry_path, record.dump(2) + "\n");
  result.compile_seconds = compiled.compile_seconds;
  if (fs::is_regular_file(node_map_path(result.package), ec)) {
    result.node_map = node_map_path(result.package);
  }
  result.seconds = seconds_since(start);
  return result;
}

EagerResult compute_eager_reference(const EagerRequest& request) {
  auto start = Clock::now();
  require_file(request.exported_program, "exported program");
  require_file(request.inputs, "inputs file");
  fs::path cache = fs::absolute(request.cache_dir.empty() ? default_cache_dir() : request.cache_dir);
  std::error_code ec;
  fs::create_directories(cache, ec);
  fs::path python = resolve_python(request.python);
  ScratchDir work = ScratchDir::make_in(cache / "tmp");
  EagerResult result;
  result.torch_version = query_torch_version(python, work);
  fs::path helper = write_helper(cache, work);
  fs::path out = work.path() / "eager-outputs.pt";
  std::vector<std::string> argv = {python.string(),      helper.string(),
                                   "--exported-program", fs::absolute(request.exported_program).string(),
                                   "--model-name",       request.model_name,
                                   "--eager-inputs",     fs::absolute(request.inputs).string(),
                                   "--result",           (work.path() / "result.json").string()};
  std::vector<std::pair<fs::path, fs::path>> products;  // (written by the helper, where it goes)
  if (!request.device.empty()) {
    argv.insert(argv.end(), {"--eager-device", request.device});
  }
  if (!request.out.empty()) {
    argv.insert(argv.end(), {"--eager-out", out.string()});
    products.emplace_back(out, request.out);
  }
  if (!request.node_map.empty()) {
    fs::path values = work.path() / "node-values.pt";
    fs::path info = work.path() / "node-info.json";
    argv.insert(argv.end(), {"--node-map", fs::absolute(request.node_map).string(), "--node-values", values.string(),
                             "--node-info", info.string()});
    products.emplace_back(values, request.node_values_out);
    products.emplace_back(info, request.node_info_out);
  }
  add_library_args(argv, request.libraries);
  ExitStatus status = run_process(helper_spec(argv, work, request.timeout_s));
  if (status.how == ExitStatus::How::timed_out) {
    throw Error(ErrorKind::cannot_test, fmt::format("the eager run timed out after {:g} s", request.timeout_s));
  }
  if (status.how == ExitStatus::How::interrupted) {
    throw Error(ErrorKind::interrupted, "the eager run of the exported program was interrupted");
  }
  bool all_written =
      std::all_of(products.begin(), products.end(), [&](const auto& p) { return fs::is_regular_file(p.first, ec); });
  if (!status.ok() || !all_written) {
    throw_if_refused(status, work.path() / "result.json");
    std::string message = fmt::format("the eager run of the exported program failed: {}",
                                      failure_line(status, work.path() / "result.json"));
    if (auto result = read_entry(work.path() / "result.json"); result && (*result)["error_kind"] == "eager") {
      throw EagerRunFailed(message);
    }
    throw Error(ErrorKind::cannot_test, message);
  }
  for (const auto& [from, to] : products) {
    fs::create_directories(fs::absolute(to).parent_path(), ec);
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      throw Error(ErrorKind::internal, fmt::format("cannot write '{}': {}", to.string(), ec.message()));
    }
  }
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace aoti_bisect
