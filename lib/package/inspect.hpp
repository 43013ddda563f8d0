#pragma once
// `aoti-bisect inspect`: what a package holds, for people (a table) and for
// scripts (JSON).

#include <string>

#include <nlohmann/json.hpp>

#include "package/package.hpp"

namespace aoti_bisect {

// `model` empty: every model in the package.
nlohmann::ordered_json inspect_json(const Package& pkg, const std::string& model);
std::string inspect_table(const Package& pkg, const std::string& model);

}  // namespace aoti_bisect
