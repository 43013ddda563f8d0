#pragma once
// What the Python helpers' runs share (build.cpp): the python to run, the
// build helper's script in the cache, a child's spec with its streams in the
// work folder, and its result read back. For inductor/ alone.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/scratch_dir.hpp"
#include "process/process.hpp"

namespace aoti_bisect::inductor_helper {

std::filesystem::path python(const std::string& requested);  // "" : $AOTI_BISECT_PYTHON, else python3
std::filesystem::path build_script(const std::filesystem::path& cache, const ScratchDir& work);
void publish_file(const ScratchDir& work, const std::filesystem::path& dest, const std::string& content);
SpawnSpec spec(std::vector<std::string> argv, const ScratchDir& work, double timeout_s);
std::string failure(const ExitStatus& status, const std::filesystem::path& result_path);
std::optional<nlohmann::json> result(const std::filesystem::path& path);
void refuse_if_unsafe(const ExitStatus& status, const std::filesystem::path& result_path);  // throws ProgramRefused
std::string torch_version(const std::filesystem::path& python, const ScratchDir& work);

}  // namespace aoti_bisect::inductor_helper
