// Rebuilding a model library from its own sources: wrapper and kernel compiled with the package's
// recorded commands, weights relinked, each object cached by content; a package copy with the new library.

#include "search/library_rebuild.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "archive/elf.hpp"
#include "codegen/rewrite.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "inductor/build.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> resolved(std::vector<std::string> argv) {
  if (auto p = find_program(argv.at(0))) {
    argv[0] = p->string();
  }
  return argv;
}

std::string tail_line(const fs::path& log) {
  std::error_code ec;
  if (!fs::is_regular_file(log, ec)) {
    return "";
  }
  std::string text = read_file(log, "compiler output");
  size_t e = text.find("error");
  std::string from = e == std::string::npos ? text : text.substr(text.rfind('\n', e) + 1);
  return std::string(trim(from.substr(0, from.find('\n'))));
}

struct Job {
  std::string name;
  std::vector<std::string> argv;
};

// Runs the commands at once in `dir`; throws Error(cannot_test) naming the
// first that failed.
void run_all(const std::vector<Job>& jobs, const fs::path& dir, double timeout_s) {
  ProcessSet set;
  std::map<int, std::string> names;
  for (const auto& job : jobs) {
    SpawnSpec spec;
    spec.argv = resolved(job.argv);
    spec.env = current_environment();
    spec.cwd = dir;
    spec.stderr_path = dir / (job.name + ".log");
    spec.stdout_path = dir / (job.name + ".out");
    spec.timeout_s = timeout_s;
    names[set.start(spec)] = job.name;
  }
  std::string failed;
  while (set.running() > 0) {
    auto [token, st] = set.wait_any();
    if (!st.ok() && failed.empty()) {
      failed = fmt::format("{} ({}): {}", names[token], st.describe(), tail_line(dir / (names[token] + ".log")));
    }
  }
  if (!failed.empty()) {
    throw Error(ErrorKind::cannot_test, "the rewritten package did not build: " + failed);
  }
}

// Moves `from` to `to` unless another process got there first.
void publish(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  fs::rename(from, to, ec);
  if (ec && !fs::exists(to)) {
    throw Error(ErrorKind::internal, "the rebuilt library cannot be stored in the cache: " + ec.message());
  }
}

}  // namespace

namespace {

std::string content_key(const std::string& text) {
  return sha256_hex(text).substr(0, 24);
}

// Every object the link command names must be one made here: the wrapper,
// the kernel source (when there is one) and the weights. A CUDA package built
// with aot_inductor.embed_kernel_binary links its cubins from an object
// (cubins_combined.o, or <kernel>.cubin.o) that the package does not hold,
// like precompiled CUDA kernels (CUTLASS): such a library cannot be relinked.
void check_link_objects(const std::vector<std::string>& link_cmd, bool has_kernel) {
  for (const auto& a : link_cmd) {
    if (!a.ends_with(".o") || a.ends_with(".wrapper.o") || a.ends_with(".weights.o")) {
      continue;
    }
    std::string name = fs::path(a).filename().string();
    if (a.ends_with(".kernel.o")) {
      if (!has_kernel) {
        throw Error(ErrorKind::cannot_test, "the package's link command links a kernel object (" + name +
                                                ") but the package holds no kernel source to compile it from");
      }
      continue;
    }
    bool cubins = name == "cubins_combined.o" || name.ends_with(".cubin.o");
    throw Error(ErrorKind::cannot_test,
                "the package's link command links " + name + ", an object the package does not hold" +
                    (cubins ? " (its Triton kernels embedded with aot_inductor.embed_kernel_binary)"
                            : " (precompiled device kernels)") +
                    ": its library cannot be relinked");
  }
}

}  // namespace

RebuildPlan plan_rebuild(const LibrarySources& src) {
  RebuildPlan plan;
  plan.src = src;
  auto wrapper_cmd = recorded_command(src.recorded_wrapper, "Compile cmd");
  auto link_cmd = recorded_command(src.recorded_wrapper, "Link cmd");
  const bool has_kernel = !src.kernel.empty();
  auto kernel_cmd = has_kernel ? recorded_command(src.kernel, "Compile cmd") : std::nullopt;
  if (!wrapper_cmd || !link_cmd || (has_kernel && !kernel_cmd)) {
    throw Error(ErrorKind::cannot_test, "the package's sources do not record their compile and link commands");
  }
  check_link_objects(*link_cmd, has_kernel);
  ElfFacts elf = read_elf_facts(src.library);
  auto start = elf.blobs.find("_binary_constants_bin_start");
  auto end = elf.blobs.find("_binary_constants_bin_end");
  if (start == elf.blobs.end() || end == elf.blobs.end() || end->second.file_offset < start->second.file_offset) {
    throw Error(ErrorKind::cannot_test, "the package's library holds no weights blob to relink");
  }
  if (src.wrapper_at_O0) {
    for (auto& a : *wrapper_cmd) {
      if (a.size() == 3 && a.rfind("-O", 0) == 0) {
        a = "-O0";
      }
    }
  }
  plan.wrapper_cmd = std::move(*wrapper_cmd);
  plan.link_cmd = std::move(*link_cmd);
  if (has_kernel) {
    plan.kernel_cmd = std::move(*kernel_cmd);
  }
  plan.blob_start = start->second.file_offset;
  plan.blob_end = end->second.file_offset;
  plan.writable = start->second.writable;
  plan.kernel_key = has_kernel ? content_key(src.kernel + "\n" + join(plan.kernel_cmd, " ")) : "none";
  plan.weights_key = content_key(sha256_file(src.library) + (plan.writable ? " w" : " r"));
  return plan;
}

RebuiltLibrary rebuild_library(const LibrarySources& src, const fs::path& cache_dir, double timeout_s) {
  return rebuild_library(plan_rebuild(src), src.wrapper, cache_dir, timeout_s);
}

RebuiltLibrary rebuild_library(const RebuildPlan& plan, const std::string& wrapper, const fs::path& cache_dir,
                               double timeout_s) {
  auto t0 = Clock::now();
  const LibrarySources& src = plan.src;
  const bool has_kernel = !src.kernel.empty();
  fs::path root = fs::absolute(cache_dir.empty() ? default_cache_dir() : cache_dir) / "rewrite";
  std::string wrapper_key = content_key(wrapper + "\n" + join(plan.wrapper_cmd, " "));
  std::string so_name = src.library.filename().string();
  fs::path lib_dir = root / content_key(wrapper_key + plan.kernel_key + plan.weights_key + join(plan.link_cmd, " "));
  RebuiltLibrary out;
  out.library = lib_dir / so_name;
  std::error_code ec;
  if (fs::is_regular_file(out.library, ec)) {
    out.cache_hit = true;
    out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return out;
  }
  fs::path objects = root / "objects";
  fs::path wrapper_o = objects / ("wrapper-" + wrapper_key + ".o");
  fs::path kernel_o = objects / ("kernel-" + plan.kernel_key + ".o");
  fs::path weights_o = objects / ("weights-" + plan.weights_key + ".o");
  fs::path tmp = root / fmt::format("tmp.{}.{}", ::getpid(), wrapper_key);
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  std::vector<Job> jobs;
  if (!fs::is_regular_file(wrapper_o, ec)) {
    write_file_atomic(tmp / "wrapper.cpp", wrapper);
    jobs.push_back({"wrapper", adapt_compile(plan.wrapper_cmd, "wrapper.cpp", "wrapper.o")});
  }
  if (has_kernel && !fs::is_regular_file(kernel_o, ec)) {
    write_file_atomic(tmp / "kernel.cpp", src.kernel);
    jobs.push_back({"kernel", adapt_compile(plan.kernel_cmd, "kernel.cpp", "kernel.o")});
  }
  if (!fs::is_regular_file(weights_o, ec)) {
    std::ifstream in(src.library, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(plan.blob_start));
    std::string blob(plan.blob_end - plan.blob_start, '\0');
    in.read(blob.data(), static_cast<std::streamsize>(blob.size()));
    write_file_atomic(tmp / "constants.bin", blob);
    write_file_atomic(tmp / "weights.S", weights_assembly("constants.bin", plan.writable));
    jobs.push_back({"weights", {plan.wrapper_cmd.front(), "-c", "weights.S", "-o", "weights.o"}});
  }
  try {
    run_all(jobs, tmp, timeout_s);
    for (const auto& job : jobs) {
      publish(tmp / (job.name + ".o"), job.name == "wrapper" ? wrapper_o : job.name == "kernel" ? kernel_o : weights_o);
    }
    std::map<std::string, std::string> linked = {{".wrapper.o", wrapper_o.string()},
                                                 {".weights.o", weights_o.string()}};
    if (has_kernel) {
      linked[".kernel.o"] = kernel_o.string();
    }
    run_all({{"link", adapt_link(plan.link_cmd, linked, so_name)}}, tmp, timeout_s);
    fs::create_directories(lib_dir, ec);
    publish(tmp / so_name, out.library);
    write_file_atomic(lib_dir / "wrapper.cpp", wrapper);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::remove_all(tmp, ec);
  out.compiled = static_cast<int>(jobs.size());
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

fs::path copy_package_with(const fs::path& root, const std::string& model_name, const fs::path& library,
                           const std::string& wrapper_file, const std::string& wrapper_text, const fs::path& dest) {
  std::error_code ec;
  fs::remove_all(dest, ec);
  fs::copy(root, dest, fs::copy_options::recursive | fs::copy_options::create_hard_links, ec);
  if (ec) {
    throw Error(ErrorKind::internal, "the extracted package cannot be copied: " + ec.message());
  }
  fs::path model = dest / "data" / "aotinductor" / model_name;
  fs::path so = model / library.filename();
  fs::path wrapper = model / fs::path(wrapper_file).filename();
  fs::remove(so, ec);
  fs::copy_file(library, so, ec);
  if (ec) {
    throw Error(ErrorKind::internal, "the rebuilt library cannot be copied: " + ec.message());
  }
  fs::remove(wrapper, ec);
  write_file_atomic(wrapper, wrapper_text);
  return dest;
}

}  // namespace aoti_bisect
