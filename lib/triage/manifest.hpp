#pragma once
// The triage manifest: a YAML list of cases, each one `aoti-bisect run`.
//
//   cases:
//     - name: resnet_nan            # [A-Za-z0-9._-], unique: DIR/cases/<name>
//       package: resnet.pt2         # paths relative to the manifest's folder
//       inputs: batch.pt
//       reference: expected.pt      # optional
//       exported_program: ep.pt2    # optional
//       config: cpu-extra.yaml      # optional, as --config
//       against_eager: true         # optional, as --against-eager
//       model: model                # optional, as --model
//
// A mistake in the manifest is Error(usage) located FILE:LINE:COL. Files a
// case names are not opened here: a missing one fails that case alone.

#include <filesystem>
#include <string>
#include <vector>

namespace aoti_bisect {

struct ManifestCase {
  std::string name;
  std::filesystem::path package;
  std::filesystem::path inputs;
  std::filesystem::path reference;          // empty when not given
  std::filesystem::path exported_program;
  std::filesystem::path config;
  std::string model;
  bool against_eager = false;
};

struct Manifest {
  std::string source;                       // as given, for messages
  std::vector<ManifestCase> cases;
};

// `base` is the folder relative paths are resolved against.
Manifest parse_manifest(const std::string& yaml_text, const std::string& source_name,
                        const std::filesystem::path& base);
Manifest load_manifest(const std::filesystem::path& path);

// A case name fit to be a folder name: [A-Za-z0-9._-]+, not "." or "..".
bool valid_case_name(const std::string& name);

}  // namespace aoti_bisect
