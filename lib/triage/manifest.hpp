#pragma once
// The triage manifest: a YAML list of cases, each one `aoti-bisect run`.
//
//   cases:
//     - name: resnet_nan            # [A-Za-z0-9._-], unique: DIR/cases/<name>
//       package: resnet.pt2         # paths relative to the manifest's folder
//       inputs: batch.pt            # or a folder, a glob, or a list of them: the batches, in order;
//                                   # none: the package's own sample inputs
//       reference: expected.pt      # optional
//       exported_program: ep.pt2    # optional
//       config: cpu-extra.yaml      # optional, as --config
//       against_eager: true         # optional, as --against-eager
//       model: model                # optional, as --model
//       load_library: libmyops.so   # optional, as --load-library: a path or a list of them
//       timeout: 600                # optional, as --timeout (seconds per child run)
//       repeats: 5                  # optional, as --repeats
//       jobs: 2                     # optional, as --jobs
//       options: [--strategy, bisect]   # optional: more `aoti-bisect run` options
//
// A mistake in the manifest is Error(usage) located FILE:LINE:COL. Files a
// case names are not opened here: a missing one fails that case alone.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace aoti_bisect {

struct ManifestCase {
  std::string name;
  int index = 0;  // its place in the manifest, from 0 (the order summaries keep)
  std::filesystem::path package;
  std::vector<std::filesystem::path> inputs;  // one --inputs each: files, folders, globs (several: batches)
  std::filesystem::path reference;            // empty when not given
  std::filesystem::path exported_program;
  std::filesystem::path config;
  std::vector<std::filesystem::path> load_libraries;  // --load-library each: custom operator libraries
  std::string model;
  bool against_eager = false;
  std::optional<double> timeout_s;   // --timeout, per child run
  std::optional<int> repeats;        // --repeats
  std::optional<int> jobs;           // --jobs
  std::vector<std::string> options;  // more `run` options, in order
};

// Why `options` are not options of `aoti-bisect run` (one line), or nullopt.
// The manifest reader locates the message at the case's `options:`.
using RunOptionCheck = std::function<std::optional<std::string>(const std::vector<std::string>& options)>;

struct Manifest {
  std::string source;  // as given, for messages
  std::vector<ManifestCase> cases;
};

// `base` is the folder relative paths are resolved against.
// `check` (optional) validates each case's `options`.
Manifest parse_manifest(const std::string& yaml_text, const std::string& source_name, const std::filesystem::path& base,
                        const RunOptionCheck& check = {});
Manifest load_manifest(const std::filesystem::path& path, const RunOptionCheck& check = {});

// The `run` options a case sets through its own keys, or triage sets for it:
// not allowed in its `options`.
const std::vector<std::string>& options_set_by_manifest();

// A case name fit to be a folder name: [A-Za-z0-9._-]+, not "." or "..".
bool valid_case_name(const std::string& name);

}  // namespace aoti_bisect
