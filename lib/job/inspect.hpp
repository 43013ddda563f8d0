#pragma once
// The inspect phase of `aoti-bisect run`: the package opened and its model
// chosen, its wrapper parsed, the inputs checked torch-free before any child
// loads them (or the package's own sample inputs taken), and the report's
// package section written. Reads only; extracting is the runner phase's.

#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "harness/recorder.hpp"
#include "harness/settings.hpp"
#include "job/step.hpp"
#include "package/package.hpp"

namespace aoti_bisect {

// The package, the model in it and its wrapper: what the inspect phase found.
struct Inspected {
  std::optional<Package> pkg;
  const ModelFiles* model = nullptr;
  // A package_cpp_only model once its library is built (codegen/sources_only.hpp):
  // the model's files with that library; `model` then points here.
  ModelFiles built;
  WrapperInfo wrapper;
  // The package's SHA-256 (the report's package.sha256). A 1 GiB package
  // takes seconds to hash: on a thread of its own from hash_package (once
  // the first answer is out, so that the hash does not take a core from the
  // first run's load and the extraction), or, where the job ends before
  // that, when it is asked for.
  std::shared_future<std::string> package_sha256;
  void hash_package();  // starts the hash on its thread; once
  // What it found that the command line did not say: the sample inputs,
  // libpython for a Python extension (the settings take them).
  PhaseFindings found;
  // The inputs the job runs: --inputs', else the package's sample inputs.
  const std::filesystem::path& inputs(const RunOptions& opt) const {
    return found.inputs.empty() ? opt.inputs : found.inputs;
  }
};

// Opens the package and checks the files exist. Usage errors (an unknown
// model name, no --inputs where the package holds no sample inputs)
// propagate; the others stop the job.
Step<Inspected> inspect(const RunOptions& opt, const std::vector<std::filesystem::path>& batches, Recorder& rec);

}  // namespace aoti_bisect
