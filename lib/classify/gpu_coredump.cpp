// Reading a GPU core dump as text: the CUDA driver's progress lines from a run's stderr, and cuda-gdb's
// output for the faulting kernel, block and thread.

#include "classify/gpu_coredump.hpp"

#include <regex>
#include <sstream>

#include "common/text.hpp"

namespace aoti_bisect {

namespace {

std::optional<int> to_int(const std::string& s) {
  try {
    return std::stoi(s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

template <typename Fn>
void each_line(std::string_view text, Fn fn) {
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    fn(line);
  }
}

}  // namespace

std::string kernel_name_of(std::string_view demangled) {
  std::string s(trim(demangled));
  if (size_t launch = s.find("<<<"); launch != std::string::npos) {
    s.resize(launch);
  }
  int angle = 0;
  size_t end = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') {
      ++angle;
    } else if (s[i] == '>' && angle > 0) {
      --angle;
    } else if (s[i] == '(' && angle == 0) {
      end = i;
      break;
    }
  }
  s = std::string(trim(std::string_view(s).substr(0, end)));
  // A return type before the name ("void f(int)"): the last word at depth 0.
  angle = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == '>') {
      ++angle;
    } else if (s[i] == '<' && angle > 0) {
      --angle;
    } else if (s[i] == ' ' && angle == 0) {
      return s.substr(i + 1);
    }
  }
  return s;
}

std::optional<GpuCoreDump> coredump_from_progress(std::string_view stderr_text) {
  static const std::regex exception(R"(coredump:\s+Detected an exception of type (\S+))");
  static const std::regex device(R"(coredump:\s+-\s+Device:\s+(\d+))");
  static const std::regex sm(R"(coredump:\s+-\s+SM:\s+(\d+))");
  static const std::regex pc(R"(coredump:\s+-\s+PC\s+(0x[0-9a-fA-F]+))");
  static const std::regex file(R"(coredump:\s+Writing ELF file to (.+)$)");
  GpuCoreDump d;
  bool seen = false;
  each_line(stderr_text, [&](const std::string& line) {
    if (line.find("coredump:") == std::string::npos) {
      return;
    }
    std::smatch m;
    if (d.exception.empty() && std::regex_search(line, m, exception)) {
      d.exception = m[1];
      seen = true;
    } else if (!d.device && std::regex_search(line, m, device)) {
      d.device = to_int(m[1]);
    } else if (!d.sm && std::regex_search(line, m, sm)) {
      d.sm = to_int(m[1]);
    } else if (d.pc.empty() && std::regex_search(line, m, pc)) {
      d.pc = m[1];
    } else if (std::regex_search(line, m, file)) {
      const std::string named = m[1];
      d.file = std::string(trim(named));
      seen = true;
    }
  });
  if (!seen) {
    return std::nullopt;
  }
  return d;
}

bool read_cuda_gdb_output(std::string_view text, GpuCoreDump& dump) {
  static const std::regex exception(R"(^CUDA Exception:\s+(.+?)\s*$)");
  static const std::regex triggered(R"(The exception was triggered at PC\s+(0x[0-9a-fA-F]+)\s+(.+?)\s*$)");
  static const std::regex focus(
      R"(Current focus set to CUDA kernel \d+, grid (\d+), block (\([^)]*\)), thread (\([^)]*\)), device (\d+), sm (\d+))");
  static const std::regex frame(R"(^#0\s+0x[0-9a-fA-F]+ in (.+?)(<<<\([^)]*\),\([^)]*\)>>>))");
  bool seen = false;
  each_line(text, [&](const std::string& line) {
    std::smatch m;
    if (std::regex_search(line, m, exception)) {
      dump.exception = m[1];
      seen = true;
    } else if (std::regex_search(line, m, triggered)) {
      dump.pc = m[1];
      dump.kernel = kernel_name_of(m[2].str());
      seen = true;
    } else if (std::regex_search(line, m, focus)) {
      dump.grid = m[1];
      dump.block = m[2];
      dump.thread = m[3];
      dump.device = to_int(m[4]);
      dump.sm = to_int(m[5]);
    } else if (std::regex_search(line, m, frame)) {
      if (dump.kernel.empty()) {
        dump.kernel = kernel_name_of(m[1].str());
      }
      dump.launch = m[2];
      seen = true;
    }
  });
  dump.read_by_debugger = dump.read_by_debugger || (seen && !dump.kernel.empty());
  return seen && !dump.kernel.empty();
}

}  // namespace aoti_bisect
