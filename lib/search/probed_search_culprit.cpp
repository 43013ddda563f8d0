// The evidence run of a run-time-probe search and the culprit it makes:
// its self-check (or, for wrong values, the confirmation), where the
// outputs' NaN/Inf come from, the root cause, the saved tensors and the
// replay (probed_search.hpp).

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "classify/signature.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "evidence/producer.hpp"
#include "evidence/reach.hpp"
#include "evidence/root_cause.hpp"
#include "evidence/self_check.hpp"
#include "protocol/runner.hpp"
#include "repro/replay.hpp"
#include "search/probed_search.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

// The evidence run: save probes on the culprit, its tensors before and after.
// For NaN/Inf every other site is probed too, so that the run shows where
// the outputs' NaN/Inf come from; when that is another site than `k` (what
// `k` made was healed), the evidence is taken again there (`moved`).
BisectOutcome CulpritStage::culprit(int k, const ChildResult& trace, bool moved, bool confirm) {
  fs::path repro_dir = m_job.settings.out_dir / "repro";
  clear_repro_folder(repro_dir);
  ChildResult evidence = child("evidence", evidence_plan(k, confirm, repro_dir));
  return culprit_evidence(k, trace, moved, confirm, evidence, repro_dir);
}

// The evidence run's plan: the culprit saved, the self-check's sites (for
// NaN/Inf every other launched site) probed.
ProbePlan CulpritStage::evidence_plan(int k, bool confirm, const fs::path& repro_dir) {
  ProbePlan plan;
  if (confirm && m_pred == Predicate::mismatch && k > 1) {
    plan.ranges.push_back({k - 1, k - 1, ProbeMode::stats});  // the neighbour, for the confirmation
    add_consumers(plan, k - 1, k - 1);
  }
  if (k > 1 && m_pred != Predicate::mismatch) {
    // The self-check: every site before the culprit probed in the same run.
    // Statistics for faults too: the bad index's producer is followed back through them.
    plan.ranges.push_back({1, k - 1, ProbeMode::stats});
    add_consumers(plan, 1, k - 1);
  }
  if (m_pred == Predicate::nonfinite && k < m_trace.launched) {
    plan.ranges.push_back({k + 1, m_trace.launched, ProbeMode::stats});
  }
  plan.ranges.push_back({k, k, ProbeMode::save});
  add_consumers(plan, k, k);
  plan.save_dir = fs::absolute(repro_dir);
  return plan;
}

// What the evidence run shows: the culprit moved where the outputs' NaN/Inf
// come from, the self-check, the culprit built and its root cause read.
BisectOutcome CulpritStage::culprit_evidence(int k, const ChildResult& trace, bool moved, bool confirm,
                                             ChildResult& evidence, const fs::path& repro_dir) {
  if (!evidence.finished) {
    m_job.recorder.bisection(m_bis);
    return searched(Verdict::interrupted);
  }
  m_bis.runs += 1;
  const RunTrace& history = m_trace;
  RunTrace ev = trace_from_events(evidence.events);
  for (auto& [site, st] : ev.sites) {  // the same run order: the trace run's settled call sites
    if (const SiteTrace* h = m_trace.site(site); h && h->kernel == st.kernel) {
      st.wrapper_site = h->wrapper_site;
    }
  }
  if (confirm && m_pred == Predicate::mismatch) {
    if (auto why = confirm_in_evidence(k, evidence)) {
      m_job.recorder.bisection(m_bis);
      return searched(Verdict::inconclusive, "the search was inconclusive: " + *why);
    }
  }
  const WrapperInfo& names = m_s.wrapper.inputs.empty() ? m_model.wrapper : m_s.wrapper;
  WrapperInfo sites = m_model.wrapper;
  sites.inputs = names.inputs;
  std::optional<Reach> reach;
  if (m_pred == Predicate::nonfinite && !ev.counts_are_flags) {
    reach =
        trace_to_outputs({&ev, evidence.cls.outputs, &sites, m_returned_by, m_inf_by_design, evidence.cls.input_stats});
    record_reach(m_bis, *reach);
    if (reach->followed && reach->culprit && *reach->culprit != k && !moved) {
      m_job.recorder.progress().note(fmt::format(
          "the search named call site {} (the first to make NaN or Inf its inputs did not hold), but the outputs' "
          "NaN/Inf come from call site {}: taking the evidence there",
          k, *reach->culprit));
      m_job.recorder.bisection(m_bis);
      return culprit(*reach->culprit, trace, true, confirm);
    }
  }
  if (auto failed = self_check(m_bis, {m_pred, k, &ev, reach ? &*reach : nullptr, m_trace.launched, &m_returned_by,
                                       m_constant_sources, &m_inf_by_design, m_job.device_key == "cpu"})) {
    m_job.recorder.bisection(m_bis);
    return searched(Verdict::not_isolated, *failed);
  }
  if (confirm && m_pred != Predicate::mismatch) {  // the self-check was the confirmation
    // The step covers what the self-check saw: every launched call site where
    // the outputs' NaN/Inf were traced back, else 1..k (the first to make them).
    int hi = reach && reach->culprit && *reach->culprit == k ? std::max(k, m_trace.launched) : k;
    m_bis.steps.push_back({1, hi, "confirm", "reproduces", 1, 1, "the evidence run's self-check: " + m_bis.self_check});
  }
  Culprit c =
      build_culprit({k, m_pred, &ev, &history, &sites,
                     evidence.cls.first_line.empty() ? m_s.first_line : evidence.cls.first_line, m_returned_by});
  explain_root_cause(c, ev);
  if (m_pred == Predicate::mismatch) {
    const ToleranceTable& tol = m_job.settings.tolerances;
    auto sites = compare_sites(evidence.events, tol, m_returned_value, &m_write_order);
    explain_divergence(c, sites, trace.events, m_model.node_map, m_model.node_info, m_returned_value);
    note_honest_error(m_bis, sites);
  }
  if (m_pred == Predicate::fault && m_job.device_key == "cuda" && !aim_sanitizer(k, c)) {
    return searched(Verdict::interrupted);
  }
  m_job.recorder.bisection(m_bis);
  return isolated(k, c, evidence, ev, names, repro_dir);
}

// The culprit recorded with its reproducer (the saved tensors, the
// one-kernel replay written), the answer told, and the replay that explains
// it left for the job's end.
BisectOutcome CulpritStage::isolated(int k, Culprit& c, ChildResult& evidence, const RunTrace& ev,
                                     const WrapperInfo& names, const fs::path& repro_dir) {
  Reproducer repro;
  repro.dir = display_path(repro_dir);
  for (const auto& e : evidence.events.of({EventKind::saved})) {
    repro.files.push_back(fs::path(e.value("path", "")).filename().string());
  }
  repro.command = m_job.recorder.report().reproduce_command;
  // Under the poison variant the NaN are not bad arithmetic: the verdict says so.
  std::string unwritten = c.unwritten.empty() ? "" : ", which reads memory no kernel wrote";
  std::string reason = fmt::format("isolated to {} ({}){}", site_label(k, c.kernel), c.kind, unwritten);
  if (m_s.on_culprit) {
    // Named: the replay below only explains it.
    m_s.on_culprit(m_announced && *m_announced != k
                       ? fmt::format("{} (the search named call site {} first)", reason, *m_announced)
                       : reason);
  }
  const SiteTrace* at = ev.site(k);
  ReplaySpec spec{repro_dir,
                  m_model.model.dir,
                  m_s.model.name,
                  k,
                  at ? at->wrapper_site : 0,
                  std::string(predicate_name(m_pred)),
                  &c,
                  evidence.events.only({EventKind::saved}, k),
                  m_job.settings.load_libraries};
  evidence.events.clear();  // read: not held through the matrix and the replay (16 MB at 10,000 call sites)
  const auto& ran = m_job.recorder.report().inputs;  // in the flat order the wrapper's inputs take
  for (const auto& in : names.inputs) {
    if (in.index >= 0 && static_cast<size_t>(in.index) < ran.size() && !in.name.empty()) {
      spec.input_sizes[in.name] = ran[static_cast<size_t>(in.index)].shape;
      spec.input_strides[in.name] = ran[static_cast<size_t>(in.index)].strides;
    }
  }
  ReplayResult replay = write_replay(spec);
  repro.replay = replay.written ? display_path(repro_dir / "replay") : "";
  repro.replay_note = replay.note;
  m_job.recorder.culprit(c, repro);
  BisectOutcome out = searched(Verdict::isolated, reason);
  JobContext& job = m_job;
  out.explain_later = [&job, pred = m_pred, replay, repro_dir] {
    const Report& r = job.recorder.report();
    if (!r.culprit) {
      return;
    }
    Culprit explained = *r.culprit;
    explain_intermediates(job, pred, explained, replay, repro_dir);
    job.recorder.culprit(std::move(explained), r.repro);
  };
  return out;
}

// automatic, wrong values: the site the trace run named must be named
// again by the evidence run, which probes it and its neighbour before it
// (for faults and NaN/Inf the evidence run's self-check confirms).
std::optional<std::string> CulpritStage::confirm_in_evidence(int k, const ChildResult& evidence) {
  int lo = m_pred == Predicate::mismatch ? std::max(1, k - 1) : 1;
  Probe p = answer(evidence, lo, k);
  bool again = p.verdict == StepVerdict::reproduces && p.exact == k;
  std::string note = again ? "the evidence run names it again" : p.note;
  m_bis.steps.push_back({lo, k, "confirm",
                         std::string(step_verdict_name(again ? p.verdict : StepVerdict::inconclusive)), 1,
                         again ? 1 : 0, redact_paths(note)});
  if (again) {
    return std::nullopt;
  }
  std::string shown = p.exact ? fmt::format("call site {}", *p.exact)
                              : (p.note.empty() ? std::string("no bad site in 1-") + std::to_string(k) : p.note);
  m_bis.status = search_status_name(SearchResult::Status::inconclusive);
  m_bis.message =
      fmt::format("the run probing every call site named call site {}, the evidence run showed {}", k, shown);
  return m_bis.message;
}

// Names constants and graph inputs as the user knows them, compares an
// out-of-range index with the tensor it indexes (from the kernel's own
// source in the package), and writes the root-cause sentence.
void CulpritStage::explain_root_cause(Culprit& c, const RunTrace& evidence) {
  const WrapperInfo& w = m_model.wrapper;
  WrapperInfo named = w;
  if (named.constant_info.empty()) {
    named.constant_info = m_s.wrapper.constant_info;
  }
  if (named.inputs.empty()) {
    named.inputs = m_s.wrapper.inputs;
  }
  const SiteTrace* h = m_trace.site(c.call_index);
  int at = h && h->wrapper_site > 0 ? h->wrapper_site : c.call_index;
  const CallSite* site =
      at >= 1 && static_cast<size_t>(at) <= w.call_sites.size() && w.call_sites[at - 1].kernel == c.kernel
          ? &w.call_sites[at - 1]
          : nullptr;
  std::string definition;
  if (c.kind == "cpp" && !m_s.model.kernel_cpp.empty()) {
    try {
      definition = kernel_definition(m_s.pkg.read_entry(m_s.model.kernel_cpp), c.kernel);
    } catch (const std::exception&) {
      definition.clear();  // no source, no index analysis
    }
  }
  auto wild = wild_index(c, definition, site);
  if (wild) {  // the index it reads is the bad input, whatever else looked odd
    c.producer = walk_producer_back(
        producer_of(wild->index_tensor,
                    fmt::format("holds {}, outside the {} rows of {}", wild->value, wild->bound, wild->indexed_tensor),
                    c.call_index, m_trace, named),
        wild->bound, evidence, m_trace, named);
  }
  annotate_origins(c, named);
  c.root_cause = root_cause(c, m_pred, wild, named, index_bound_of(m_s.first_line));
}

// The first bad probed site comes after code that ran without probes: what
// it shows may have been made there. Never isolated past a blind spot.
BisectOutcome CulpritStage::blind_spot(int k, const BlindSpot& spot) {
  std::string kernel = m_trace.site(k) ? m_trace.site(k)->kernel : "";
  m_bis.status = k_blind_spot_status;
  m_bis.message = fmt::format(
      "the first bad probed site is call site {} {}, but call sites without probes lie before it, {}: {}", k, kernel,
      describe(spot),
      spot.outside_control_flow
          ? "the printer probes nothing of theirs before the launch (an extern call whose tensor arguments are all "
            "views gets probes only after it, on the outputs it creates), so what they read is unseen"
          : "the printer does not probe inside control flow such as torch.cond branches");
  m_job.recorder.bisection(m_bis);
  m_job.recorder.builds_note("unprobed call sites " + describe(spot));
  return searched(
      Verdict::not_isolated,
      fmt::format("not isolated: call sites without probes lie {}, before the first bad probed site (call site "
                  "{} {}); the bad values may come from there",
                  describe(spot), k, kernel));
}

}  // namespace aoti_bisect
