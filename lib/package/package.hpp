#pragma once
// Reading an AOTI package (.pt2, a zip): which models it holds, each model's
// files, its metadata, whether an exported program is inside; extracting it
// once into a directory the runner loads from (LibTorch's own loader would
// extract to /tmp on every load and leak the folder when the child crashes).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/zip_stored.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// Which of a model's generated sources a file is, by its name: the one place
// that decides. Newer packages split them (NAME.wrapper.cpp, NAME.kernel.cpp);
// older ones hold both in one NAME.cpp. A split file wins over a combined one.
enum class SourceRole { none, wrapper, kernel, both };
SourceRole source_role(std::string_view file_name);

struct ModelFiles {
  std::string name;         // "model"
  std::string dir;          // archive path of data/aotinductor/<name>/
  std::string wrapper_cpp;  // archive paths; "" when absent
  std::string kernel_cpp;
  std::string metadata_json;
  std::string shared_object;
  // The extern nodes the proxy executor runs (`<stem>.wrapper.json`, older
  // `<stem>.json`): custom operators by node index.
  std::string extern_json;
  // trace.provenance_tracking_level's map from call sites to Python source.
  std::string kernel_information_json;
  // aot_inductor.package_cpp_only: the flags to build the library with.
  std::string compile_flags_json;
  std::string linker_flags_json;
  std::vector<std::string> cubins;
  std::vector<std::string> other;
  std::map<std::string, std::string> metadata;  // parsed metadata_json
  std::string device_key() const;               // metadata AOTI_DEVICE_KEY, "" when unknown
};

// Whether an extracted package directory holds a weights file for `model`
// beside its library: a .blob in its folder or in data/constants (what the
// loaders read), or anything under data/weights.
bool has_weights_file(const std::filesystem::path& extracted_dir, const std::string& model);

// Before any child loads the extracted model's library: a truncated ELF file
// (it would crash the loader in every child, SIGBUS past its end, which
// would read as the model's own crash) and a package that holds no weights
// (constants.hpp missing_weights) throw Error(cannot_test). A file that is
// not ELF at all is left to the loader, which says so in its own words.
void check_model_library(const std::filesystem::path& extracted_dir, const ModelFiles& model,
                         const WrapperInfo& wrapper);

// An entry extract copied without reading it back (zip_stored.hpp).
struct UncheckedCopy {
  std::string entry;
  std::filesystem::path file;
  StoredEntry stored;
};

// Reads back what Package::extract left unchecked: Error(cannot_test)
// "package '<path>': entry '<name>' is damaged (truncated or bad checksum);
// rebuild the package" for the first copy whose CRC-32 is not the one
// recorded.
void check_copies(const std::filesystem::path& package, const std::vector<UncheckedCopy>& copies);

class Package {
 public:
  // Opens and indexes the archive. Throws Error(cannot_test) with one line
  // for: a missing file, a directory, a file that is not a zip, a truncated
  // or corrupt zip, and a zip that holds no AOTI model.
  static Package open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return m_path; }
  const std::string& prefix() const { return m_prefix; }  // "name/" or ""
  const std::vector<std::string>& entries() const { return m_entries; }
  const std::vector<ModelFiles>& models() const { return m_models; }
  std::vector<std::string> model_names() const;
  // Exported programs inside (models/<name>.json of a package_pt2 archive).
  const std::vector<std::string>& exported_programs() const { return m_exported; }
  // The archive's "version"/"archive_version" and torch version where recorded.
  std::string torch_version() const;

  // The model to run: `requested` if given, else the only one. Throws
  // Error(usage) for an unknown name (listing the ones there are) or when
  // several exist and none was named.
  const ModelFiles& select_model(const std::string& requested) const;

  // The archive entry of the sample inputs saved beside `model`'s exported
  // program (data/sample_inputs/<name>.pt, written by package_pt2); "" when
  // the archive holds none.
  std::string sample_inputs(const ModelFiles& model) const;
  // Writes entry `name` to the file `dest` (its folder must exist).
  void extract_file(const std::string& name, const std::filesystem::path& dest) const;

  // Text of one entry (throws Error(cannot_test) if unreadable).
  std::string read_entry(const std::string& name) const;

  // The model's wrapper source parsed (empty WrapperInfo when there is none).
  WrapperInfo wrapper_info(const ModelFiles& model) const;

  // Extracts the entries under `dest` (created), rejecting unsafe names
  // ("..", absolute) anywhere in the archive. Returns the directory to give
  // the runner (the one that holds data/aotinductor/). With `only`, what a
  // run of that model needs: its own data/aotinductor/<name>/ folder and the
  // shared weights and constants, not other models' files, exported
  // programs (models/) or sample inputs.
  // With `unchecked`, the large stored entries (the model library, its
  // weights) are copied without being read back: their checksums are left
  // there for check_copies, which the job runs beside its first run.
  std::filesystem::path extract(const std::filesystem::path& dest, const ModelFiles* only = nullptr,
                                std::vector<UncheckedCopy>* unchecked = nullptr) const;

 private:
  std::filesystem::path m_path;
  std::string m_prefix;
  std::vector<std::string> m_entries;
  std::vector<ModelFiles> m_models;
  std::vector<std::string> m_exported;
};

}  // namespace aoti_bisect
