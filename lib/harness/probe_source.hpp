#pragma once
// Where the probes of a kernel search come from (--source), one table: the
// source of the option's names, help and validation, of the settings and of
// the names the report gives each source (bisection.source).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

enum class ProbeSource {
  automatic,         // interpose, then rewrite, then exported_program, then guide
  interpose,         // hooks bound into the package's own library; no rebuild
  rewrite,           // the package's wrapper.cpp with probe calls, recompiled with its recorded commands
  exported_program,  // an Inductor build of the exported program with the printer
  guide,             // a rebuild per step that prints kernel inputs (as --rebuild-per-step)
};

struct ProbeSourceInfo {
  ProbeSource source;
  std::string_view name;  // as --source spells it and the report names it
  std::string_view help;  // one line for --help
};
const std::vector<ProbeSourceInfo>& probe_source_table();
std::string_view probe_source_name(ProbeSource source);
std::optional<ProbeSource> probe_source_from_name(std::string_view name);

}  // namespace aoti_bisect
