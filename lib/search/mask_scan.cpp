// Masked NaN/Inf: one run probing every call site after a clean run, traced to the outputs.
#include "search/mask_scan.hpp"

#include <fmt/format.h>

#include "evidence/inf_literal.hpp"
#include "evidence/reach.hpp"
#include "process/process.hpp"
#include "search/source_interpose.hpp"

namespace aoti_bisect {

namespace {

std::string read_or_empty(const Package& pkg, const std::string& entry) {
  try {
    return entry.empty() ? std::string() : pkg.read_entry(entry);
  } catch (const std::exception&) {
    return {};  // no source: every Inf counts
  }
}

}  // namespace

std::string mask_sentence(const HealedSite& h) {
  std::vector<std::string> what;
  if (h.nan_count > 0) {
    what.push_back(fmt::format("{} NaN", h.nan_count));
  }
  if (h.inf_count > 0) {
    what.push_back(fmt::format("{} Inf", h.inf_count));
  }
  std::string made = fmt::format("call site {} {} makes {}{}", h.call_index, h.kernel,
                                 what.empty() ? "NaN/Inf" : fmt::format("{}", fmt::join(what, " and ")),
                                 h.tensor.empty() ? "" : " in " + h.tensor);
  if (h.last_read_by && h.cleaned) {
    return fmt::format("{}, which call site {} {} cleans", made, *h.last_read_by, h.last_read_kernel);
  }
  if (h.last_read_by) {
    return fmt::format("{}, which reach no output (last read by call site {} {})", made, *h.last_read_by,
                       h.last_read_kernel);
  }
  return made + ", which no call site reads";
}

MaskScan scan_for_masks(JobContext& job, const BisectSetup& s) {
  MaskScan out;
  InterposeSource source;
  auto prepared = source.model_for(job, s, Predicate::nonfinite);
  if (auto* why = std::get_if<std::string>(&prepared)) {
    out.note = "not looked for: the package's call sites cannot be probed (" + *why + ")";
    return out;
  }
  ProbedModel& pm = std::get<ProbedModel>(prepared);
  const int n = static_cast<int>(pm.wrapper.call_sites.size());
  if (n == 0) {
    out.note = "not looked for: the wrapper lists no call site";
    return out;
  }
  ProbePlan plan;
  plan.ranges.push_back({1, n, ProbeMode::stats});
  ChildRequest req = search_request(s, "masks.trace", pm.model, plan, {}, "masks");
  job.recorder.begin_phase("masks", fmt::format("the outputs are clean: one run probing every one of the {} call "
                                                "sites, for NaN/Inf a later site cleans",
                                                n));
  job.recorder.plan_runs(1);
  ChildResult r = job.runs.run(req);
  if (!r.finished || interrupt_requested()) {
    out.note = "not looked for: interrupted";
    return out;
  }
  if (r.cls.kind != OutcomeKind::ok) {
    out.note = fmt::format("not read: with every call site probed the run ended {} ({})", outcome_name(r.cls.kind),
                           r.cls.first_line);
    return out;
  }
  RunTrace trace = trace_from_events(r.events);
  WrapperInfo sites = pm.wrapper;
  sites.inputs = s.wrapper.inputs.empty() ? pm.wrapper.inputs : s.wrapper.inputs;
  const std::set<std::string> by_design = inf_by_design_kernels(
      read_or_empty(s.pkg, s.model.kernel_cpp), read_or_empty(s.pkg, s.model.wrapper_cpp), pm.wrapper.call_sites);
  ReturnedBy returned = trace.launched == n ? returned_buffers(pm.wrapper) : ReturnedBy{};
  Reach reach = trace_to_outputs({&trace, r.cls.outputs, &sites, returned, by_design, r.cls.input_stats});
  out.scanned = true;
  for (const HealedSite& h : reach.healed) {
    if (!h.by_design) {
      out.masked.push_back(h);
      out.masked.back().note = mask_sentence(h);
    }
  }
  return out;
}

}  // namespace aoti_bisect
