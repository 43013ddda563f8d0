#pragma once
// What the phases of one job share: the resolved settings, the recorder (the
// only writer of the report), the runs, and what the job learnt before the
// phase began. Phases return values; they never read raw options.

#include <filesystem>
#include <string>

#include "harness/recorder.hpp"
#include "harness/runs.hpp"
#include "harness/settings.hpp"

namespace aoti_bisect {

struct JobContext {
  const Settings& settings;
  Recorder& recorder;
  Runs& runs;
  std::string device_key;
  std::filesystem::path work_dir;  // OUT/.work-<pid>, removed when the job ends
};

}  // namespace aoti_bisect
