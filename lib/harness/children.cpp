// ProcessChildren: each child run as an aoti-bisect-runner process in OUT/runs/ID, through a fork server
// kept per model build or the persistent runner; wait for any, kill all.

#include "harness/children.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/files.hpp"
#include "common/text.hpp"
#include "matrix/matrix.hpp"
#include "protocol/events.hpp"
#include "protocol/runner.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

std::vector<std::string> runner_argv(const ChildSetup& s, const ChildRequest& req, const fs::path& dir) {
  std::vector<std::string> argv = {s.runner.string(),
                                   "--package-dir",
                                   fs::absolute(req.model.dir).string(),
                                   "--model",
                                   s.model,
                                   "--device-key",
                                   s.device_key,
                                   "--events",
                                   fs::absolute(dir / "events.jsonl").string(),
                                   "--outputs",
                                   fs::absolute(dir / "outputs.pt").string()};
  if (req.batches.size() > 1) {
    argv.insert(argv.end(), {"--batch-list", fs::absolute(dir / "batches.txt").string()});
    if (req.keep_going) {
      argv.push_back("--keep-going");
    }
  } else {
    argv.insert(argv.end(), {"--inputs", fs::absolute(req.batches.empty() ? s.inputs : req.batches.front()).string()});
  }
  if (s.contiguous_inputs) {
    argv.push_back("--contiguous-inputs");
  }
  if (!req.samples.empty()) {
    std::vector<std::string> rows, inputs;
    for (int64_t r : req.samples) {
      rows.push_back(std::to_string(r));
    }
    for (int i : req.batch_inputs) {
      inputs.push_back(std::to_string(i));
    }
    argv.insert(argv.end(), {"--samples", join(rows, ","), "--batch-inputs", join(inputs, ","), "--save-inputs",
                             fs::absolute(dir / "inputs.pt").string()});
  }
  if (s.timeout_s > 0) {
    argv.insert(argv.end(), {"--time-limit", fmt::format("{:.17g}", s.timeout_s)});
  }
  for (const auto& lib : s.load_libraries) {
    argv.insert(argv.end(), {"--load-library", lib.string()});
  }
  if (!req.model.facts.empty()) {
    argv.insert(argv.end(), {"--model-facts", fs::absolute(req.model.facts).string()});
  }
  if (!req.model.hooks.empty()) {
    argv.insert(argv.end(), {"--hooks", fs::absolute(req.model.hooks).string()});
  }
  if (!req.exact_reference.empty()) {
    ToleranceTable exact;
    exact.set_all(0.0, 0.0);
    argv.insert(argv.end(),
                {"--reference", fs::absolute(req.exact_reference).string(), "--tolerances", to_json(exact).dump()});
  } else if (!s.reference.empty()) {
    argv.insert(argv.end(),
                {"--reference", fs::absolute(s.reference).string(), "--tolerances", to_json(s.tolerances).dump()});
  }
  if (req.probe_plan) {
    argv.insert(argv.end(), {"--probe-plan", fs::absolute(dir / "probe-plan.json").string()});
    if (!req.node_reference.empty()) {
      argv.insert(argv.end(), {"--node-reference", fs::absolute(req.node_reference).string()});
    }
  }
  // A variant that runs the runner under a tool (matrix.hpp k_run_under_env),
  // or the same variable in the driver's own environment (a reproduce command).
  auto it = req.env.find(k_run_under_env);
  const char* outer = std::getenv(k_run_under_env);
  std::istringstream words(it != req.env.end() ? it->second : outer != nullptr ? outer : "");
  std::vector<std::string> prefix;
  for (std::string w; words >> w;) {
    prefix.push_back(w);
  }
  if (!prefix.empty()) {
    if (auto program = find_program(prefix.front())) {
      prefix.front() = program->string();
    }
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
  }
  return argv;
}

// The persistent runner (docs/runner.md): the path on CUDA, where a fork
// after the device is initialised is not possible. AOTI_BISECT_PERSISTENT=1
// takes it on any device (the CPU tests exercise it so), =0 never.
bool persistent_runs(const std::string& device_key) {
  const char* v = std::getenv("AOTI_BISECT_PERSISTENT");
  if (v != nullptr && std::string(v) == "1") {
    return true;
  }
  if (v != nullptr && std::string(v) == "0") {
    return false;
  }
  return device_key == "cuda";
}

int ProcessChildren::start(const ChildRequest& req) {
  fs::path dir = m_setup.out_dir / "runs" / req.id;
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  if (req.probe_plan) {
    write_file_atomic(dir / "probe-plan.json", to_json(*req.probe_plan).dump(2));
  }
  if (req.batches.size() > 1) {
    std::string list;
    for (const auto& b : req.batches) {
      list += fs::absolute(b).string() + "\n";
    }
    write_file_atomic(dir / "batches.txt", list);
  }
  SpawnSpec spec;
  spec.argv = runner_argv(m_setup, req, dir);
  spec.env = current_environment();
  for (const auto& [k, v] : req.env) {
    spec.env[k] = v;
  }
  spec.cwd = fs::absolute(dir);
  spec.stdout_path = fs::absolute(dir / "stdout.txt");
  spec.stderr_path = fs::absolute(dir / "stderr.txt");
  // The runner keeps the limit on each call; the driver's own stop comes
  // after every call's limit and the start's allowance (a load that hangs).
  size_t calls = std::max<size_t>(1, req.batches.size());
  spec.timeout_s = m_setup.timeout_s > 0 ? m_setup.timeout_s * static_cast<double>(calls) + k_start_allowance_s : 0;
  spec.memory_limit_bytes = m_setup.memory_limit_bytes;
  // One server per package build: it holds that build's model (docs/runner.md).
  // A library rebuilt in the same place (a build refused, then made again)
  // is another build: its own server.
  spec.server_key = fs::absolute(req.model.dir).string() + "\n" + m_setup.model + "\n" +
                    model_library_stamp(req.model.dir, m_setup.model);
  spec.persistent = persistent_runs(m_setup.device_key) && !req.fresh;
  int token = m_set.start(spec);
  m_running[token] = req;
  return token;
}

void ProcessChildren::watch_batches() {
  for (const auto& [token, req] : m_running) {
    if (req.batches.size() < 2 || !m_setup.on_batch) {
      continue;
    }
    std::ifstream in(m_setup.out_dir / "runs" / req.id / "events.jsonl", std::ios::binary);
    std::uintmax_t& done = m_read[token];
    in.seekg(static_cast<std::streamoff>(done));
    std::string line;
    while (std::getline(in, line) && !in.eof()) {  // whole lines only: the last may be half written
      done += line.size() + 1;
      auto e = nlohmann::json::parse(line, nullptr, false);
      if (!e.is_discarded() && event_kind(e) == EventKind::batch) {
        m_setup.on_batch(req.id, e.value("index", 0), e.value("of", 0), e.value("file", ""));
      }
    }
  }
}

std::pair<int, ChildOutput> ProcessChildren::wait_any() {
  auto [token, status] = m_set.wait_any([this] { watch_batches(); });
  m_read.erase(token);
  ChildOutput out;
  out.status = status;
  out.memory_limit_bytes = m_setup.memory_limit_bytes;
  auto it = m_running.find(token);
  if (it == m_running.end()) {
    return {token, std::move(out)};
  }
  fs::path dir = m_setup.out_dir / "runs" / it->second.id;
  finish_events_file(dir / "events.jsonl");  // a killed child's mapping leaves zeros after its lines
  out.events = Events::read(dir / "events.jsonl");
  if (it->second.keep_stdout) {
    std::error_code ec;
    if (fs::exists(dir / "stdout.txt", ec)) {
      out.stdout_text = read_file(dir / "stdout.txt", "the run's output");
    }
  }
  m_running.erase(it);
  return {token, std::move(out)};
}

void ProcessChildren::kill_all() {
  m_set.kill_all();
  m_running.clear();
}

}  // namespace aoti_bisect
