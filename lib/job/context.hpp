#pragma once
// What the phases of a job share: the report being filled, the output
// directory, phase timing, and running one child and recording it.

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "classify/classify.hpp"
#include "common/text.hpp"
#include "protocol/probe_plan.hpp"
#include "config/config.hpp"
#include "job/job.hpp"
#include "process/process.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

double now_s();

// Removes a directory tree when it goes out of scope (extracted packages).
class ScopedDir {
 public:
  explicit ScopedDir(std::filesystem::path p) : m_path(std::move(p)) {}
  ~ScopedDir();
  ScopedDir(const ScopedDir&) = delete;
  ScopedDir& operator=(const ScopedDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

struct ChildResult {
  ExitStatus status;
  Classification cls;
  std::vector<nlohmann::json> events;
  bool finished = false;
};

// One child run of the runner.
struct ChildRequest {
  std::string id;                          // also the folder under OUT/runs/
  std::string variant;
  int repeat = 0;
  std::map<std::string, std::string> env;  // set on top of the driver's environment
  std::filesystem::path package_dir;       // extracted package
  std::optional<ProbePlan> probe_plan;
  std::filesystem::path node_reference;    // per-node eager values for the probes (mismatch search)
};

struct Context {
  const RunOptions& opt;
  Progress& progress;
  Report report;
  std::filesystem::path out_dir;
  std::string model;
  std::string device_key;
  std::filesystem::path reference;  // --reference, or the eager outputs (--against-eager); empty = none
  ToleranceTable tolerances;  // profile, then the user's config, then --atol/--rtol
  double timeout_s = 300;
  double start = now_s();
  double phase_start = now_s();
  std::string phase;
  int runs_done = 0;
  int runs_planned = 0;
  std::map<std::string, std::string> chosen_env;  // the reproducing variant's variables

  void begin_phase(const std::string& name, const std::string& detail);
  void end_phase();
  void save();  // writes the reports atomically

  SpawnSpec child_spec(const ChildRequest& req) const;
  // Classifies a finished child, records it in report.runs and saves.
  ChildResult record(const ChildRequest& req, const ExitStatus& status);
  // Runs one child to the end (interrupt-aware) and records it.
  ChildResult run_child(const ChildRequest& req);
};

}  // namespace aoti_bisect
