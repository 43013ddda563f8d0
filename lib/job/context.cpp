#include "job/context.hpp"

#include <chrono>

#include <fmt/format.h>

#include "protocol/events.hpp"
#include "common/files.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

ScopedDir::~ScopedDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

void Context::begin_phase(const std::string& name, const std::string& detail) {
  end_phase();
  phase = name;
  phase_start = now_s();
  progress.phase(name, detail);
}

void Context::end_phase() {
  if (!phase.empty()) {
    report.phases.push_back({phase, now_s() - phase_start});
    phase.clear();
  }
}

void Context::save() {
  report.total_seconds = now_s() - start;
  write_reports(report, out_dir, opt.junit);
}

namespace {

fs::path runner_path(const RunOptions& opt) {
  if (!opt.runner.empty()) {
    return opt.runner;
  }
  if (const char* env = std::getenv("AOTI_BISECT_RUNNER"); env && *env) {
    return env;
  }
  return self_executable().parent_path() / "aoti-bisect-runner";
}

RunRecord make_record(const ChildRequest& req, const ChildResult& r) {
  RunRecord rec;
  rec.id = req.id;
  rec.variant = req.variant;
  rec.repeat = req.repeat;
  rec.env = req.env;
  rec.probe_plan = req.probe_plan ? req.probe_plan->summary() : "none";
  rec.outcome = r.cls.kind;
  rec.exit = r.status.describe();
  if (r.status.how == ExitStatus::How::exited) {
    rec.exit_code = r.status.exit_code;
  }
  if (r.status.how == ExitStatus::How::signaled || (r.status.how == ExitStatus::How::timed_out && r.status.signal)) {
    rec.signal = r.status.signal;
  }
  rec.core_dumped = r.status.core_dumped;
  rec.seconds = r.status.seconds;
  rec.first_error_line = redact_paths(r.cls.first_line);
  rec.outputs = r.cls.outputs;
  rec.comparison = r.cls.comparison;
  return rec;
}

}  // namespace

SpawnSpec Context::child_spec(const ChildRequest& req) const {
  fs::path dir = out_dir / "runs" / req.id;
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  SpawnSpec spec;
  spec.argv = {runner_path(opt).string(),
               "--package-dir", fs::absolute(req.package_dir).string(),
               "--model", model,
               "--device-key", device_key,
               "--inputs", fs::absolute(opt.inputs).string(),
               "--events", fs::absolute(dir / "events.jsonl").string(),
               "--outputs", fs::absolute(dir / "outputs.pt").string()};
  if (!reference.empty()) {
    spec.argv.insert(spec.argv.end(),
                     {"--reference", fs::absolute(reference).string(), "--tolerances", to_json(tolerances).dump()});
  }
  if (req.probe_plan) {
    fs::path plan = fs::absolute(dir / "probe-plan.json");
    write_file_atomic(plan, to_json(*req.probe_plan).dump(2));
    spec.argv.insert(spec.argv.end(), {"--probe-plan", plan.string()});
    if (!req.node_reference.empty()) {
      spec.argv.insert(spec.argv.end(), {"--node-reference", fs::absolute(req.node_reference).string()});
    }
  }
  spec.env = current_environment();
  for (const auto& [k, v] : req.env) {
    spec.env[k] = v;
  }
  spec.cwd = fs::absolute(dir);
  spec.stdout_path = fs::absolute(dir / "stdout.txt");
  spec.stderr_path = fs::absolute(dir / "stderr.txt");
  spec.timeout_s = timeout_s;
  return spec;
}

ChildResult Context::record(const ChildRequest& req, const ExitStatus& status) {
  fs::path events = out_dir / "runs" / req.id / "events.jsonl";
  ChildResult r;
  r.status = status;
  r.events = read_events(events);
  r.cls = classify_run(status, r.events);
  r.finished = status.how != ExitStatus::How::interrupted;
  if (!r.finished) {
    return r;
  }
  ++runs_done;
  report.runs.push_back(make_record(req, r));
  progress.run_finished(req.id, r.cls.kind, status.describe(), status.seconds, runs_done,
                        std::max(runs_planned, runs_done));
  save();
  return r;
}

ChildResult Context::run_child(const ChildRequest& req) {
  progress.run_started(req.id, runs_done, std::max(runs_planned, runs_done + 1));
  return record(req, run_process(child_spec(req)));
}

}  // namespace aoti_bisect
