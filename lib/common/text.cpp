// Small text helpers shared by every module: trimming, joining, numbers for people and for JSON, shell
// quoting, printable and XML-escaped text, sizes such as "16G", natural order, replacing.

#include "common/text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

namespace aoti_bisect {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

std::string last_nonempty_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    auto end = line.find_last_not_of(" \t\r");
    if (end != std::string::npos) {
      last = line.substr(0, end + 1);
      last.erase(0, last.find_first_not_of(" \t"));
    }
  }
  return last;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      out += sep;
    }
    out += items[i];
  }
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::optional<std::string> nonfinite_text(double v) {
  if (std::isnan(v)) {
    return "nan";
  }
  if (std::isinf(v)) {
    return v > 0 ? "inf" : "-inf";
  }
  return std::nullopt;
}

std::string number_text(double v) {
  if (auto t = nonfinite_text(v)) {
    return *t;
  }
  return fmt::format("{:.6g}", v);
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+~") ==
                        std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

std::optional<unsigned long long> parse_size(const std::string& text) {
  std::string t = lower(std::string(trim(text)));
  if (t == "none" || t == "0") {
    return 0ULL;
  }
  double scale = 1;
  if (!t.empty() && std::string("kmgt").find(t.back()) != std::string::npos) {
    size_t power = std::string("kmgt").find(t.back()) + 1;
    for (size_t i = 0; i < power; ++i) {
      scale *= 1024;
    }
    t.pop_back();
  }
  if (t.empty() || t.find_first_not_of("0123456789.") != std::string::npos) {
    return std::nullopt;
  }
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(t, &used);
    if (used != t.size()) {
      return std::nullopt;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  double bytes = v * scale;
  if (!(bytes >= 1) || bytes > 1.8e19) {
    return std::nullopt;
  }
  return static_cast<unsigned long long>(bytes);
}

std::string printable_name(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += ch;
        }
    }
  }
  return out;
}

bool natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (!digit(a[i]) || !digit(b[j])) {
      if (a[i] != b[j]) {
        return a[i] < b[j];
      }
      ++i;
      ++j;
      continue;
    }
    size_t ie = i, je = j;
    while (ie < a.size() && digit(a[ie])) {
      ++ie;
    }
    while (je < b.size() && digit(b[je])) {
      ++je;
    }
    std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
    while (na.size() > 1 && na.front() == '0') {
      na.remove_prefix(1);
    }
    while (nb.size() > 1 && nb.front() == '0') {
      nb.remove_prefix(1);
    }
    if (na.size() != nb.size()) {
      return na.size() < nb.size();
    }
    if (na != nb) {
      return na < nb;
    }
    i = ie;
    j = je;
  }
  return a.size() - i < b.size() - j;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  if (from.empty()) {
    return text;
  }
  for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size())) {
    text.replace(p, from.size(), to);
  }
  return text;
}

}  // namespace aoti_bisect
