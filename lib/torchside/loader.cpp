// Loading one model of an extracted package directory (the driver extracts
// the .pt2 once into OUT/.work-<pid>/package; no child extracts anything).
//
// LibTorch's AOTIModelPackageLoader accepts such a directory from 2.13 on.
// Before that it opens only a .pt2 file ("Failed to initialize zip archive")
// and extracts it into a fresh /tmp/XXXXXX that a crashed child leaks. For
// those versions the model is loaded the way that loader loads it after its
// extraction, from the files already on disk: the model's metadata gives the
// device key, the runner registry gives the container runner for it, built on
// the model's .so with the model's folder as the cubin folder, and an
// external weights blob is loaded into it. Nothing is written anywhere, so
// nothing can be leaked.

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <stdexcept>
#include <type_traits>

#include <nlohmann/json.hpp>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/inductor/aoti_runner/model_container_runner.h>
#include <torch/version.h>

#include "package/package.hpp"
#include "torchside/internal.hpp"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13)
#define AOTI_BISECT_PACKAGE_LOADER_READS_DIRECTORIES 1
#else
#define AOTI_BISECT_PACKAGE_LOADER_READS_DIRECTORIES 0
#endif

namespace aoti_bisect::torchside {
namespace fs = std::filesystem;

namespace {

#if AOTI_BISECT_PACKAGE_LOADER_READS_DIRECTORIES
class PackageLoaderModel : public LoadedModel {
 public:
  PackageLoaderModel(const fs::path& dir, const std::string& model)
      : m_loader(std::make_unique<torch::inductor::AOTIModelPackageLoader>(dir.string(), model)) {}
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) override { return m_loader->run(inputs); }
  std::unordered_map<std::string, at::Tensor> constants() override {
    return m_loader->get_runner()->extract_constants_map(false);
  }

 private:
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> m_loader;
};
#endif

class ContainerRunnerModel : public LoadedModel {
 public:
  explicit ContainerRunnerModel(std::unique_ptr<torch::inductor::AOTIModelContainerRunner> runner)
      : m_runner(std::move(runner)) {}
  // The package loader's run() is exactly this call.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) override { return m_runner->run(inputs); }
  std::unordered_map<std::string, at::Tensor> constants() override { return m_runner->extract_constants_map(false); }

 private:
  std::unique_ptr<torch::inductor::AOTIModelContainerRunner> m_runner;
};

// Regular files under `dir` (recursively), sorted: a directory has no zip
// order, so choices below never depend on the file system's listing order.
std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return out;
  }
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      out.push_back(it->path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string model_names_in(const fs::path& dir) {
  std::string names;
  std::error_code ec;
  std::set<std::string> sorted;
  for (const auto& e : fs::directory_iterator(dir / "data" / "aotinductor", ec)) {
    if (e.is_directory(ec)) {
      sorted.insert(e.path().filename().string());
    }
  }
  for (const auto& n : sorted) {
    names += (names.empty() ? "" : ", ") + n;
  }
  return names.empty() ? "none" : names;
}

// The CreateAOTIModelRunnerFunc of the registry: (so, num_models, device_str,
// cubin_dir, run_single_threaded) on the versions built here; the fifth
// argument is newer than the others.
template <typename Create>
std::unique_ptr<torch::inductor::AOTIModelContainerRunner> create_runner(Create create, const std::string& so,
                                                                         const std::string& device_str,
                                                                         const std::string& cubin_dir) {
  if constexpr (std::is_invocable_v<Create, const std::string&, size_t, const std::string&, const std::string&, bool>) {
    return create(so, 1, device_str, cubin_dir, false);
  } else {
    return create(so, 1, device_str, cubin_dir);
  }
}

std::unique_ptr<LoadedModel> load_with_container_runner(const fs::path& dir, const std::string& model) {
  // What AOTIModelPackageLoader extracts: the model's folder and the shared
  // constants (data/constants, which it flattens into the model's folder).
  const fs::path model_dir = dir / "data" / "aotinductor" / model;
  std::vector<fs::path> files = files_under(model_dir);
  for (auto& f : files_under(dir / "data" / "constants")) {
    files.push_back(f);
  }
  std::vector<fs::path> so_files, cpp_files, blobs;
  for (const auto& f : files) {
    std::string ext = f.extension().string();
    if (ext == ".so") {
      so_files.push_back(f);
    } else if (ext == ".cpp") {
      cpp_files.push_back(f);
    } else if (ext == ".blob") {
      blobs.push_back(f);
    }
  }
  if (so_files.empty() && cpp_files.empty()) {
    throw std::runtime_error("Failed to find a generated cpp file or so file for model '" + model +
                             "' in the package directory (models there: " + model_names_in(dir) + ")");
  }
  if (so_files.empty()) {
    // package_cpp_only: LibTorch's loader compiles the sources at load time.
    throw std::runtime_error("model '" + model +
                             "' has sources but no compiled .so (aot_inductor.package_cpp_only); this runner, "
                             "built against LibTorch " TORCH_VERSION
                             ", loads only compiled packages (LibTorch 2.13 and later compile them)");
  }
  // One .so per model; a `.wrapper.so` is the model's when there are several.
  fs::path so = so_files.front();
  for (const auto& f : so_files) {
    if (f.filename().string().ends_with(".wrapper.so")) {
      so = f;
    }
  }

  // The metadata: the loader reads `<stem of the .cpp>_metadata.json`. Newer
  // packages have a wrapper and a kernel .cpp with identical metadata files;
  // the wrapper's is taken first.
  auto is_wrapper = [](const fs::path& p) { return source_role(p.filename().string()) == SourceRole::wrapper; };
  std::stable_sort(cpp_files.begin(), cpp_files.end(),
                   [&](const fs::path& a, const fs::path& b) { return is_wrapper(a) && !is_wrapper(b); });
  fs::path metadata_path;
  std::error_code ec;
  for (const auto& cpp : cpp_files) {
    fs::path candidate = cpp.parent_path() / (cpp.stem().string() + "_metadata.json");
    if (fs::is_regular_file(candidate, ec)) {
      metadata_path = candidate;
      break;
    }
  }
  if (metadata_path.empty()) {
    throw std::runtime_error("No metadata file (<name>_metadata.json beside the generated .cpp) found for model '" +
                             model + "'");
  }
  std::ifstream in(metadata_path);
  nlohmann::json metadata = nlohmann::json::parse(in);  // throws with the parser's message
  std::string device_key;
  for (auto& item : metadata.items()) {
    std::string value = item.value().get<std::string>();  // the loader keeps string values only, and throws otherwise
    if (item.key() == "AOTI_DEVICE_KEY") {
      device_key = value;
    }
  }
  if (device_key.empty()) {
    throw std::runtime_error("No device information found.");
  }
  auto& registry = torch::inductor::getAOTIModelRunnerRegistry();
  auto create = registry.find(device_key);
  if (create == registry.end()) {
    throw std::runtime_error("Unsupported device key found: " + device_key);
  }
  c10::Device device(device_key);
  device.set_index(-1);  // the loader's default device index
  auto runner = create_runner(create->second, so.string(), device.str(), model_dir.string());
  if (!blobs.empty()) {
    runner->update_constant_buffer_from_blob(blobs.back().string());
  }
  return std::make_unique<ContainerRunnerModel>(std::move(runner));
}

}  // namespace

std::unique_ptr<LoadedModel> load_extracted_model(const fs::path& dir, const std::string& model) {
#if AOTI_BISECT_PACKAGE_LOADER_READS_DIRECTORIES
  // AOTI_BISECT_RUNNER_LOADER=container takes the fallback here too, so that
  // the suite exercises it on the versions that do not need it.
  const char* forced = std::getenv("AOTI_BISECT_RUNNER_LOADER");
  if (forced == nullptr || std::string(forced) != "container") {
    return std::make_unique<PackageLoaderModel>(dir, model);
  }
#endif
  return load_with_container_runner(dir, model);
}

}  // namespace aoti_bisect::torchside
