// Which runner runs a package: the torch wanted (a runner named, --python, the entry Python, the
// package's own, python3 on PATH, the runner beside the driver) and the torch a Python would import.

#include "harness/runner_choice.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "process/process.hpp"

#ifndef AOTI_BISECT_RUNNER_TORCH_DIR
#define AOTI_BISECT_RUNNER_TORCH_DIR ""
#endif

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p : c;
}

// ".../lib/python3.11/site-packages/torch" -> ".../bin/python3" where it exists.
std::string python_beside(const fs::path& torch_dir) {
  fs::path site = torch_dir.parent_path();  // site-packages or dist-packages
  fs::path pyver = site.parent_path();      // python3.11 (or python3)
  fs::path lib = pyver.parent_path();       // lib
  if (pyver.filename().string().rfind("python", 0) != 0 || lib.filename() != "lib") {
    return "";
  }
  for (const char* name : {"python3", "python"}) {
    fs::path py = lib.parent_path() / "bin" / name;
    std::error_code ec;
    if (fs::exists(py, ec)) {
      return py.string();
    }
  }
  return "";
}

}  // namespace

std::variant<TorchInstall, std::string> python_torch(const std::string& python, double timeout_s) {
  std::optional<fs::path> exe = find_program(python);
  std::error_code ec;
  if (!exe || !fs::exists(*exe, ec)) {
    return fmt::format("python '{}' does not exist", python);
  }
  // Where torch is and which version, without importing it (torch's import
  // takes seconds).
  SpawnSpec spec;
  spec.argv = {exe->string(), "-c",
               "import importlib.util as u, importlib.metadata as m, os\n"
               "s = u.find_spec('torch')\n"
               "print(m.version('torch') if s else '')\n"
               "print(os.path.dirname(s.origin) if s and s.origin else '')\n"};
  spec.env = current_environment();
  spec.timeout_s = timeout_s;
  spec.tail_bytes = 4096;
  static std::atomic<int> serial{0};
  spec.stdout_path =
      fs::temp_directory_path() / fmt::format("aoti-bisect-python-torch-{}-{}.txt", ::getpid(), ++serial);
  ExitStatus st = run_process(spec);
  std::error_code rm;
  fs::remove(spec.stdout_path, rm);
  std::vector<std::string> lines;
  for (size_t at = 0; at < st.stdout_tail.size();) {
    size_t nl = st.stdout_tail.find('\n', at);
    lines.push_back(st.stdout_tail.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    at = nl == std::string::npos ? st.stdout_tail.size() : nl + 1;
  }
  if (!st.ok() || lines.size() < 2 || trim(lines[0]).empty() || trim(lines[1]).empty()) {
    return fmt::format("python '{}' has no torch", exe->string());
  }
  TorchInstall t;
  t.torch_dir = canonical_or_same(std::string(trim(lines[1])));
  // The version as the install folder states it (version.py: "2.15.0+cu132"),
  // as buildable_torch reads it for a torch found from the package: one
  // installation, one version string, one runner cache key. The
  // distribution's metadata ("2.15.0") only where the folder says nothing.
  t.version = torch_version_in(t.torch_dir);
  if (t.version.empty()) {
    t.version = std::string(trim(lines[0]));
  }
  t.python = exe->string();
  return t;
}

std::optional<TorchInstall> buildable_torch(const fs::path& torch_dir) {
  std::error_code ec;
  if (torch_dir.empty() || !fs::is_regular_file(torch_dir / "share" / "cmake" / "Torch" / "TorchConfig.cmake", ec) ||
      !fs::is_directory(torch_dir / "lib", ec)) {
    return std::nullopt;
  }
  TorchInstall t;
  t.version = torch_version_in(torch_dir);
  if (t.version.empty()) {
    return std::nullopt;
  }
  t.torch_dir = canonical_or_same(torch_dir);
  t.python = python_beside(t.torch_dir);
  return t;
}

std::optional<TorchInstall> default_runner_torch() {
  return buildable_torch(AOTI_BISECT_RUNNER_TORCH_DIR);
}

bool same_torch(const TorchInstall& a, const TorchInstall& b) {
  if (!a.torch_dir.empty() && canonical_or_same(a.torch_dir) == canonical_or_same(b.torch_dir)) {
    return true;
  }
  return !a.version.empty() && a.version == b.version;
}

RunnerPick pick_runner(const PickInputs& in, const std::function<std::optional<TorchInstall>()>& python3) {
  RunnerPick pick;
  if (in.runner_named) {
    pick.kind = RunnerPick::Kind::named;
    pick.why = "named (--runner or AOTI_BISECT_RUNNER)";
    return pick;
  }
  std::optional<TorchInstall> wanted;
  std::vector<std::string> tried;
  if (!in.entry_python_path.empty() && !in.entry_python) {
    tried.push_back(
        fmt::format("the Python aoti-bisect is installed in ({}) has no torch", display_path(in.entry_python_path)));
  }
  if (in.named_python) {
    wanted = in.named_python;
    pick.why = "the torch of the Python given (--python or AOTI_BISECT_PYTHON)";
  } else if (in.entry_python) {
    wanted = in.entry_python;
    pick.why =
        fmt::format("the torch of the Python aoti-bisect is installed in ({})", display_path(in.entry_python->python));
  } else if (in.package_install) {
    wanted = in.package_install;
    pick.why = "the package's own torch";
  } else if (!in.package.torch_dir.empty() || !in.beside_exists) {
    pick.package_torch_absent = !in.package.torch_dir.empty();
    wanted = python3 ? python3() : std::nullopt;
    pick.why =
        in.package.torch_dir.empty()
            ? std::string("python3's torch (the package names no torch folder)")
            : fmt::format("python3's torch (the package's, {}, is no longer installed there)", in.package.torch_dir);
    if (!wanted) {
      tried.push_back(in.package.torch_dir.empty()
                          ? std::string("the package names no torch folder")
                          : fmt::format("the package's torch folder {} holds no torch now", in.package.torch_dir));
      tried.push_back("python3 on PATH has no torch");
    }
  }
  if (!wanted) {
    if (!in.beside_exists) {
      pick.kind = RunnerPick::Kind::none;
      pick.why = join(tried, "; ");
      return pick;
    }
    pick.kind = RunnerPick::Kind::beside;
    if (in.beside) {
      pick.torch = *in.beside;
    }
    if (pick.why.empty()) {
      pick.why = "the package names no torch";
    }
    return pick;
  }
  pick.torch = *wanted;
  pick.kind = in.beside && same_torch(*in.beside, *wanted) ? RunnerPick::Kind::beside : RunnerPick::Kind::per_torch;
  return pick;
}

PickInputs pick_inputs(const std::string& wrapper_source, const std::string& compile_flags_json,
                       const std::string& python, const std::string& option, bool runner_named) {
  PickInputs p;
  const char* env_runner = std::getenv("AOTI_BISECT_RUNNER");
  p.runner_named = runner_named || (env_runner != nullptr && *env_runner != '\0');
  if (p.runner_named) {
    return p;
  }
  const char* env_python = std::getenv("AOTI_BISECT_PYTHON");
  std::string py = !python.empty() ? python : env_python != nullptr ? env_python : "";
  if (!py.empty()) {
    auto t = python_torch(py);
    if (auto* why = std::get_if<std::string>(&t)) {
      throw Error(ErrorKind::usage,
                  fmt::format("{} ({}): its torch runs the package; name a Python that has torch installed", *why,
                              python.empty() ? "AOTI_BISECT_PYTHON" : option));
    }
    p.named_python = std::get<TorchInstall>(t);
  }
  // The pip install's console script names the Python it runs under: a
  // venv's, whose torch is the user's.
  const char* entry = std::getenv("AOTI_BISECT_ENTRY_PYTHON");
  if (!p.named_python && entry != nullptr && *entry != '\0') {
    p.entry_python_path = entry;
    auto t = python_torch(entry);
    if (auto* found = std::get_if<TorchInstall>(&t)) {
      p.entry_python = *found;
    }
  }
  p.package = package_torch(wrapper_source, compile_flags_json, fs::path());
  p.package_install = buildable_torch(p.package.torch_dir);
  p.beside = default_runner_torch();
  std::error_code ec;
  p.beside_exists = fs::is_regular_file(self_executable().parent_path() / "aoti-bisect-runner", ec);
  return p;
}

std::optional<TorchInstall> python3_torch() {
  auto t = python_torch("python3");
  return std::holds_alternative<TorchInstall>(t) ? std::optional<TorchInstall>(std::get<TorchInstall>(t))
                                                 : std::nullopt;
}

}  // namespace aoti_bisect
