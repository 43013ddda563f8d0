#pragma once
// Small text helpers shared by every module.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

// Without leading and trailing white space (spaces, tabs, CR, LF).
std::string_view trim(std::string_view s);

// The last line of `text` that holds more than white space, trimmed ("" if none).
std::string last_nonempty_line(const std::string& text);

std::string join(const std::vector<std::string>& items, std::string_view sep);

std::string lower(std::string s);

// "nan", "inf" or "-inf" for a non-finite value; nullopt for a finite one.
// JSON has no literal for them, so every writer spells them this way.
std::optional<std::string> nonfinite_text(double v);

// A number for people: "1.5" (six significant digits), "nan", "inf", "-inf".
std::string number_text(double v);

// Quoted for a POSIX shell when it needs to be ("it's" -> 'it'\''s').
std::string shell_quote(const std::string& s);

// One line whatever the text holds (a zip entry's name, a YAML key, a
// yaml-cpp message): newlines as \n, other control characters as \xNN.
std::string printable_name(const std::string& text);

// XML 1.0 text or attribute value. Control bytes XML 1.0 cannot carry at all
// become "\xNN"; tab, newline and CR become character references so that
// attribute normalization keeps them.
std::string xml_escape(const std::string& text);

// "512M", "16G", "1.5G", "2T", "4096" (bytes), "none" or "0" (no limit: 0).
// nullopt for anything else.
std::optional<unsigned long long> parse_size(const std::string& text);

// "x2" < "x10": runs of digits compare as numbers (leading zeros aside),
// the rest byte by byte.
bool natural_less(std::string_view a, std::string_view b);

// `text` with every `from` (not empty) replaced by `to`, left to right;
// what `to` brings in is not searched again.
std::string replace_all(std::string text, std::string_view from, std::string_view to);

}  // namespace aoti_bisect
