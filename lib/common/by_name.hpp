#pragma once
// The one lookup of a value by its name in a table (an enum's names: outcome
// kinds, strategies, probe sources, probe modes): rows that are names
// themselves, or rows with a `name` member.

#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace aoti_bisect {

// `value(row)` of the first row of `table` named `name`; nullopt when none is.
template <class Table, class Value>
auto find_by_name(const Table& table, std::string_view name, Value value)
    -> std::optional<std::decay_t<decltype(value(*std::begin(table)))>> {
  for (const auto& row : table) {
    if constexpr (std::is_convertible_v<decltype(row), std::string_view>) {
      if (std::string_view(row) == name) {
        return value(row);
      }
    } else if (row.name == name) {
      return value(row);
    }
  }
  return std::nullopt;
}

}  // namespace aoti_bisect
