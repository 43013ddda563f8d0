// Where a call site comes from in the model's Python source, from the stack traces a package carries.
#include "wrapper/provenance.hpp"

#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "common/text.hpp"

namespace aoti_bisect {

namespace {

// A frame of torch's own code (nn.Module, functional) or another library's:
// not where the model's author wrote the op.
bool library_frame(const std::string& file) {
  return file.find("/site-packages/") != std::string::npos || file.find("/dist-packages/") != std::string::npos ||
         file.find("/torch/nn/") != std::string::npos || file.find("/torch/_") != std::string::npos ||
         file.rfind("<", 0) == 0;
}

// The submodules a line of source calls: "b = self.block2(a)" -> {"block2"};
// "self.layers[0](x)" -> {"layers.0"}.
std::vector<std::string> called_submodules(const std::string& code) {
  std::vector<std::string> out;
  for (size_t p = code.find("self."); p != std::string::npos; p = code.find("self.", p + 5)) {
    if (p > 0 && (std::isalnum(static_cast<unsigned char>(code[p - 1])) || code[p - 1] == '_' || code[p - 1] == '.')) {
      continue;
    }
    size_t q = p + 5;
    std::string path;
    while (q < code.size()) {
      size_t s = q;
      while (q < code.size() && (std::isalnum(static_cast<unsigned char>(code[q])) || code[q] == '_')) {
        ++q;
      }
      if (q == s) {
        break;
      }
      path += (path.empty() ? "" : ".") + code.substr(s, q - s);
      if (q < code.size() && code[q] == '[') {
        size_t close = code.find(']', q);
        if (close == std::string::npos) {
          break;
        }
        path += "." + std::string(trim(std::string_view(code).substr(q + 1, close - q - 1)));
        q = close + 1;
      }
      if (q < code.size() && code[q] == '.') {
        ++q;
        continue;
      }
      break;
    }
    if (!path.empty() && q < code.size() && code[q] == '(') {
      out.push_back(path);
    }
  }
  return out;
}

}  // namespace

std::vector<PythonFrame> parse_python_stack(std::string_view stack) {
  std::vector<PythonFrame> frames;
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= stack.size();) {
    size_t end = stack.find('\n', start);
    if (end == std::string_view::npos) {
      end = stack.size();
    }
    lines.push_back(stack.substr(start, end - start));
    start = end + 1;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = trim(lines[i]);
    constexpr std::string_view file = "File \"";
    if (l.rfind(file, 0) != 0) {
      continue;
    }
    size_t close = l.find('"', file.size());
    size_t at = l.find(", line ", close == std::string_view::npos ? 0 : close);
    if (close == std::string_view::npos || at == std::string_view::npos) {
      continue;
    }
    PythonFrame f;
    f.file = std::string(l.substr(file.size(), close - file.size()));
    size_t num = at + 7;
    while (num < l.size() && std::isdigit(static_cast<unsigned char>(l[num]))) {
      f.line = f.line * 10 + (l[num] - '0');
      ++num;
    }
    constexpr std::string_view in = ", in ";
    if (size_t fn = l.find(in, num); fn != std::string_view::npos) {
      f.function = std::string(trim(l.substr(fn + in.size())));
    }
    if (i + 1 < lines.size() && trim(lines[i + 1]).rfind("File \"", 0) != 0) {
      f.code = std::string(trim(lines[i + 1]));
      ++i;
    }
    frames.push_back(std::move(f));
  }
  return frames;
}

std::string SourceLine::text() const {
  std::string where = fmt::format("{}:{}", file, line);
  if (!module.empty()) {
    where += " in " + module;
  }
  return code.empty() ? where : where + ": " + code;
}

std::vector<SourceLine> source_lines(const std::vector<std::string>& stacks) {
  std::vector<SourceLine> out;
  for (const auto& stack : stacks) {
    std::vector<PythonFrame> frames = parse_python_stack(stack);
    const PythonFrame* user = nullptr;
    std::vector<std::string> module;
    bool ambiguous = false;
    for (const auto& f : frames) {
      if (library_frame(f.file)) {
        continue;
      }
      // The submodule the frame before it called leads to this frame's
      // module; a line that calls several (`self.head(self.encoder(h))`)
      // does not say which, and the path stops there.
      if (user != nullptr && !ambiguous) {
        auto called = called_submodules(user->code);
        if (called.size() == 1) {
          module.push_back(called.front());
        } else {
          ambiguous = true;
        }
      }
      user = &f;
    }
    if (user == nullptr) {
      continue;
    }
    // The innermost user frame may call a submodule whose own frames are the
    // library's (an nn.Linear): the op is that submodule's.
    bool reaches_library = &frames.back() != user;
    if (reaches_library && !ambiguous) {
      auto called = called_submodules(user->code);
      if (called.size() == 1) {
        module.push_back(called.front());
      }
    }
    SourceLine s;
    s.file = std::filesystem::path(user->file).filename().string();
    s.line = user->line;
    s.function = user->function;
    s.code = user->code;
    s.module = join(module, ".");
    bool seen = false;
    for (const auto& o : out) {
      seen = seen || (o.file == s.file && o.line == s.line);
    }
    if (!seen) {
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::string source_text(const std::vector<SourceLine>& lines) {
  std::vector<std::string> parts;
  for (const auto& l : lines) {
    parts.push_back(l.text());
  }
  return join(parts, "; ");
}

}  // namespace aoti_bisect
