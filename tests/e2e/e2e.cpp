#include "e2e/e2e.hpp"

#include <cstdlib>
#include <fstream>
#include <list>
#include <sstream>
#include <stdexcept>

#include <doctest/doctest.h>
#include <zip.h>

namespace e2e {
namespace fs = std::filesystem;

fs::path example(const std::string& file) {
  return fs::path(AOTI_BISECT_EXAMPLES) / file;
}

nlohmann::json meta_of(const std::string& name) {
  std::ifstream in(example(name + ".json"));
  return nlohmann::json::parse(in);
}

std::map<std::string, std::string> warm_inductor() {
  const char* home = std::getenv("HOME");
  return {{"TORCHINDUCTOR_CACHE_DIR", std::string(home ? home : "/tmp") + "/.cache/aoti-bisect/inductor-tests"}};
}

std::string error_line(const Result& r) {
  size_t pos = r.err.rfind("aoti-bisect: error: ");
  return pos == std::string::npos ? "" : r.err.substr(pos, r.err.find('\n', pos) - pos);
}

std::string last_tool_line(const Result& r) {
  size_t pos = r.err.rfind("aoti-bisect: ");
  return pos == std::string::npos ? "" : r.err.substr(pos, r.err.find('\n', pos) - pos);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string python(const std::string& script, const std::vector<std::string>& args) {
  aoti_bisect::SpawnSpec spec;
  const char* chosen = std::getenv("AOTI_BISECT_PYTHON");
  spec.argv = {"/usr/bin/env", chosen != nullptr && *chosen != '\0' ? chosen : "python3", "-c", script};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = aoti_bisect::current_environment();
  spec.stdout_path = fs::absolute("python.stdout.txt");
  spec.timeout_s = 120;
  aoti_bisect::ExitStatus st = aoti_bisect::run_process(spec);
  CHECK_MESSAGE(st.ok(), st.describe() << ": " << st.stderr_tail);
  return st.ok() ? read_text(spec.stdout_path) : "";
}

void shifted_reference(const fs::path& src, const fs::path& dst, int row) {
  python(
      "import sys, torch\n"
      "ref = list(torch.load(sys.argv[1], weights_only=True))\n"
      "ref[0] = ref[0].clone(); ref[0][int(sys.argv[3])] += 1.0\n"
      "torch.save(tuple(ref), sys.argv[2])\n",
      {src.string(), fs::absolute(dst).string(), std::to_string(row)});
}

void rewrite_package(const fs::path& src, const fs::path& dst, const EntryEdit& edit) {
  int err = 0;
  zip_t* in = zip_open(src.c_str(), ZIP_RDONLY, &err);
  if (in == nullptr) {
    throw std::runtime_error("cannot open " + src.string());
  }
  zip_t* out = zip_open(dst.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (out == nullptr) {
    zip_close(in);
    throw std::runtime_error("cannot create " + dst.string());
  }
  std::list<std::string> kept;  // libzip reads the buffers at zip_close
  zip_int64_t n = zip_get_num_entries(in, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_index(in, static_cast<zip_uint64_t>(i), 0, &st);
    std::string bytes(st.size, '\0');
    zip_file_t* f = zip_fopen_index(in, static_cast<zip_uint64_t>(i), 0);
    zip_int64_t got = f ? zip_fread(f, bytes.data(), st.size) : -1;
    if (f) {
      zip_fclose(f);
    }
    if (got != static_cast<zip_int64_t>(st.size)) {
      throw std::runtime_error(std::string("cannot read entry ") + st.name);
    }
    std::string name = st.name;
    if (!edit(name, bytes)) {
      continue;
    }
    kept.push_back(std::move(bytes));
    zip_source_t* source = zip_source_buffer(out, kept.back().data(), kept.back().size(), 0);
    zip_int64_t index = zip_file_add(out, name.c_str(), source, ZIP_FL_OVERWRITE);
    zip_set_file_compression(out, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
  }
  zip_close(in);
  if (zip_close(out) != 0) {
    throw std::runtime_error("cannot write " + dst.string());
  }
}

Result run_tool(std::vector<std::string> args, const std::string& out_dir,
                const std::map<std::string, std::string>& env, double timeout_s) {
  aoti_bisect::SpawnSpec spec;
  spec.argv = {AOTI_BISECT_BIN};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  if (!out_dir.empty()) {
    std::error_code ec;
    fs::remove_all(out_dir, ec);  // tests share one temporary directory
    spec.argv.insert(spec.argv.end(), {"--out", out_dir});
  }
  spec.env = aoti_bisect::current_environment();
  spec.env["AOTI_BISECT_RUNNER"] = AOTI_BISECT_RUNNER_BIN;
  // The culprit's replay (its host built once per torch) is cached across
  // tests, like Inductor's: a test's own --cache-dir would build it again.
  const char* home = std::getenv("HOME");
  spec.env["AOTI_BISECT_REPLAY_CACHE"] = std::string(home ? home : "/tmp") + "/.cache/aoti-bisect/replay-tests";
  for (const auto& [k, v] : env) {
    spec.env[k] = v;
  }
  static int counter = 0;
  std::string tag = std::to_string(++counter);
  spec.stdout_path = fs::absolute("stdout." + tag + ".txt");
  spec.stderr_path = fs::absolute("stderr." + tag + ".txt");
  spec.timeout_s = timeout_s;
  spec.tail_bytes = 1 << 20;
  Result r;
  r.status = aoti_bisect::run_process(spec);
  r.out = r.status.stdout_tail;
  r.err = r.status.stderr_tail;
  if (!out_dir.empty()) {
    std::ifstream in(fs::path(out_dir) / "report.json");
    if (in) {
      r.report = nlohmann::json::parse(in, nullptr, false);
    }
  }
  return r;
}

}  // namespace e2e
