// Reading generated C++ as text: identifiers, matching brackets, calls, comments and lines, with string
// literals, raw strings and comments skipped alike.

#include "common/cpp_text.hpp"

#include <algorithm>

namespace aoti_bisect::cpp_text {

bool is_ident_char(char c) {
  // ASCII, as std::isalnum in the C locale (which the tool never leaves), without its call
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string ident_at(std::string_view s, size_t pos) {
  size_t end = pos;
  while (end < s.size() && is_ident_char(s[end])) {
    ++end;
  }
  return std::string(s.substr(pos, end - pos));
}

size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size() && (s[pos] == ' ' || (s[pos] >= '\t' && s[pos] <= '\r'))) {  // std::isspace's C locale
    ++pos;
  }
  return pos;
}

namespace {

// The characters that can start a literal or a comment.
constexpr bool may_start_literal_or_comment(char c) {
  return c == 'R' || c == '"' || c == '\'' || c == '/';
}

// R"delim( ... )delim" starting at `i` (the R): one past it, or npos when
// it is not one (or not closed).
size_t raw_string_end(std::string_view s, size_t i) {
  // R starts a raw string alone or after an encoding prefix (u8R, uR, UR, LR), not inside a name.
  bool starts = i == 0 || !is_ident_char(s[i - 1]) || std::string_view("uUL8").find(s[i - 1]) != std::string_view::npos;
  if (!starts || s[i] != 'R' || i + 1 >= s.size() || s[i + 1] != '"') {
    return std::string_view::npos;
  }
  size_t open = s.find('(', i + 2);
  if (open == std::string_view::npos || open - (i + 2) > 16) {
    return std::string_view::npos;
  }
  std::string close = ")" + std::string(s.substr(i + 2, open - (i + 2))) + "\"";
  size_t end = s.find(close, open + 1);
  return end == std::string_view::npos ? std::string_view::npos : end + close.size();
}

}  // namespace

size_t skip_literal_or_comment(std::string_view s, size_t i) {
  if (i >= s.size() || !may_start_literal_or_comment(s[i])) {
    return i;
  }
  char c = s[i];
  if (c == 'R') {
    size_t end = raw_string_end(s, i);
    return end == std::string_view::npos ? i : end;
  }
  if (c == '"') {
    size_t j = i + 1;
    while (j < s.size() && s[j] != '"' && s[j] != '\n') {
      j += s[j] == '\\' ? 2 : 1;
    }
    return std::min(j + 1, s.size());
  }
  if (c == '\'') {
    // 'x' or an escape ('\n', '\''); anything else is no literal (a digit separator).
    if (i + 2 < s.size() && s[i + 1] != '\\' && s[i + 2] == '\'') {
      return i + 3;
    }
    if (i + 1 < s.size() && s[i + 1] == '\\') {
      size_t close = s.find('\'', i + 3);
      if (close != std::string_view::npos && close - i <= 12) {
        return close + 1;
      }
    }
    return i;
  }
  if (s.compare(i, 2, "//") == 0) {
    size_t nl = s.find('\n', i);
    return nl == std::string_view::npos ? s.size() : nl;
  }
  if (s.compare(i, 2, "/*") == 0) {
    size_t e = s.find("*/", i + 2);
    return e == std::string_view::npos ? s.size() : e + 2;
  }
  return i;
}

size_t closing_bracket(std::string_view s, size_t open) {
  if (open >= s.size()) {
    return std::string_view::npos;
  }
  const char o = s[open];
  const char c = o == '(' ? ')' : o == '{' ? '}' : o == '[' ? ']' : '\0';
  if (c == '\0') {
    return std::string_view::npos;
  }
  int depth = 0;
  for (size_t i = open; i < s.size();) {
    size_t past = skip_literal_or_comment(s, i);
    if (past != i) {
      i = past;
      continue;
    }
    if (s[i] == o) {
      ++depth;
    } else if (s[i] == c && --depth == 0) {
      return i;
    }
    ++i;
  }
  return std::string_view::npos;
}

size_t after_closing_bracket(std::string_view s, size_t open) {
  size_t close = closing_bracket(s, open);
  return close == std::string_view::npos ? close : close + 1;
}

size_t find_call(std::string_view s, std::string_view name, size_t from) {
  std::string pattern = std::string(name) + "(";
  for (size_t p = s.find(pattern, from); p != std::string_view::npos; p = s.find(pattern, p + 1)) {
    if (p == 0 || !is_ident_char(s[p - 1])) {
      return p;
    }
  }
  return std::string_view::npos;
}

std::string without_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t past = skip_literal_or_comment(text, i);
    if (past == i) {
      size_t plain = i + 1;  // up to the next character that may start a literal or a comment, as it is
      while (plain < text.size() && !may_start_literal_or_comment(text[plain])) {
        ++plain;
      }
      out.append(text.substr(i, plain - i));
      i = plain;
    } else if (text.compare(i, 2, "//") == 0) {
      i = past;  // its newline stays
    } else if (text.compare(i, 2, "/*") == 0) {
      auto lines = std::count(text.begin() + static_cast<long>(i), text.begin() + static_cast<long>(past), '\n');
      out.append(lines > 0 ? static_cast<size_t>(lines) : 1, lines > 0 ? '\n' : ' ');
      i = past;
    } else {
      out.append(text.substr(i, past - i));  // a literal, as it is
      i = past;
    }
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (;;) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(start));
      return lines;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
}

std::vector<std::string> split_lines_copy(std::string_view text) {
  auto views = split_lines(text);
  return {views.begin(), views.end()};
}

std::string string_literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace aoti_bisect::cpp_text
