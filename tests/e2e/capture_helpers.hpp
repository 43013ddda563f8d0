#pragma once
// What the capture cases share (test_capture.cpp, test_capture_options.cpp):
// the Python that runs the hosts, a host's path, CAP/capture.json, and
// run_command's words for run_tool.

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "e2e/e2e.hpp"

namespace capture_test {

inline std::string python_exe() {
  const char* chosen = std::getenv("AOTI_BISECT_PYTHON");
  return chosen != nullptr && *chosen != '\0' ? chosen : "python3";
}

inline std::filesystem::path host_script(const std::string& name) {
  return std::filesystem::path(AOTI_BISECT_SOURCE_DIR) / "examples" / "hosts" / name;
}

inline nlohmann::json capture_json(const std::string& dir) {
  std::string text = e2e::read_text(std::filesystem::path(dir) / "capture.json");
  REQUIRE_MESSAGE(!text.empty(), dir << "/capture.json is missing");
  return nlohmann::json::parse(text);
}

// run_command's words, for run_tool (display paths are relative to the test's folder or absolute).
inline std::vector<std::string> words_of(const std::string& command) {
  std::istringstream in(command);
  std::vector<std::string> words;
  const char* home = std::getenv("HOME");
  for (std::string w; in >> w;) {
    if (w.rfind("~/", 0) == 0 && home != nullptr) {
      w = std::string(home) + w.substr(1);  // as a shell expands it
    }
    words.push_back(w);
  }
  REQUIRE(words.size() >= 3);
  words.erase(words.begin());  // "aoti-bisect"
  return words;
}

}  // namespace capture_test
