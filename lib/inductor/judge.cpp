// The judge's run: the request written, the helper run with a timeout, its
// result read back.
#include "inductor/judge.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/scratch_dir.hpp"
#include "inductor/build.hpp"
#include "inductor/helper_internal.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

nlohmann::json request_json(const JudgeRequest& r) {
  nlohmann::json libs = nlohmann::json::array();
  for (const auto& lib : r.libraries) {
    libs.push_back(fs::absolute(lib).string());
  }
  nlohmann::json j = {{"exported_program", fs::absolute(r.exported_program).string()},
                      {"model_name", r.model_name},
                      {"inputs", fs::absolute(r.inputs).string()},
                      {"package_outputs", r.package_outputs.empty()
                                              ? nlohmann::json()
                                              : nlohmann::json(fs::absolute(r.package_outputs).string())},
                      {"culprit_nodes", r.culprit_nodes},
                      {"tolerances", r.tolerances},
                      {"device", r.device},
                      {"libraries", libs},
                      {"upstream", nullptr}};
  if (!r.upstream_dir.empty()) {
    j["upstream"] = {{"dir", fs::absolute(r.upstream_dir).string()},
                     {"configs", r.configs},
                     {"symptom", r.symptom},
                     {"max_compiles", r.max_compiles},
                     {"timeout_s", r.timeout_s}};
  }
  return j;
}

}  // namespace

nlohmann::json run_judge(const JudgeRequest& request) {
  require_file(request.exported_program, "exported program");
  require_file(request.inputs, "inputs file");
  fs::path cache = fs::absolute(request.cache_dir.empty() ? default_cache_dir() : request.cache_dir);
  std::error_code ec;
  fs::create_directories(cache, ec);
  fs::path python = inductor_helper::python(request.python);
  ScratchDir work = ScratchDir::make_in(cache / "tmp");
  fs::path helper = inductor_helper::build_script(cache, work);
  std::string text(judge_helper_source());
  fs::path judge = cache / fmt::format("judge-{}.py", sha256_hex(text).substr(0, 16));
  if (!fs::exists(judge, ec)) {
    inductor_helper::publish_file(work, judge, text);
  }
  fs::path req_path = work.path() / "request.json";
  fs::path result_path = work.path() / "result.json";
  inductor_helper::publish_file(work, req_path, request_json(request).dump(2) + "\n");
  SpawnSpec spec = inductor_helper::spec({python.string(), judge.string(), "--helper", helper.string(), "--request",
                                          req_path.string(), "--result", result_path.string()},
                                         work, request.timeout_s);
  if (spec.env.count("TORCHINDUCTOR_CACHE_DIR") == 0) {
    spec.env["TORCHINDUCTOR_CACHE_DIR"] = (cache / "inductor").string();
  }
  spec.env["PYTHONWARNINGS"] = "ignore::FutureWarning,ignore::UserWarning";
  ExitStatus status = run_process(spec);
  if (status.how == ExitStatus::How::timed_out) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("the judge (eager and float64 runs of the exported program) timed out after {:g} s "
                            "(raise --build-timeout)",
                            request.timeout_s));
  }
  if (status.how == ExitStatus::How::interrupted) {
    throw Error(ErrorKind::interrupted, "the judge was interrupted");
  }
  auto result = inductor_helper::result(result_path);
  if (!status.ok() || !result || !result->value("ok", false)) {
    inductor_helper::refuse_if_unsafe(status, result_path);
    throw Error(ErrorKind::cannot_test,
                fmt::format("the judge failed: {}", inductor_helper::failure(status, result_path)));
  }
  return *result;
}

}  // namespace aoti_bisect
