#pragma once
// Reading the generated C++ of a package as text, for the replay
// (repro/replay.hpp): brackets, calls, identifiers, declarations.

#include <string>
#include <vector>

namespace aoti_bisect::repro {

bool ident_char(char c);
// Position just past the bracket matching the one at `open` ('(' or '{');
// npos when unbalanced.
size_t matching(const std::string& s, size_t open);
// Where `name(` starts as a whole identifier, from `from`; npos if nowhere.
size_t find_call(const std::string& s, const std::string& name, size_t from = 0);
// Identifiers in an expression that are neither called nor members.
std::vector<std::string> identifiers(const std::string& text);
// The line before 1-based `line`, inside run_impl, that declares `id`
// (`id = ...` or `id[] = ...`), trimmed; "" if none.
std::string declaration_of(const std::vector<std::string>& lines, int line, const std::string& id);
std::vector<std::string> split_lines(const std::string& s);

}  // namespace aoti_bisect::repro
