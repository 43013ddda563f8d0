#pragma once
// Reading generated C++ (the wrapper, kernel.cpp, hook sources) as text: the
// one toolkit every parser of it uses (package/wrapper_text, package/hooks,
// package/triton_launch, package/rewrite, repro/source_text, classify's
// signature). Literals and comments are skipped alike everywhere: a bracket
// inside "...", '(', R"(...)" or a comment never counts.

#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect::cpp_text {

bool is_ident_char(char c);
// The identifier that starts at `pos` (empty if none).
std::string ident_at(std::string_view s, size_t pos);
// The first position from `pos` that is not white space (s.size() if none).
size_t skip_space(std::string_view s, size_t pos);

// Where the literal or comment that starts at `i` ends (one past it): a
// string literal "..." (escapes kept), a raw string R"delim(...)delim", a
// character literal 'x' or '\n', a `//` comment (up to its newline, not
// past it) or a `/* */` block. `i` itself where none starts there.
size_t skip_literal_or_comment(std::string_view s, size_t i);

// The position of the bracket that closes the one at `open` ('(', '{' or
// '['), literals and comments skipped; npos when unbalanced.
size_t closing_bracket(std::string_view s, size_t open);
// One past it: the end of the bracketed text; npos when unbalanced.
size_t after_closing_bracket(std::string_view s, size_t open);

// Where `name(` starts as a whole identifier, from `from`; npos if nowhere.
size_t find_call(std::string_view s, std::string_view name, size_t from = 0);

// The text without comments: a `//` comment is dropped up to its line's end,
// a `/* */` block becomes its newlines (one space when it has none); literals
// are kept as they are.
std::string without_comments(std::string_view text);

// `text` as a C++ string literal ("a \"b\"" for a "b"); a newline becomes a space.
std::string string_literal(std::string_view text);

// Lines split at '\n'; a trailing newline gives a last empty line.
std::vector<std::string_view> split_lines(std::string_view text);
std::vector<std::string> split_lines_copy(std::string_view text);

}  // namespace aoti_bisect::cpp_text
