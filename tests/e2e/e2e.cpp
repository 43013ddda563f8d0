#include "e2e/e2e.hpp"

#include <fstream>
#include <sstream>

namespace e2e {
namespace fs = std::filesystem;

fs::path example(const std::string& file) { return fs::path(AOTI_BISECT_EXAMPLES) / file; }

nlohmann::json meta_of(const std::string& name) {
  std::ifstream in(example(name + ".json"));
  return nlohmann::json::parse(in);
}

std::map<std::string, std::string> warm_inductor() {
  const char* home = std::getenv("HOME");
  return {{"TORCHINDUCTOR_CACHE_DIR", std::string(home ? home : "/tmp") + "/.cache/aoti-bisect/inductor-tests"}};
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
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
