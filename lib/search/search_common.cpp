// What the searches of lib/search share: the fidelity checks' reference run,
// the bit-for-bit comparison of two runs' outputs, a search folded into the
// bisection record, and the line that asks for the exported program.

#include "search/search_common.hpp"

#include <algorithm>

#include "common/files.hpp"

namespace aoti_bisect {

void record_search(Bisection& bis, const SearchResult& sr) {
  bis.runs += sr.runs;
  bis.status = std::string(search_status_name(sr.status));
  for (const auto& st : sr.steps) {
    bis.steps.push_back({st.lo, st.hi, st.purpose, std::string(step_verdict_name(st.probe.verdict)), st.probe.runs,
                         st.probe.agreeing, redact_paths(st.probe.note)});
  }
}

const RunRecord* first_run_with_outputs(const Report& report, const std::string& variant) {
  auto base =
      std::find_if(report.runs.begin(), report.runs.end(), [&](const RunRecord& r) { return r.variant == variant; });
  return base == report.runs.end() || base->outputs.empty() ? nullptr : &*base;
}

bool same_outputs(const std::vector<TensorStats>& a, const std::vector<TensorStats>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const TensorStats& x, const TensorStats& y) { return x.checksum == y.checksum; });
}

std::string needs_exported_program() {
  return "naming the kernel needs the exported program: give --exported-program EP.pt2 (torch.export.save of the "
         "same model), or a package that holds it (package_pt2)";
}

}  // namespace aoti_bisect
