// failure.signature: kernel names without their numbering, kernel source and error lines normalized,
// hashed into one string that names a bug the same way across runs, machines and rebuilds.

#include "classify/signature.hpp"

#include <cctype>

#include "common/cpp_text.hpp"
#include "common/files.hpp"
#include "common/text.hpp"

namespace aoti_bisect {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
using cpp_text::is_ident_char;
bool digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// "buf12" -> "buf#", "arg4_1" -> "arg#", "x0" -> "x#", "int64_t" unchanged:
// the digits (and '_' digits groups) that end an identifier.
std::string strip_numbering(const std::string& ident) {
  size_t end = ident.size();
  while (end > 0) {
    size_t d = end;
    while (d > 0 && digit(ident[d - 1])) {
      --d;
    }
    if (d == end) {
      break;
    }
    if (d == 0) {
      return ident;
    }
    end = d;
    if (ident[end - 1] == '_' && end > 1 && digit(ident[end - 2])) {
      --end;  // "arg4_1": drop "_1", then "4"
    } else {
      break;
    }
  }
  if (end == ident.size()) {
    return ident;
  }
  return ident.substr(0, end) + "#";
}

// Appends the identifier starting at `i`, its numbering stripped; returns
// the index after it.
size_t append_identifier(const std::string& text, size_t i, std::string& out) {
  size_t j = i;
  while (j < text.size() && is_ident_char(text[j])) {
    ++j;
  }
  out += strip_numbering(text.substr(i, j - i));
  return j;
}

std::string drop_comments_and_directives(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool line_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' || c == '\'') {  // literals verbatim, escapes kept
      size_t j = i + 1;
      while (j < text.size() && text[j] != c && text[j] != '\n') {
        j += text[j] == '\\' ? 2 : 1;
      }
      out.append(text, i, std::min(j + 1, text.size()) - i);
      i = j;
      line_start = false;
      continue;
    }
    if (text.compare(i, 2, "//") == 0 || (line_start && c == '#')) {
      i = text.find('\n', i);
      if (i == std::string::npos) {
        break;
      }
      out += '\n';
      line_start = true;
      continue;
    }
    if (text.compare(i, 2, "/*") == 0) {
      i = text.find("*/", i + 2);
      if (i == std::string::npos) {
        break;
      }
      ++i;
      out += ' ';
      continue;
    }
    out += c;
    if (c == '\n') {
      line_start = true;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      line_start = false;
    }
  }
  return out;
}

std::string hash12(const std::string& text) {
  return sha256_hex(text).substr(0, 12);
}

std::string flags_text(const std::map<std::string, std::string>& flags) {
  std::string out;
  for (const auto& [k, v] : flags) {
    out += (out.empty() ? "" : " ") + k + "=" + v;
  }
  return out;
}

}  // namespace

std::string kernel_base_name(const std::string& kernel) {
  std::string s = strip_numbering(kernel);
  if (s.size() > 1 && s.back() == '#') {
    s.pop_back();
    while (!s.empty() && s.back() == '_') {
      s.pop_back();
    }
    return s.empty() ? kernel : s;
  }
  return kernel;
}

std::string kernel_definition(const std::string& kernel_source, const std::string& name) {
  if (name.empty()) {
    return "";
  }
  for (size_t p = kernel_source.find(name); p != std::string::npos; p = kernel_source.find(name, p + 1)) {
    if ((p > 0 && is_ident_char(kernel_source[p - 1])) ||
        (p + name.size() < kernel_source.size() && is_ident_char(kernel_source[p + name.size()]))) {
      continue;
    }
    // A definition: "void NAME(" ... ")" then '{' before any ';'.
    size_t line = kernel_source.rfind('\n', p);
    line = line == std::string::npos ? 0 : line + 1;
    if (kernel_source.substr(line, p - line).find("void") == std::string::npos) {
      continue;
    }
    size_t brace = kernel_source.find_first_of("{;", p);
    if (brace == std::string::npos || kernel_source[brace] != '{') {
      continue;
    }
    size_t end = cpp_text::after_closing_bracket(kernel_source, brace);
    return end == std::string::npos ? "" : kernel_source.substr(line, end - line);
  }
  return "";
}

std::string normalize_kernel_source(const std::string& source) {
  std::string text = drop_comments_and_directives(source);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) {
        ++i;
      }
      if (!out.empty()) {
        out += ' ';
      }
      continue;
    }
    if (ident_start(c)) {
      i = append_identifier(text, i, out);
      continue;
    }
    if (digit(c)) {  // a number literal, whole (so "1e5f" stays one token)
      size_t j = i;
      while (j < text.size() && (is_ident_char(text[j]) || text[j] == '.')) {
        ++j;
      }
      out.append(text, i, j - i);
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  return out;
}

std::string normalize_error_line(const std::string& line) {
  std::string text = redact_paths(line);
  std::string out;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    // Absolute paths and "~/" paths, whatever redaction left: one token.
    if ((c == '/' || (c == '~' && i + 1 < text.size() && text[i + 1] == '/')) &&
        (i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '\'' || text[i - 1] == '"' ||
         text[i - 1] == '(')) {
      size_t j = i;
      while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j])) && text[j] != '\'' &&
             text[j] != '"' && text[j] != ')' && text[j] != ':' && text[j] != ',') {
        ++j;
      }
      out += "<path>";
      i = j;
      continue;
    }
    if (c == '0' && i + 1 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'X')) {
      size_t j = i + 2;
      while (j < text.size() && std::isxdigit(static_cast<unsigned char>(text[j]))) {
        ++j;
      }
      out += "<addr>";
      i = j;
      continue;
    }
    if (ident_start(c)) {
      i = append_identifier(text, i, out);
      continue;
    }
    if (digit(c)) {
      size_t j = i;
      while (j < text.size() && (digit(text[j]) || text[j] == '.')) {
        ++j;
      }
      out += "N";
      i = j;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') {
        out += ' ';
      }
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  return std::string(trim(out));
}

std::string failure_signature(const SignatureInput& in) {
  std::string flags = flags_text(in.flags);
  std::string recipe = std::string(k_signature_recipe) + "\n" + in.kind + "\n";
  if (in.kernel.empty()) {
    return in.kind + "/-/" + hash12(recipe + normalize_error_line(in.first_line) + "\n" + flags);
  }
  std::string base = kernel_base_name(in.kernel);
  std::string source = in.kernel_source.empty() ? "" : sha256_hex(normalize_kernel_source(in.kernel_source));
  return in.kind + "/" + base + "/" + hash12(recipe + base + "\n" + source + "\n" + flags);
}

}  // namespace aoti_bisect
