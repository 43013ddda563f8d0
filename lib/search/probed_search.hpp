#pragma once
// The shared search of a run-time-probe source (probed_search.cpp: the
// trace run and the search steps; probed_search_culprit.cpp: the evidence
// run and the culprit it makes; probed_search_divergence.cpp: outputs that
// differ between runs; probed_search_sanitizer.cpp: a memcheck run aimed at
// a GPU fault's culprit; probed_search_intermediates.cpp: the culprit's
// replay with its intermediates checked; probed_search_package_alone.cpp:
// wrong values without the exported program). Internal to lib/search.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

#include "bisect/bisect.hpp"
#include "evidence/evidence.hpp"
#include "evidence/wrapper_layout.hpp"
#include "repro/replay.hpp"
#include "search/instrumentation.hpp"

namespace aoti_bisect {

inline std::string site_label(int site, const std::string& kernel) {
  return fmt::format("call site {} {}", site, kernel);
}

inline void note_honest_error(Bisection& bis, const std::vector<SiteCompare>& sites) {
  auto h = largest_within(sites);
  if (h && (!bis.largest_within || h->ratio > bis.largest_within->ratio)) {
    bis.largest_within = h;
  }
}

// What every search of a probed model shares: the job, the setup, the
// bisection record it fills, the probed model, its runs (child(), the one
// place a search run's ChildRequest is made) and the trace it read. Each
// search is a class of its own over it: ProbedSearch (the trace run and the
// halving, then CulpritStage's evidence run), PairSearch (outputs that
// differ between runs) and PackageAloneSearch (wrong values without the
// exported program); search_probed_model picks one.
class SearchRuns {
 protected:
  SearchRuns(JobContext& job, const BisectSetup& s, Predicate pred, Bisection& bis, ProbedModel model);

  // `node_reference`: the values the probes compare with (default: the
  // model's per-node eager values, for runs that compare values); `env`:
  // variables set over the search's environment (a memcheck run's).
  ChildResult child(const std::string& purpose, const ProbePlan& plan,
                    const std::filesystem::path& node_reference = {},
                    const std::map<std::string, std::string>& env = {});
  // The id the next child() with this purpose gets (bisect.N.purpose).
  std::string next_run_id(const std::string& purpose) const;
  // The run's only call site as the culprit (probed_search_package_alone.cpp).
  // `compared`: "" without the exported program, else why its eager values
  // named no call site (the only candidate still stands: never a worse
  // answer with the exported program than without it).
  BisectOutcome package_only_site(const WrapperInfo& names, const std::string& compared);
  // The cpp kernels that compute with an infinity literal (masks), noted.
  void note_inf_by_design();
  // The probes of the first site that shows each buffer an extern call in
  // [lo, hi] returns (its value is seen only there).
  void add_consumers(ProbePlan& plan, int lo, int hi) const;
  // One run's answer for [lo, hi]. `read`: the run's trace as already read
  // from its events (which may be gone).
  Probe answer(const ChildResult& res, int lo, int hi, const RunTrace* read = nullptr);

  JobContext& m_job;
  const BisectSetup& m_s;
  Predicate m_pred;
  Bisection& m_bis;
  ProbedModel m_model;
  RunTrace m_trace;  // the trace run, parsed once
  int m_run_no = 0;
  int m_repeats = 1;
  std::map<std::string, int> m_returned_by;     // buffer -> the extern call that creates it (also reuse names)
  std::map<std::string, int> m_returned_value;  // ... only names whose graph node is that call's output
  std::map<int, int> m_consumers;               // that call -> the first site that shows the buffer
  WriteOrder m_write_order;                     // mismatch: buffers that hold several graph nodes in turn
  bool m_constant_sources = false;              // NaN/Inf in constants count as entering at their first reader
  std::set<std::string> m_inf_by_design;        // cpp kernels that compute with an infinity literal (masks)
  // automatic: the trace run probed every call site (values; a CPU fault
  // needs none), so it answers the search's first question, [1, n], once
  // per pass; the evidence run confirms the site it names.
  bool m_trace_answers = false;
  bool m_trace_reused = false;  // the trace is the job's first run (BisectSetup::first_trace)
  bool m_trace_answer_unused = false;
  std::optional<int> m_announced;  // the call site told to on_found, before the evidence run
  std::shared_ptr<const ChildResult> m_trace_run;
  std::unique_ptr<RunTrace> m_trace_run_trace;  // its trace as read, kept only where the wrapper has branches to settle
};

// The culprit a search named, confirmed by its evidence run and explained
// (probed_search_culprit.cpp; a GPU fault's memcheck run:
// probed_search_sanitizer.cpp).
class CulpritStage : protected SearchRuns {
 protected:
  using SearchRuns::SearchRuns;

  BisectOutcome culprit(int k, const ChildResult& trace, bool moved = false, bool confirm = false);
  ProbePlan evidence_plan(int k, bool confirm, const std::filesystem::path& repro_dir);
  BisectOutcome culprit_evidence(int k, const ChildResult& trace, bool moved, bool confirm, ChildResult& evidence,
                                 const std::filesystem::path& repro_dir);
  std::optional<std::string> confirm_in_evidence(int k, const ChildResult& evidence);
  BisectOutcome isolated(int k, Culprit& c, ChildResult& evidence, const RunTrace& ev, const WrapperInfo& names,
                         const std::filesystem::path& repro_dir);
  BisectOutcome blind_spot(int k, const BlindSpot& spot);
  void explain_root_cause(Culprit& c, const RunTrace& evidence);
  // A fault isolated on a GPU: one memcheck run aimed at the culprit. False
  // when interrupted.
  bool aim_sanitizer(int k, Culprit& c);
};

// The search step by step (probed_search.cpp): the trace run, what it shows
// checked, the call sites mapped, the halving, then the culprit.
class ProbedSearch : protected CulpritStage {
 public:
  ProbedSearch(JobContext& job, const BisectSetup& s, Predicate pred, Bisection& bis, ProbedModel model)
      : CulpritStage(job, s, pred, bis, std::move(model)) {}

  BisectOutcome run();

 private:
  // run()'s steps, in order.
  void read_trace(const std::shared_ptr<ChildResult>& trace, int n_static);
  std::optional<BisectOutcome> check(const ChildResult& trace, int n_static);
  void map(const std::shared_ptr<ChildResult>& trace, int n_static);
  SearchResult find(Strategy strategy, bool& answered);
  std::optional<BisectOutcome> read_search(const SearchResult& sr, const ChildResult& trace, bool answered);
  void announce(int k);
  std::optional<BisectOutcome> check_trace(const ChildResult& trace, int n_static);
  std::optional<BisectOutcome> check_fidelity(const ChildResult& trace);
  void link_returned(const ChildResult& trace, int n_static);
  void map_sites(const ChildResult& trace);
  Probe ask(int lo, int hi);
  Strategy choose_strategy(int n_static);
  void plan_search(Strategy strategy, int n_static, int runs_before);
  ChildResult trace_run(int n_static, Strategy& strategy);
  bool reuses_first_run(Strategy strategy) const;
  std::optional<BisectOutcome> not_found(const SearchResult& sr, int n);
  std::optional<BisectOutcome> from_the_data(const SearchResult& sr, const ChildResult& trace, bool answered);
};

// Outputs that differ between runs of the same inputs: two probed runs
// compared call site by call site (probed_search_divergence.cpp).
class PairSearch : protected SearchRuns {
 public:
  PairSearch(JobContext& job, const BisectSetup& s, Predicate pred, Bisection& bis, ProbedModel model)
      : SearchRuns(job, s, pred, bis, std::move(model)) {}

  BisectOutcome run();

 private:
  BisectOutcome diverged_at(int k, const SiteTrace& sa, const SiteTrace& sb, const std::vector<std::string>& differs);
  bool measure_run_to_run(int k, Culprit& c);
};

// Wrong values without the exported program: a constant holding NaN/Inf,
// or the only call site (probed_search_package_alone.cpp).
class PackageAloneSearch : protected SearchRuns {
 public:
  PackageAloneSearch(JobContext& job, const BisectSetup& s, Predicate pred, Bisection& bis, ProbedModel model)
      : SearchRuns(job, s, pred, bis, std::move(model)) {}

  BisectOutcome run();

 private:
  // Call site k, the first to read a constant holding NaN (its probe `p`).
  BisectOutcome nan_constant(int k, const SiteTrace& site, const ProbeStats& p, const WrapperInfo& names);
};

// The search a probed model gets: the pair search for outputs that differ
// between runs, the package-alone search for wrong values without the
// exported program's node map, else the step search.
BisectOutcome search_probed_model(JobContext& job, const BisectSetup& setup, Predicate pred, Bisection& bis,
                                  ProbedModel model);

// The culprit's cause from its replay with every intermediate checked
// (repro/replay --intermediates, probed_search_intermediates.cpp): a NaN/Inf
// culprit that is one of Inductor's C++ kernels.
void explain_intermediates(JobContext& job, Predicate pred, Culprit& c, const ReplayResult& replay,
                           const std::filesystem::path& repro_dir);

}  // namespace aoti_bisect
