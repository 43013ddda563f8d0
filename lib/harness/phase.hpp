#pragma once
// What the phases of one job share: the resolved settings, the recorder (the
// only writer of the report), the runs, and what the job learnt before the
// phase began. Phases return values; they never read raw options.

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "harness/recorder.hpp"
#include "harness/runs.hpp"
#include "harness/settings.hpp"

namespace aoti_bisect {

class InstrumentationSource;
using SourceFactory = std::function<std::unique_ptr<InstrumentationSource>()>;

struct JobContext {
  const Settings& settings;
  Recorder& recorder;
  Runs& runs;
  std::string device_key;
  std::filesystem::path work_dir;  // OUT/.work-<pid>, removed when the job ends
  SourceFactory source;            // the first instrumentation source to try; empty: the exported program
};

}  // namespace aoti_bisect
