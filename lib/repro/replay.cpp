// The one-kernel replay in OUT/repro/: the `replay` script, its README and the culprit call's driver
// generated and written out, and an earlier repro folder cleared.

#include "repro/replay.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "common/files.hpp"
#include "common/text.hpp"
#include "package/package.hpp"
#include "repro/intermediates.hpp"
#include "repro/replay_internal.hpp"
#include "repro/resources.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

using namespace repro;

namespace {

// The `replay` script: the package's own compile flags for the kernel (a
// portable set where it records none), the files it needs.
std::string replay_script(const Gen& g, const ReplayCall& rc, const std::string& what, const std::string& kernel_source,
                          const std::string& traced_problem) {
  std::vector<std::string> flags = portable_kernel_flags(kernel_source);
  std::string std_flag = "-std=c++17";
  for (const auto& f : flags) {
    if (f.rfind("-std=", 0) == 0) {
      std_flag = f;
    }
  }
  if (flags.empty()) {
    flags = {"-O3", "-DNDEBUG", "-fopenmp", "-march=native", std_flag};
  }
  bool openmp = std::find(flags.begin(), flags.end(), "-fopenmp") != flags.end();
  std::vector<std::string> needed(g.files.begin(), g.files.end());
  if (rc.proxy) {
    needed.push_back("extern_nodes.json");
    needed.insert(needed.end(), rc.libraries.begin(), rc.libraries.end());
  }
  std::vector<std::string> quoted_flags;
  for (const auto& f : flags) {
    quoted_flags.push_back(shell_quote(f));
  }
  std::string script(replay_script_template());
  script = replace_all(script, "@WHAT@", what + " of an AOTInductor package");
  script = replace_all(script, "@WHAT_SHORT@", g.c.kernel);
  script = replace_all(script, "@PROBLEM@", shell_quote(g.problem.empty() ? "" : g.problem));
  script = replace_all(script, "@TRACED_PROBLEM@", shell_quote(traced_problem));
  script = replace_all(script, "@FILES@", join(needed, " "));
  script = replace_all(script, "@SOURCES@", "driver.cpp");
  script = replace_all(script, "@KERNEL@", rc.kernel_cpp.empty() ? "" : "kernel");
  script = replace_all(script, "@KERNEL_FLAGS@", join(quoted_flags, " "));
  script = replace_all(script, "@DRIVER_STD@", std_flag);
  script = replace_all(script, "@LINK_OPENMP@", openmp ? "-fopenmp" : "");
  script = replace_all(script, "@LOADS_PYTHON@", rc.proxy ? "1" : "0");
  return script;
}

std::string replay_readme(const ReplaySpec& spec, const std::string& what, bool traced) {
  return fmt::format(
      "One-kernel replay of {} made by aoti-bisect: the call alone on the tensors saved here (site{}_*.pt).\n"
      "Run ./replay (needs a C++ compiler and python3 with torch; it builds once, into a cache under $TMPDIR or "
      "/tmp).\n"
      "Exit codes: 1 the symptom ({}) reproduces, 0 it does not, 2 the replay cannot run (it prints why).\n"
      "{}",
      what, spec.site, spec.predicate,
      traced ? "./replay --intermediates builds the kernel with every intermediate checked (kernel.traced.cpp) "
               "and also prints the first one that turned NaN or Inf while what it reads did not.\n"
             : "");
}

}  // namespace

ReplayFiles generate_replay(const ReplaySpec& spec, const std::string& wrapper_source, const std::string& kernel_source,
                            const std::string& extern_json) {
  ReplayFiles rf;
  const Culprit& c = *spec.culprit;
  Gen g{spec, c, {}, {}, "", {}, {}, {}, {}};
  for (const auto& e : spec.events.of({EventKind::saved}, spec.site)) {
    std::string file = fs::path(e.value("path", "")).filename().string();
    std::string name = e.value("tensor", "");
    bool is_expected = file.size() > 12 && file.ends_with(".expected.pt");
    (is_expected ? g.expected : g.saved)[name] = file;
  }
  std::string what = fmt::format("call site {} ({})", spec.site, c.kernel);
  rf.note = fmt::format("rebuilds {} alone and checks for the {} symptom", what, spec.predicate);
  ReplayCall rc = locate_call(g, wrapper_source, kernel_source, extern_json);
  prepare_call(g, rc, extern_json);
  const std::string judge = predicate_call(g);
  const std::string drv = driver_source(g, rc, what, judge);
  // The kernel with its intermediates probed, for `replay --intermediates`.
  TracedKernel traced;
  if (!g.problem.empty()) {
    traced.problem = g.problem;
  } else if (rc.kernel_cpp.empty()) {
    traced.problem = fmt::format("{} is {} call: it has no intermediates of its own to check", c.kernel,
                                 rc.proxy ? "a custom operator's" : "an extern");
  } else {
    traced = trace_intermediates(rc.kernel_cpp, c.kernel, std::string(intermediate_probes_header()));
  }
  rf.traced = traced.problem.empty();
  rf.traced_problem = traced.problem;
  rf.problem = g.problem;
  if (!g.problem.empty()) {
    rf.note = "cannot replay: " + g.problem;
  }
  rf.files.push_back({"replay", replay_script(g, rc, what, kernel_source, traced.problem)});
  rf.files.push_back({"README", replay_readme(spec, what, rf.traced)});
  if (g.problem.empty()) {
    rf.files.push_back({"driver.cpp", drv});
    rf.files.push_back({"replay_host.h", std::string(replay_host_header())});
    rf.files.push_back({"replay_host.cpp", std::string(replay_host_source())});
    if (rc.proxy) {
      rf.files.push_back({"extern_nodes.json", extern_json});
    }
    if (!rc.kernel_cpp.empty()) {
      rf.files.push_back({"kernel.cpp", rc.kernel_cpp});
    }
    if (rf.traced) {
      rf.files.push_back({"kernel.traced.cpp", traced.source});
    }
  }
  return rf;
}

ReplayResult write_replay(const ReplaySpec& spec) {
  ReplayResult r;
  try {
    std::string wrapper, kernel;
    bool split_wrapper = false;  // a NAME.wrapper.cpp wins over a combined NAME.cpp
    fs::path dir = spec.model_dir / "data" / "aotinductor" / spec.model_name;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      dir = spec.model_dir;
    }
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      SourceRole role = source_role(it->path().filename().string());
      if (role == SourceRole::wrapper) {
        wrapper = read_file(it->path(), "the wrapper source");
        split_wrapper = true;
      } else if (role == SourceRole::kernel && kernel.empty()) {
        kernel = read_file(it->path(), "the kernel source");
      } else if (role == SourceRole::both && !split_wrapper && wrapper.empty()) {
        wrapper = read_file(it->path(), "the wrapper source");  // older packages: one .cpp holds both
      }
    }
    if (kernel.empty()) {
      kernel = wrapper;
    }
    // The proxy executor's extern nodes: <stem>.wrapper.json (older: <stem>.json).
    std::string extern_json;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string n = e.path().filename().string();
      if (n.ends_with(".json") && !n.ends_with("_metadata.json") && !n.ends_with("_flags.json") &&
          n != "kernel_information.json" && (extern_json.empty() || n.ends_with(".wrapper.json"))) {
        extern_json = read_file(e.path(), "the extern-node JSON");
      }
    }
    ReplayFiles rf = generate_replay(spec, wrapper, kernel, extern_json);
    std::vector<std::string> private_paths = {fs::absolute(spec.repro_dir).string(),
                                              fs::absolute(spec.model_dir).string()};
    if (const char* home = std::getenv("HOME")) {
      private_paths.push_back(home);
    }
    for (const auto& [name, text] : rf.files) {
      if (auto p = private_path_in(text, private_paths); !p.empty()) {
        r.note = fmt::format("not written: the replay's {} would name a private path", name);
        return r;
      }
    }
    for (const auto& [name, text] : rf.files) {
      write_file_atomic(spec.repro_dir / name, text);
    }
    if (rf.problem.empty()) {
      for (const auto& lib : spec.libraries) {
        fs::copy_file(lib, spec.repro_dir / lib.filename(), fs::copy_options::overwrite_existing);
      }
    }
    ::chmod((spec.repro_dir / "replay").c_str(), 0755);
    r.written = true;
    r.runnable = rf.problem.empty();
    r.note = rf.note;
    r.traced = rf.traced;
    r.traced_problem = rf.traced_problem;
  } catch (const std::exception& e) {
    r.note = std::string("not written: ") + e.what();
  }
  return r;
}

void clear_repro_folder(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() != "minimal.inputs.pt") {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

}  // namespace aoti_bisect
