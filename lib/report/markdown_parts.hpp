#pragma once
// Markdown building blocks and the larger sections of report.md (internal to
// lib/report). Text from children goes into code spans or is escaped, so
// Markdown never interprets it.

#include <string>
#include <vector>

#include "report/report.hpp"

namespace aoti_bisect::report_md {

// An inline code span that survives backticks inside the text.
std::string code(const std::string& text);
// A fenced block whose fence is longer than any backtick run inside.
std::string code_block(const std::string& text, const std::string& lang);
// Free text with Markdown's special characters escaped.
std::string plain(const std::string& text);
// A table cell: '|' escaped, one line.
std::string cell(const std::string& markdown);
std::string table_row(const std::vector<std::string>& cells);
std::string table_head(const std::vector<std::string>& names);
// "- **name:** value\n"; nothing when value is empty.
void item(std::string& out, const std::string& name, const std::string& value);

// The culprit's section: why, its graph nodes, its tensors before and after.
std::string culprit_section(const Culprit& culprit);
// Whether the report holds a search worth a section, and that section.
bool has_search(const Report& report);
std::string search_section(const Report& report);

}  // namespace aoti_bisect::report_md
