#pragma once
// Reading the generated C++ of a package as text, for the replay
// (repro/replay.hpp): brackets, calls, identifiers, declarations.

#include <string>
#include <vector>

#include "common/cpp_text.hpp"

namespace aoti_bisect::repro {

// Brackets, calls and lines come from the C++ text toolkit (common/cpp_text.hpp).
using cpp_text::after_closing_bracket;
using cpp_text::find_call;
using cpp_text::is_ident_char;
// Where the definition of cpp kernel `kernel` starts (its `extern "C"`
// line, which may be the line before the name); npos when not there.
size_t kernel_definition_start(const std::string& source, const std::string& kernel);
// Identifiers in an expression that are neither called nor members.
std::vector<std::string> identifiers(const std::string& text);
// The line before 1-based `line`, inside run_impl, that declares `id`
// (`id = ...` or `id[] = ...`), trimmed; "" if none.
std::string declaration_of(const std::vector<std::string>& lines, int line, const std::string& id);

}  // namespace aoti_bisect::repro
