// A package_cpp_only package's library, built once from its own sources and flags.
#include "codegen/sources_only.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/scratch_dir.hpp"
#include "common/text.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// "/x/site-packages/torch/include/torch/csrc/api/include" -> "include/torch/csrc/api/include":
// the part below the torch folder, for a folder of the torch the package was built with.
std::optional<std::string> below_torch_folder(const std::string& dir) {
  for (const char* marker : {"/torch/include", "/torch/lib", "/libtorch/include", "/libtorch/lib"}) {
    size_t at = dir.find(marker);
    if (at != std::string::npos) {
      size_t start = dir.find('/', at + 1) + 1;
      return dir.substr(start);
    }
  }
  return std::nullopt;
}

std::vector<std::string> flag_strings(const nlohmann::json& flags, const char* key) {
  std::vector<std::string> out;
  if (flags.contains(key) && flags[key].is_array()) {
    for (const auto& v : flags[key]) {
      if (v.is_string()) {
        out.push_back(v.get<std::string>());
      }
    }
  }
  return out;
}

// A folder as the build here finds it: the runner's torch for the package's,
// else itself where it exists.
std::optional<std::string> folder_here(const std::string& dir, const fs::path& torch_dir) {
  if (auto rel = below_torch_folder(dir); rel && !torch_dir.empty()) {
    return (torch_dir / *rel).string();
  }
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    return dir;
  }
  return std::nullopt;
}

std::string compiler_first_error(const fs::path& log) {
  std::ifstream in(log);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.find("error:") != std::string::npos || line.find("undefined reference") != std::string::npos) {
      return std::string(trim(line));
    }
    if (first.empty() && !trim(line).empty() && line.find("warning:") == std::string::npos) {
      first = std::string(trim(line));
    }
  }
  return first;
}

void run_build_step(const std::vector<std::string>& argv, const fs::path& log, double timeout_s,
                    const std::string& what) {
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = current_environment();
  spec.stdout_path = log;
  spec.stderr_path = log;
  spec.timeout_s = timeout_s;
  ExitStatus st = run_process(spec);
  if (st.ok()) {
    return;
  }
  if (st.how == ExitStatus::How::interrupted) {
    throw Error(ErrorKind::interrupted, "the package's library build was interrupted");
  }
  std::string why = st.how == ExitStatus::How::exited ? compiler_first_error(log) : st.describe();
  throw Error(ErrorKind::cannot_test,
              fmt::format("the package holds sources only (package_cpp_only) and they do not {} here: {}; build "
                          "the package on this machine with aoti_compile_and_package (without package_cpp_only) or "
                          "fix what the compiler says",
                          what, why.empty() ? st.describe() : why));
}

}  // namespace

std::optional<SourcesOnly> sources_only(const fs::path& model_dir, const ModelFiles& model) {
  if (!model.shared_object.empty() || model.wrapper_cpp.empty() || model.compile_flags_json.empty() ||
      model.linker_flags_json.empty()) {
    return std::nullopt;
  }
  auto here = [&](const std::string& entry) { return model_dir / fs::path(entry).filename(); };
  SourcesOnly s;
  s.wrapper_cpp = here(model.wrapper_cpp);
  s.compile_flags = here(model.compile_flags_json);
  s.linker_flags = here(model.linker_flags_json);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(model_dir, ec)) {
    if (e.path().extension() == ".o") {
      s.objects.push_back(e.path());
    }
  }
  std::sort(s.objects.begin(), s.objects.end());
  s.library = s.wrapper_cpp;
  s.library.replace_extension(".so");
  return s;
}

std::vector<std::string> sources_only_command(const nlohmann::json& flags, const std::vector<std::string>& sources,
                                              const std::string& output, const fs::path& torch_dir,
                                              const std::string& compiler) {
  const bool compile_only = flags.value("compile_only", true);
  std::vector<std::string> argv = {compiler};
  argv.insert(argv.end(), sources.begin(), sources.end());
  for (const auto& d : flag_strings(flags, "definitions")) {
    if (!trim(d).empty()) {
      argv.push_back("-D" + std::string(trim(d)));
    }
  }
  for (const auto& f : flag_strings(flags, "cflags")) {
    if (!trim(f).empty()) {
      argv.push_back("-" + std::string(trim(f)));
    }
  }
  for (const auto& dir : flag_strings(flags, "include_dirs")) {
    if (auto local = folder_here(dir, torch_dir)) {
      argv.push_back("-I" + *local);
    }
  }
  for (const auto& pass : flag_strings(flags, "passthrough_args")) {
    std::istringstream words(pass);
    for (std::string w; words >> w;) {
      argv.push_back(w);
    }
  }
  if (compile_only) {
    argv.insert(argv.end(), {"-c", "-o", output});
    return argv;
  }
  argv.insert(argv.end(), {"-o", output});
  for (const auto& f : flag_strings(flags, "ldflags")) {
    if (!trim(f).empty()) {
      argv.push_back("-" + std::string(trim(f)));
    }
  }
  for (const auto& lib : flag_strings(flags, "libraries")) {
    argv.push_back("-l" + lib);
  }
  for (const auto& dir : flag_strings(flags, "libraries_dirs")) {
    if (auto local = folder_here(dir, torch_dir)) {
      argv.push_back("-L" + *local);
    }
  }
  if (!torch_dir.empty() && std::find(argv.begin(), argv.end(), "-L" + (torch_dir / "lib").string()) == argv.end()) {
    argv.push_back("-L" + (torch_dir / "lib").string());
  }
  // Weights objects carry no .note.GNU-stack: without this the library asks
  // for an executable stack, which newer glibc refuses to dlopen. It changes
  // a program header, not the code.
  argv.push_back("-Wl,-z,noexecstack");
  return argv;
}

SourcesOnlyBuild build_sources_only(const SourcesOnly& src, const fs::path& torch_dir, const fs::path& cache_dir,
                                    double timeout_s, const std::function<void(const std::string&)>& progress) {
  auto start = std::chrono::steady_clock::now();
  auto compile_flags = nlohmann::json::parse(read_file(src.compile_flags, "compile flags"), nullptr, false);
  auto link_flags = nlohmann::json::parse(read_file(src.linker_flags, "linker flags"), nullptr, false);
  if (!compile_flags.is_object() || !link_flags.is_object()) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("the package holds sources only (package_cpp_only), but its flags file '{}' is not a "
                            "JSON object; build the package again",
                            (compile_flags.is_object() ? src.linker_flags : src.compile_flags).filename().string()));
  }
  const std::string wanted = compile_flags.value("compiler", std::string("g++"));
  std::optional<fs::path> compiler = find_program(wanted);
  if (!compiler) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("the package holds sources only (package_cpp_only), to be compiled with '{}', which is "
                            "not installed here; install it (apt-get install g++) or build the package with its "
                            "library",
                            wanted));
  }
  SourcesOnlyBuild out;
  out.compiler = compiler->string();
  std::string key_text = read_file(src.wrapper_cpp, "package source") + compile_flags.dump() + link_flags.dump() +
                         torch_dir.string() + out.compiler;
  for (const auto& o : src.objects) {
    key_text += sha256_file(o);
  }
  const std::string key = sha256_hex(key_text).substr(0, 24);
  const fs::path cached = fs::absolute(cache_dir) / "sources-only" / key / src.library.filename();
  std::error_code ec;
  if (!fs::exists(cached, ec)) {
    if (progress) {
      progress(fmt::format("compiling the package's sources with its own flags ({})", display_path(out.compiler)));
    }
    ScratchDir work = ScratchDir::make_in(fs::absolute(cache_dir) / "sources-only" / "tmp");
    const fs::path object = work.path() / (src.wrapper_cpp.stem().string() + ".o");
    const fs::path library = work.path() / src.library.filename();
    run_build_step(
        sources_only_command(compile_flags, {src.wrapper_cpp.string()}, object.string(), torch_dir, out.compiler),
        work.path() / "compile.log", timeout_s, "compile");
    std::vector<std::string> inputs;
    for (const auto& o : src.objects) {
      inputs.push_back(o.string());
    }
    inputs.push_back(object.string());
    run_build_step(sources_only_command(link_flags, inputs, library.string(), torch_dir, out.compiler),
                   work.path() / "link.log", timeout_s, "link");
    fs::create_directories(cached.parent_path());
    fs::path tmp = cached;
    tmp += fmt::format(".{}.tmp", ::getpid());
    fs::copy_file(library, tmp, fs::copy_options::overwrite_existing);
    fs::rename(tmp, cached);
  } else {
    out.cache_hit = true;
  }
  fs::remove(src.library, ec);
  fs::create_hard_link(cached, src.library, ec);
  if (ec) {
    fs::copy_file(cached, src.library, fs::copy_options::overwrite_existing);
  }
  out.library = cached;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace aoti_bisect
