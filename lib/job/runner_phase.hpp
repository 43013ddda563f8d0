#pragma once
// The runner phase of `aoti-bisect run`: which runner runs the package (the
// one beside the driver, one built once against the package's torch, or
// one named), the model's folder of the package extracted for it (a
// package_cpp_only model's library built from its own sources), which torch
// built the package, and, once the baseline ran, the baseline's word on
// that runner: one of another torch that cannot load the package is said
// with both versions and what to do.

#include <filesystem>
#include <future>
#include <map>
#include <string>

#include "harness/children.hpp"
#include "harness/recorder.hpp"
#include "harness/runner_choice.hpp"
#include "harness/runs.hpp"
#include "harness/settings.hpp"
#include "job/inspect.hpp"
#include "job/step.hpp"
#include "package/package_torch.hpp"

namespace aoti_bisect {

class RunnerPhase {
 public:
  RunnerPhase(const RunOptions& opt, Recorder& rec) : m_opt(opt), m_rec(rec) {}

  // Which runner runs the package (harness/runner_choice.hpp): the one
  // beside the driver when its torch is the one wanted, else one built
  // against that torch once and cached; a runner named outright is used as
  // given. Error(usage) propagates; no torch to run it ends the job.
  Step<> choose(const Inspected& in);
  // The torch folder of the runner picked for the package; empty: the one
  // this tool was built against.
  const std::filesystem::path& torch_dir() const { return m_pick.torch.torch_dir; }

  // The model's folder of the package under `work` with its facts for the
  // runner. The model library and its weights are copied without being
  // read back: their checksums are read beside the baseline run
  // (settle_copies). A package_cpp_only model's library is built here, and
  // `in.model` then names it.
  Step<ModelDir> extract(Inspected& in, const std::filesystem::path& work, const Settings& s);
  // Whether the copies extract left unchecked are the package's: a damaged
  // entry ends the job (could_not_test), whatever a run did with it. Waits
  // for the check; the job goes on when there was none.
  Step<> settle_copies();

  // Where the runs are forked from (a fork server per environment on the
  // CPU; on a device only the persistent runner serves), and on the CPU
  // the baseline environment's server started now, so that LibTorch's start
  // overlaps the extraction and the reference. Not for a later job of a
  // verify over the same extraction: its model's server already runs.
  void serve(const Settings& s, const std::string& device_key);
  // The Python the exported program's build, the eager run and the judge
  // use (Settings::python): --python's, else the torch's a runner was built
  // against; empty: theirs ($AOTI_BISECT_PYTHON, else python3).
  const std::string& python() const { return m_python; }
  // The runner built against the package's torch (PhaseFindings::runner);
  // empty: --runner's, else the one beside the tool.
  const std::filesystem::path& runner_built() const { return m_built; }
  // The model's facts for the runner, once extracted.
  const std::filesystem::path& model_facts() const { return m_facts; }

  // The baseline's word on the runner: one that cannot load the package,
  // with both torches named where they differ; one of another torch that
  // ran it, a note.
  Step<> fits(const ChildResult& baseline);

 private:
  void choose_runner(const Inspected& in);
  void build_from_sources(Inspected& in, const std::filesystem::path& package_dir, const Settings& s);
  void note_package_torch(const Inspected& in, const std::filesystem::path& package_dir);
  Stop versions_apart(const Stop& stop, const std::map<std::string, std::string>& runner_env) const;

  const RunOptions& m_opt;
  Recorder& m_rec;
  RunnerPick m_pick;           // which runner runs the package, and why
  PackageTorch m_built_with;   // the torch the package was built with, as far as it shows it
  std::future<void> m_copies;  // the extracted library's checksums, read beside the baseline
  std::filesystem::path m_facts;  // extract's package-facts.json
  std::string m_python;
  std::filesystem::path m_built;
};

}  // namespace aoti_bisect
