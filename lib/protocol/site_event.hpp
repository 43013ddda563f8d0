#pragma once
// One call-site event's fields (site_begin, probe, site_end, sync_error),
// read from its line without building a JSON object: a run that probes
// 10,000 call sites has about 60,000 of them, and reading them as JSON
// objects was most of the driver's time on such a run.

#include <string>
#include <string_view>
#include <vector>

#include "protocol/values.hpp"

namespace aoti_bisect {

struct SiteEvent {
  bool has_kernel = false;
  std::string kernel;
  bool has_static = false;
  int wrapper_static = 0;            // "static": the wrapper's call site
  double clock = 0;                  // site_begin
  bool failed = false;               // site_end: the call returned an error code
  std::vector<std::string> tensors;  // site_end: the tensors the launch touched
  std::string tensor;                // probe
  std::string phase;                 // probe: "before" or "after"
  bool initialized = true;           // probe
  bool constant = false;             // probe
  bool has_stats = false;
  TensorStats stats;  // probe: as tensor_stats_from_json reads them
};

// False for a line that is not a JSON object; the fields read are kept.
bool read_site_event(std::string_view line, SiteEvent& out);

}  // namespace aoti_bisect
