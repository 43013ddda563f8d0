// Reading compute-sanitizer's report: each error's kind, kernel, thread, block and address, the address
// named as one of the culprit's buffers, and the memcheck command line to run.

#include "classify/sanitizer.hpp"

#include <limits>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace aoti_bisect {

namespace {

std::optional<uint64_t> hex(const std::string& s) {
  try {
    return std::stoull(s, nullptr, 16);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string extent_text(const BufferExtent& b) {
  return fmt::format("{} ({} [{}], {} bytes)", b.name, b.dtype, fmt::join(b.shape, ", "), b.bytes);
}

}  // namespace

std::vector<SanitizerError> parse_sanitizer_errors(std::string_view text, size_t limit) {
  static const std::regex header(R"(^=+\s+((Invalid|Uninitialized|Misaligned|Out-of-range|Race|Barrier)\b.*?)\s*$)");
  static const std::regex at(R"(^=+\s+at\s+(?:0x[0-9a-fA-F]+ in\s+)?([^\s+(]+))");
  static const std::regex by(R"(^=+\s+by thread (\([^)]*\)) in block (\([^)]*\)))");
  static const std::regex address(R"(^=+\s+Address (0x[0-9a-fA-F]+)\s*(.*?)\s*$)");
  static const std::regex and_is(R"(^=+\s+(and is .*?)\s*$)");
  std::vector<SanitizerError> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, header)) {
      if (out.size() >= limit) {
        break;
      }
      out.push_back({});
      out.back().what = m[1];
    } else if (out.empty()) {
      continue;
    } else if (out.back().kernel.empty() && std::regex_search(line, m, at)) {
      out.back().kernel = m[1];
    } else if (out.back().thread.empty() && std::regex_search(line, m, by)) {
      out.back().thread = m[1];
      out.back().block = m[2];
    } else if (!out.back().address && std::regex_search(line, m, address)) {
      out.back().address = hex(m[1]);
      out.back().address_note = m[2];
    } else if (std::regex_search(line, m, and_is)) {
      out.back().address_note += (out.back().address_note.empty() ? "" : "; ") + m[1].str();
    }
  }
  return out;
}

std::string describe_address(uint64_t address, const std::vector<BufferExtent>& buffers) {
  const BufferExtent* best = nullptr;
  uint64_t best_distance = std::numeric_limits<uint64_t>::max();
  std::string text;
  for (const BufferExtent& b : buffers) {
    if (b.bytes == 0) {
      continue;
    }
    const uint64_t end = b.address + b.bytes;
    if (address >= b.address && address < end) {
      return fmt::format("inside {} at byte {}", extent_text(b), address - b.address);
    }
    uint64_t distance = address >= end ? address - end : b.address - address;
    if (distance < best_distance) {
      best_distance = distance;
      best = &b;
      text = address >= end ? fmt::format("{} bytes past the end of {}", distance, extent_text(b))
                            : fmt::format("{} bytes before the start of {}", distance, extent_text(b));
    }
  }
  return best ? text : "";
}

std::string memcheck_command(const std::string& sanitizer, const std::string& kernel, bool filter_to_kernel) {
  std::string cmd =
      sanitizer + " --tool memcheck --padding 32 --error-exitcode 86 --print-limit 10 --log-file /dev/stderr";
  if (filter_to_kernel && !kernel.empty()) {
    cmd += " --kernel-name kns=" + kernel;
  }
  return cmd;
}

}  // namespace aoti_bisect
