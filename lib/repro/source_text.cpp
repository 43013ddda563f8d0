// Reading a package's generated C++ for the replay: identifiers, declarations, a call's text and
// arguments, the culprit kernel's source cut out, portable compile flags, private paths found.

#include "repro/source_text.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "codegen/rewrite.hpp"
#include "common/text.hpp"
#include "repro/replay.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {
namespace repro {

std::vector<std::string> identifiers(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (size_t past = cpp_text::skip_literal_or_comment(text, i); past != i) {
      i = past;  // a string literal ("relu", a oneDNN post-op's name) names nothing
      continue;
    }
    if (is_ident_char(text[i]) && !std::isdigit(static_cast<unsigned char>(text[i])) &&
        (i == 0 || !is_ident_char(text[i - 1]))) {
      size_t e = i;
      while (e < text.size() && is_ident_char(text[e])) {
        ++e;
      }
      size_t next = text.find_first_not_of(' ', e);
      bool called = next != std::string::npos && (text[next] == '(' || text.compare(next, 2, "::") == 0);
      bool member = i > 0 && (text[i - 1] == '.' || text[i - 1] == ':' || text[i - 1] == '>');
      if (!called && !member) {
        out.push_back(text.substr(i, e - i));
      }
      i = e;
    } else {
      ++i;
    }
  }
  return out;
}

// The wrapper line (before `line`) that declares `id` in run_impl.
std::string declaration_of(const std::vector<std::string>& lines, int line, const std::string& id) {
  std::regex decl("(^|[^A-Za-z0-9_])" + id + "\\s*(\\[\\s*\\])?\\s*=");
  for (int i = std::min<int>(line - 1, static_cast<int>(lines.size())) - 1; i >= 0; --i) {
    if (lines[i].find("run_impl(") != std::string::npos) {
      break;
    }
    if (lines[i].find(id) != std::string::npos && std::regex_search(lines[i], decl)) {
      return std::string(trim(lines[i]));
    }
  }
  return "";
}

}  // namespace repro

using namespace repro;

std::string call_text_at(const std::string& source, int line, const std::string& name) {
  auto lines = cpp_text::split_lines_copy(source);
  if (line < 1 || line > static_cast<int>(lines.size())) {
    return "";
  }
  std::string text;
  for (int i = line - 1; i < static_cast<int>(lines.size()) && i < line + 63; ++i) {
    text += lines[i] + " ";
  }
  size_t p = find_call(text, name);
  if (p == std::string::npos || p >= lines[line - 1].size()) {
    return "";  // the call must start on that line
  }
  size_t end = after_closing_bracket(text, p + name.size());
  return end == std::string::npos ? "" : text.substr(p, end - p);
}

std::vector<std::string> call_arguments(const std::string& call) {
  size_t open = call.find('(');
  if (open == std::string::npos) {
    return {};
  }
  return split_call_arguments(std::string_view(call).substr(open));  // the wrapper parser's own splitting
}

size_t repro::kernel_definition_start(const std::string& src, const std::string& kernel) {
  for (size_t at = find_call(src, kernel); at != std::string::npos; at = find_call(src, kernel, at + 1)) {
    size_t ext = src.rfind("extern \"C\"", at);
    if (ext == std::string::npos) {
      continue;
    }
    // `extern "C"  void  NAME(`, or over two lines (a CPP GEMM template's
    // `extern "C" \nvoid NAME(`): only the return type between them.
    std::string_view between = std::string_view(src).substr(ext + 10, at - ext - 10);
    bool type_only = std::all_of(between.begin(), between.end(), [](char c) {
      return is_ident_char(c) || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '*';
    });
    size_t params_end = after_closing_bracket(src, at + kernel.size());
    size_t body = params_end == std::string::npos ? std::string::npos : src.find_first_not_of(" \t\r\n", params_end);
    if (type_only && body != std::string::npos && src[body] == '{') {
      size_t line_start = src.rfind('\n', ext);
      return line_start == std::string::npos ? 0 : line_start + 1;
    }
  }
  return std::string::npos;
}

std::string replay_kernel_source(const std::string& src, const std::string& kernel) {
  size_t p = kernel_definition_start(src, kernel);
  if (p == std::string::npos) {
    return "";
  }
  size_t params_end = after_closing_bracket(src, find_call(src, kernel, p) + kernel.size());
  size_t body = params_end == std::string::npos ? std::string::npos : src.find('{', params_end);
  size_t end = body == std::string::npos ? std::string::npos : after_closing_bracket(src, body);
  if (end == std::string::npos) {
    return "";
  }
  // What precedes it since the previous kernel's definition ended: its
  // includes, and the helpers a template kernel calls (a CPP GEMM
  // template's micro-kernels).
  size_t from = 0;
  for (size_t e = src.rfind("extern \"C\"", p == 0 ? 0 : p - 1); e != std::string::npos && e < p;
       e = e == 0 ? std::string::npos : src.rfind("extern \"C\"", e - 1)) {
    size_t open = src.find('{', e);
    size_t semi = src.find(';', e);
    if (open != std::string::npos && open < p && (semi == std::string::npos || open < semi)) {
      size_t close = after_closing_bracket(src, open);
      if (close != std::string::npos && close <= p) {
        from = close;
        break;
      }
    }
  }
  std::string prefix;
  for (const auto& l : cpp_text::split_lines_copy(src.substr(from, p - from))) {
    auto t = trim(l);
    if (!t.empty() && t.rfind("//", 0) != 0) {
      prefix += l + "\n";
    }
  }
  if (prefix.find("#include") == std::string::npos) {
    prefix = "#include <torch/csrc/inductor/cpp_prefix.h>\n" + prefix;
  }
  return prefix + src.substr(p, end - p) + "\n";
}

std::vector<std::string> portable_kernel_flags(const std::string& kernel_source) {
  auto cmd = recorded_command(kernel_source, "Compile cmd");
  std::vector<std::string> out;
  if (!cmd) {
    return out;
  }
  for (size_t i = 1; i < cmd->size(); ++i) {
    const std::string& a = (*cmd)[i];
    if (a == "-o" || a == "-include" || a == "-I" || a == "-L" || a == "-isystem") {
      ++i;
      continue;
    }
    if (a == "-D" && i + 1 < cmd->size()) {
      if ((*cmd)[i + 1].find('/') == std::string::npos) {
        out.push_back("-D" + (*cmd)[i + 1]);
      }
      ++i;
      continue;
    }
    bool keep = a.rfind("-O", 0) == 0 || a.rfind("-f", 0) == 0 || a.rfind("-m", 0) == 0 || a.rfind("-D", 0) == 0 ||
                a.rfind("-std=", 0) == 0 || a.rfind("-g", 0) == 0 || a.rfind("-U", 0) == 0;
    if (keep && a.find('/') == std::string::npos && a.find('\'') == std::string::npos) {
      out.push_back(a);
    }
  }
  return out;
}

std::string private_path_in(const std::string& text, const std::vector<std::string>& private_paths) {
  for (const auto& p : private_paths) {
    if (p.size() > 1 && text.find(p) != std::string::npos) {
      return p;
    }
  }
  return "";
}

}  // namespace aoti_bisect
