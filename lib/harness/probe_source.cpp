// The probe sources' table (--source): each source's name and help, and its lookup by name.

#include "harness/probe_source.hpp"

#include "common/by_name.hpp"

namespace aoti_bisect {

const std::vector<ProbeSourceInfo>& probe_source_table() {
  static const std::vector<ProbeSourceInfo> table = {
      {ProbeSource::automatic, "auto", "interpose, then rewrite, then exported_program, then guide"},
      {ProbeSource::interpose, "interpose", "hooks bound into the package's own library; no rebuild"},
      {ProbeSource::rewrite, "rewrite",
       "the package's wrapper.cpp with probe calls, recompiled with its recorded commands"},
      {ProbeSource::exported_program, "exported_program", "an Inductor build of the exported program with the printer"},
      {ProbeSource::guide, "guide", "as --rebuild-per-step"},
  };
  return table;
}

std::string_view probe_source_name(ProbeSource source) {
  for (const auto& info : probe_source_table()) {
    if (info.source == source) {
      return info.name;
    }
  }
  return "auto";
}

std::optional<ProbeSource> probe_source_from_name(std::string_view name) {
  return find_by_name(probe_source_table(), name, [](const auto& info) { return info.source; });
}

}  // namespace aoti_bisect
