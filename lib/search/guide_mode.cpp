// Guide mode's search: one printing build per tested range, run once, its
// stdout read (guide_printer.cpp). The build is the package's own wrapper
// with level-2 print calls around the range's call sites, recompiled with
// its recorded commands (search/library_rebuild.hpp: each object cached on
// its own, so after the first step only the wrapper is compiled), or, where
// that cannot be done, the exported program rebuilt by Inductor with the
// printer at level 2, filtered to the range's kernel names.

#include "search/guide_mode.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "codegen/rewrite.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "evidence/inf_literal.hpp"
#include "evidence/wrapper_layout.hpp"
#include "inductor/build.hpp"
#include "package/facts.hpp"
#include "package/package.hpp"
#include "process/process.hpp"
#include "search/guide_printer.hpp"
#include "search/library_rebuild.hpp"
#include "search/search.hpp"
#include "search/search_common.hpp"
#include "search/source_exported.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One printing package, ready to run: extracted, its sites checked against
// the original wrapper's.
struct GuideBuild {
  ModelDir dir;
  std::vector<std::string> printing;  // per call site: the kernel whose blocks it prints, or ""
  std::string problem;                // why its printed output cannot be mapped; "" when it can
  bool rewrite = false;               // the package's own wrapper, rewritten
  bool failed_to_build = false;
  std::string fidelity;  // its build record's text, before the outputs were compared
  double seconds = 0;
};

// The evidence one run left about the sites it printed.
struct RunEvidence {
  RunTrace trace;
  std::string first_line;
};

fs::path package_library(const BisectSetup& s) {
  return s.original.dir / "data" / "aotinductor" / s.model.name / fs::path(s.model.shared_object).filename();
}

// The plan for rebuilding the package's own wrapper with print calls (the
// same needs as the rewrite source's), or why it cannot be rewritten.
std::variant<RebuildPlan, std::string> rewrite_plan(const JobContext& job, const BisectSetup& s) {
  if (job.device_key != "cpu") {
    return std::string("rewriting a CUDA package's wrapper is not implemented yet");
  }
  if (s.original.dir.empty() || !s.wrapper.found || s.wrapper.call_sites.empty() || s.model.wrapper_cpp.empty()) {
    return std::string("the package has no wrapper source listing its call sites");
  }
  if (s.model.kernel_cpp.empty() || s.model.shared_object.empty()) {
    return std::string("the package has no kernel source or no library to rebuild");
  }
  try {
    return plan_rebuild(LibrarySources{"", s.pkg.read_entry(s.model.wrapper_cpp), s.pkg.read_entry(s.model.kernel_cpp),
                                       package_library(s)});
  } catch (const Error& e) {
    return redact_paths(e.what());
  }
}

std::string range_text(int lo, int hi) {
  return lo == hi ? fmt::format("call site {}", lo) : fmt::format("call sites {}-{}", lo, hi);
}

class GuideSearch {
 public:
  GuideSearch(JobContext& job, const BisectSetup& s, Predicate pred, int repeats,
              std::variant<RebuildPlan, std::string> plan)
      : m_job(job), m_s(s), m_pred(pred), m_repeats(repeats) {
    if (auto* p = std::get_if<RebuildPlan>(&plan)) {
      m_plan = std::move(*p);
    } else {
      m_rewrite_why = std::get<std::string>(plan);
    }
    if (m_pred == Predicate::nonfinite && !m_s.model.kernel_cpp.empty()) {
      try {
        m_inf_by_design = inf_by_design_kernels(m_s.pkg.read_entry(m_s.model.kernel_cpp), "", m_s.wrapper.call_sites);
      } catch (const std::exception&) {
        m_inf_by_design.clear();  // no source: every Inf counts
      }
    }
  }

  Probe ask(int lo, int hi) {
    auto [b, fresh] = build_for(lo, hi);
    if (!b->problem.empty()) {
      return Probe{StepVerdict::error, std::nullopt, 0, 0, b->problem};
    }
    std::vector<Probe> answers;
    for (int r = 0; r < m_repeats; ++r) {
      ++m_run_no;
      ChildRequest creq =
          search_request(m_s, fmt::format("guide.{}.{}-{}", m_job.runs.next_search_number(), lo, hi), b->dir, {});
      creq.repeat = r;
      creq.keep_stdout = true;  // the printer's lines
      ChildResult res = m_job.runs.run(creq);
      if (!res.finished) {
        return Probe{StepVerdict::error, std::nullopt, 0, 0, "interrupted"};
      }
      m_last_ok = res.cls.kind == OutcomeKind::ok;
      if (b->rewrite) {
        std::string untrusted = compare_outputs(res, *b, fresh && r == 0, lo, hi);
        if (!untrusted.empty()) {
          return Probe{StepVerdict::error, std::nullopt, r + 1, 0, untrusted};
        }
      }
      SiteMapping mapping = map_printed_sites(parse_printer_output(res.stdout_text), b->printing);
      auto ev = std::make_shared<RunEvidence>(RunEvidence{trace_from_printer(mapping), res.cls.first_line});
      for (const auto& [site, st] : ev->trace.sites) {
        if (site >= lo && site <= hi) {
          m_evidence[site] = ev;
        }
      }
      answers.push_back(guide_answer(m_pred, m_s.kind, res.cls, mapping, lo, hi, m_inf_by_design));
    }
    return aggregate_answers(answers);
  }

  const RunEvidence* evidence(int site) const {
    auto it = m_evidence.find(site);
    return it == m_evidence.end() ? nullptr : it->second.get();
  }
  bool last_run_ok() const { return m_last_ok; }
  // Why the package's wrapper was not rewritten; "" when it was.
  const std::string& rewrite_why() const { return m_rewrite_why; }
  // Seconds of each rewritten build, in order (cache hits included).
  const std::vector<double>& rewrite_seconds() const { return m_rewrite_seconds; }
  int rewrite_hits() const { return m_rewrite_hits; }

 private:
  // The build printing the sites of [lo, hi] (rewrite), or the kernels of
  // [lo, hi] (Inductor); one per distinct range or kernel set in a job.
  std::pair<GuideBuild*, bool> build_for(int lo, int hi) {
    if (m_rewrite_why.empty()) {
      auto [it, fresh] = m_builds.try_emplace(range_text(lo, hi));
      if (!fresh) {
        return {&it->second, false};
      }
      it->second = rewrite(lo, hi);
      if (!it->second.failed_to_build || !m_rewrite_seconds.empty()) {
        return {&it->second, true};
      }
      // The first rewrite did not build: the exported program's rebuilds
      // take over for the whole search.
      m_rewrite_why = it->second.problem;
      m_builds.erase(it);
      m_job.recorder.progress().note("guide mode: the package's wrapper did not rebuild, using Inductor rebuilds: " +
                                     m_rewrite_why);
    }
    std::vector<std::string> kernels;
    for (int i = lo; i <= hi; ++i) {
      kernels.push_back(m_s.wrapper.call_sites[i - 1].kernel);
    }
    std::sort(kernels.begin(), kernels.end());
    kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
    auto [it, fresh] = m_builds.try_emplace("kernels " + join(kernels, ","));
    if (fresh) {
      it->second = inductor_rebuild(kernels);
    }
    return {&it->second, fresh};
  }

  // The package's wrapper with level-2 print calls around the call sites of
  // [lo, hi] only, recompiled with its recorded commands. Interposition
  // would need no build at all here (its hooks are switched per call site at
  // run time by the probe plan); this is for where guide mode is asked for.
  GuideBuild rewrite(int lo, int hi) {
    GuideBuild g;
    g.rewrite = true;
    std::set<int> only;
    for (int i = lo; i <= hi; ++i) {
      only.insert(m_s.wrapper.call_sites[i - 1].index);
    }
    Recorder& rec = m_job.recorder;
    auto t0 = Clock::now();
    try {
      std::string wrapper = insert_probes(m_plan->src.recorded_wrapper, m_s.wrapper, ProbeText{&only, true});
      RebuiltLibrary built =
          rebuild_library(*m_plan, wrapper, m_job.settings.cache_dir, m_job.settings.build_timeout_s);
      g.seconds = since(t0);
      m_rewrite_seconds.push_back(g.seconds);
      m_rewrite_hits += built.cache_hit ? 1 : 0;
      g.fidelity =
          fmt::format("the package's wrapper recompiled with level-2 print calls around {}", range_text(lo, hi));
      BuildRecord record{
          "guide " + range_text(lo, hi), built.library.parent_path().filename().string(),    built.cache_hit, g.seconds,
          m_s.runner_torch_version,      std::string(probe_source_name(ProbeSource::guide)), g.fidelity,      {}};
      record.objects_compiled = built.compiled;
      rec.build(record, true);
      rec.progress().note(built.cache_hit ? fmt::format("{}: found in the cache", record.purpose)
                                          : fmt::format("{}: rebuilt in {:.1f} s ({} of 3 objects compiled)",
                                                        record.purpose, g.seconds, built.compiled));
      WrapperInfo w = parse_wrapper(wrapper);
      g.problem = call_sites_differ(w, false);
      if (!g.problem.empty()) {
        return g;
      }
      g.printing = range_printing(m_s.wrapper, only);
      fs::path dir = m_job.work_dir / fmt::format("guide-{}", m_builds.size());
      g.dir = ModelDir{
          copy_package_with(m_s.original.dir, m_s.model.name, built.library, m_s.model.wrapper_cpp, wrapper, dir),
          write_model_facts(w, dir.string() + "-facts.json"),
          {}};
    } catch (const Error& e) {
      g.problem = redact_paths(e.what());
      g.failed_to_build = true;
    }
    return g;
  }

  GuideBuild inductor_rebuild(const std::vector<std::string>& kernels) {
    GuideBuild g;
    if (m_s.exported_program.empty()) {
      g.problem = needs_exported_program();
      return g;
    }
    BuildResult built;
    try {
      built = build_from_exported_program(m_job, m_s, 2, kernels);
    } catch (const ProgramRefused&) {
      throw;
    } catch (const Error& e) {
      g.problem = redact_paths(e.what());
      return g;
    }
    Recorder& rec = m_job.recorder;
    std::string purpose = "guide " + join(kernels, ",");
    rec.build({purpose,
               built.key,
               built.cache_hit,
               built.seconds,
               built.torch_version,
               std::string(probe_source_name(ProbeSource::guide)),
               "an Inductor rebuild with the level-2 printer (the package's wrapper was not rewritten: " +
                   m_rewrite_why + ")",
               {}},
              true);
    rec.progress().note(built.cache_hit ? fmt::format("{}: found in the cache", purpose)
                                        : fmt::format("{}: built in {:.1f} s", purpose, built.seconds));
    try {
      Package pkg = Package::open(built.package);
      const ModelFiles& model = pkg.select_model(pkg.models().size() == 1 ? "" : m_s.model.name);
      WrapperInfo w = pkg.wrapper_info(model);
      g.problem = call_sites_differ(w, true);
      if (!g.problem.empty()) {
        rec.call_sites_match(false, g.problem);
        return g;
      }
      if (!rec.report().builds.call_sites_match) {
        rec.call_sites_match(true, "");
      }
      g.printing = printing_kernels(pkg.read_entry(model.wrapper_cpp), w.call_sites);
      fs::path dir = m_job.work_dir / fmt::format("guide-{}", m_builds.size());
      g.dir = ModelDir{pkg.extract(dir), write_model_facts(w, dir.string() + "-facts.json")};
    } catch (const Error& e) {
      g.problem = redact_paths(e.what());
    }
    return g;
  }

  // Printed blocks are mapped by occurrence in the original call-site list:
  // the build's wrapper must launch the same kernels in the same order.
  std::string call_sites_differ(const WrapperInfo& w, bool inductor) const {
    if (inductor && w.printer_level != 2) {
      return "the rebuilt package has no level-2 printer calls";
    }
    return aoti_bisect::call_sites_differ(m_s.wrapper, w, "guide-mode build");
  }

  // Print calls do not change what the model computes: a rewritten build's
  // run that returns outputs must return the package's first run's bit for
  // bit (checksums), else the build is not trusted. Compared only when the
  // failure reproduced on every run and this run ended as the package's
  // first run did (else outputs may differ by nature; a failure that went
  // away is the search's to report).
  // `record`: this is the build's first run, its record the latest.
  std::string compare_outputs(const ChildResult& res, const GuideBuild& b, bool record, int lo, int hi) {
    const RunRecord* base = first_run_with_outputs(m_job.recorder.report(), m_s.variant);
    std::string note;
    std::string untrusted;
    if (base == nullptr || res.cls.outputs.empty()) {
      note = "outputs not compared (the runs returned none)";
    } else if (base->outcome != res.cls.kind) {
      note = fmt::format("outputs not compared (the run ended {}, the package's first run {})",
                         outcome_name(res.cls.kind), outcome_name(base->outcome));
    } else if (!m_s.deterministic) {
      note = "outputs not compared (the failure does not reproduce on every run)";
    } else if (same_outputs(base->outputs, res.cls.outputs)) {
      note = "outputs bit-identical to the package's first run (checksums)";
    } else {
      note = "outputs differ from the package's: not trusted";
      untrusted = fmt::format(
          "the guide-mode build printing {} returned outputs that differ from the package's (checksums): it is not "
          "trusted",
          range_text(lo, hi));
    }
    if (record || !untrusted.empty()) {
      m_job.recorder.fidelity(b.fidelity + "; " + note);
    }
    return untrusted;
  }

  JobContext& m_job;
  const BisectSetup& m_s;
  Predicate m_pred;
  int m_repeats = 1;
  std::string m_rewrite_why;  // why the package's wrapper is not rewritten; "" while it is
  std::optional<RebuildPlan> m_plan;
  std::vector<double> m_rewrite_seconds;
  int m_rewrite_hits = 0;
  std::map<std::string, GuideBuild> m_builds;
  std::map<int, std::shared_ptr<RunEvidence>> m_evidence;
  int m_run_no = 0;
  bool m_last_ok = false;
  std::set<std::string> m_inf_by_design;  // cpp kernels that write an infinity literal (masks)
};

// "guide mode: ..., 4 builds (0 from the cache), 6.1 s first, then 3.2 s each
// on average (...)".
std::string rewrite_summary(const std::vector<double>& seconds, int hits) {
  std::string out = fmt::format(
      "guide mode: the package's wrapper with level-2 print calls per range, {} builds ({} "
      "from the cache)",
      seconds.size(), hits);
  if (!seconds.empty()) {
    out += fmt::format(", {:.1f} s first", seconds.front());
  }
  if (seconds.size() > 1) {
    double rest = 0;
    for (size_t i = 1; i < seconds.size(); ++i) {
      rest += seconds[i];
    }
    out += fmt::format(", then {:.1f} s each on average (the kernel and weights objects from the cache)",
                       rest / static_cast<double>(seconds.size() - 1));
  }
  return out;
}

}  // namespace

BisectOutcome GuideSource::isolate(JobContext& job, const BisectSetup& s, Predicate pred, Bisection& bis) {
  Recorder& rec = job.recorder;
  int n = static_cast<int>(s.wrapper.call_sites.size());
  // With the package's wrapper rewritten, no exported program is needed.
  auto plan = rewrite_plan(job, s);
  std::string why_not_rewrite = std::holds_alternative<std::string>(plan) ? std::get<std::string>(plan) : "";
  bool can_build = why_not_rewrite.empty() || !s.exported_program.empty();
  std::string needs =
      needs_exported_program() + " (guide mode cannot print from the package's own wrapper: " + why_not_rewrite + ")";
  if (!can_build && m_fallback_reason.empty()) {
    return searched(Verdict::not_isolated, needs);
  }
  std::string prefix = m_fallback_reason.empty() ? "" : m_fallback_reason + "; fell back to guide mode; ";
  if (s.batches.size() > 1) {
    // Printed builds print every batch the run feeds, not the failing one alone.
    bis.status = search_status_name(SearchResult::Status::error);
    bis.message = prefix +
                  "guide mode cannot search a failure that needs the batches before it: its print calls "
                  "would print every batch";
    rec.bisection(bis);
    return searched(Verdict::not_isolated, bis.message);
  }
  if (n == 0 || !can_build) {
    bis.status = search_status_name(SearchResult::Status::error);
    bis.message =
        prefix + (n == 0 ? "guide mode needs the package wrapper's call-site list, and none was found" : needs);
    rec.bisection(bis);
    return searched(Verdict::not_isolated, bis.message);
  }
  Strategy strategy = job.settings.strategy;
  if (pred == Predicate::fault && job.device_key == "cpu") {
    strategy = Strategy::all;  // a CPU fault is synchronous: one printed run names the site
  } else if (strategy == Strategy::automatic) {
    strategy = Strategy::bisect;  // the manual guide, step by step: a rebuild per range
  }
  int repeats = job.settings.bisect_repeats.value_or(s.deterministic ? 1 : 3);
  int planned = planned_oracle_calls(n, strategy);
  rec.plan_runs(planned * repeats);
  bis.strategy = std::string(strategy_name(strategy));
  bis.predicate = std::string(predicate_name(pred));
  bis.variant = s.variant;
  bis.call_sites = n;
  bis.sites.clear();  // guide mode counts the wrapper's call sites, in source order
  for (const auto& cs : s.wrapper.call_sites) {
    bis.sites.push_back({cs.index, cs.kernel, std::string(kernel_kind_name(cs.kind))});
  }
  bis.planned_runs += planned * repeats;
  rec.bisection(bis);
  rec.begin_phase(
      "bisect",
      fmt::format("guide mode: {} call sites, {} search, up to {} level-2 {} and {} runs", n, bis.strategy, planned,
                  why_not_rewrite.empty() ? "wrapper rebuilds" : "Inductor rebuilds", planned * repeats));
  if (!why_not_rewrite.empty()) {
    rec.progress().note("guide mode: Inductor rebuilds, the package's wrapper cannot be rewritten: " + why_not_rewrite);
  }

  GuideSearch search(job, s, pred, repeats, std::move(plan));
  SearchResult sr = find_first_bad(n, strategy, [&](int lo, int hi) { return search.ask(lo, hi); });
  bis.message = prefix +
                (search.rewrite_why().empty()
                     ? rewrite_summary(search.rewrite_seconds(), search.rewrite_hits())
                     : fmt::format("guide mode: the package's wrapper was not rewritten ({}); {} Inductor level-2 "
                                   "builds ({} from the cache)",
                                   search.rewrite_why(), rec.report().builds.count, rec.report().builds.cache_hits)) +
                (sr.message.empty() ? "" : "; " + sr.message);
  record_search(bis, sr);
  rec.bisection(bis);
  if (interrupt_requested()) {
    return searched(Verdict::interrupted);
  }
  if (sr.status == SearchResult::Status::inconclusive) {
    return searched(Verdict::inconclusive, "the search was inconclusive: " + sr.message);
  }
  if (sr.status == SearchResult::Status::error && search.last_run_ok()) {
    return searched(Verdict::suppressed_by_instrumentation, "the failure did not reproduce in a guide-mode build");
  }
  if (sr.status != SearchResult::Status::found || !sr.first) {
    return searched(Verdict::not_isolated, "the search did not name a call site: " + sr.message);
  }
  int k = *sr.first;
  const RunEvidence* ev = search.evidence(k);
  Culprit c = build_culprit({k,
                             pred,
                             ev ? &ev->trace : nullptr,
                             ev ? &ev->trace : nullptr,
                             &s.wrapper,
                             ev && !ev->first_line.empty() ? ev->first_line : s.first_line,
                             {}});
  rec.culprit(c, std::nullopt);
  return searched(Verdict::isolated,
                  fmt::format("isolated to call site {} {} ({}) in guide mode", k, c.kernel, c.kind));
}

}  // namespace aoti_bisect
