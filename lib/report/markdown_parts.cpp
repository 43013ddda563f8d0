// Markdown building blocks for report.md: code spans and fenced blocks that survive backticks in the
// text, escaped free text, table cells and rows, and list items.

#include "report/markdown_parts.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "report/sink_text.hpp"

namespace aoti_bisect::report_md {

using namespace report_text;

namespace {

size_t longest_backtick_run(const std::string& s) {
  size_t longest = 0;
  size_t run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

}  // namespace

// An inline code span that survives backticks inside the text.
std::string code(const std::string& text) {
  std::string s = one_line(text);
  if (s.empty()) {
    return "";
  }
  std::string fence(longest_backtick_run(s) + 1, '`');
  bool pad = s.front() == '`' || s.back() == '`';
  return pad ? fence + " " + s + " " + fence : fence + s + fence;
}

// A fenced block whose fence is longer than any backtick run inside.
std::string code_block(const std::string& text, const std::string& lang) {
  std::string fence(std::max<size_t>(3, longest_backtick_run(text) + 1), '`');
  return fence + lang + "\n" + text + "\n" + fence + "\n";
}

static bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// Free text (reasons, messages, versions): one line, Markdown's active
// characters escaped. '_' inside a word is literal in CommonMark ("x86_64"),
// so only a '_' at a word boundary is escaped.
std::string plain(const std::string& text) {
  std::string s = one_line(text);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool inner_underscore = c == '_' && i > 0 && i + 1 < s.size() && is_word_char(s[i - 1]) && is_word_char(s[i + 1]);
    if (std::string_view("\\`*_[]<>|").find(c) != std::string_view::npos && !inner_underscore) {
      out += '\\';
    }
    out += c;
  }
  return out;
}

std::string cell(const std::string& markdown) {
  std::string out;
  for (char c : markdown) {
    if (c == '|') {
      out += '\\';
    }
    out += c;
  }
  return out;
}

std::string table_row(const std::vector<std::string>& cells) {
  std::string row = "|";
  for (const auto& c : cells) {
    row += " " + cell(c) + " |";
  }
  return row + "\n";
}

std::string table_head(const std::vector<std::string>& names) {
  std::string sep = "|";
  for (size_t i = 0; i < names.size(); ++i) {
    sep += "---|";
  }
  return table_row(names) + sep + "\n";
}

void item(std::string& out, const std::string& name, const std::string& value) {
  if (!value.empty()) {
    out += fmt::format("- **{}:** {}\n", name, value);
  }
}

}  // namespace aoti_bisect::report_md
