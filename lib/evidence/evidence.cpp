// The evidence model: the predicate for each failure kind, a RunTrace read from the runner's events,
// the answer to each search step, and the culprit built from the evidence run.

#include "evidence/evidence.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "classify/signature.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "evidence/producer.hpp"
#include "evidence/unwritten.hpp"
#include "protocol/runner.hpp"
#include "protocol/site_event.hpp"
#include "protocol/values.hpp"
#include "wrapper/provenance.hpp"
#include "wrapper/wrapper_text.hpp"

namespace aoti_bisect {

const std::vector<PredicateInfo>& predicate_table() {
  static const std::vector<PredicateInfo> table = {
      {Predicate::fault, "fault", "launch"},
      {Predicate::nonfinite, "nonfinite", "after_launch"},
      {Predicate::mismatch, "mismatch", "after_launch"},
      {Predicate::divergence, "divergence", "after_launch"},
      {Predicate::unsupported, "unsupported", ""},
  };
  return table;
}

std::string_view predicate_name(Predicate p) {
  for (const auto& info : predicate_table()) {
    if (info.predicate == p) {
      return info.name;
    }
  }
  return "unsupported";
}

Predicate predicate_for(OutcomeKind kind) {
  switch (kind) {
    case OutcomeKind::nonfinite: return Predicate::nonfinite;
    case OutcomeKind::mismatch: return Predicate::mismatch;
    case OutcomeKind::input_mismatch:
    case OutcomeKind::nondeterministic: return Predicate::divergence;
    case OutcomeKind::ok: return Predicate::unsupported;
    default: return Predicate::fault;
  }
}

const ProbeStats* SiteTrace::find(const std::string& tensor) const {
  for (const auto& t : tensors) {
    if (t.tensor == tensor) {
      return &t;
    }
  }
  return nullptr;
}

const SiteTrace* RunTrace::site(int k) const {
  auto it = sites.find(k);
  return it == sites.end() ? nullptr : &it->second;
}

namespace {

// Call-site events' lines [from, to) read into SiteEvents, in order. Lines
// are independent: a long trace (10,000 call sites are about 60,000 lines)
// is read by a few threads, each a contiguous share.
std::vector<SiteEvent> read_site_events(const Events& events, const std::vector<size_t>& lines, size_t from,
                                        size_t to) {
  std::vector<SiteEvent> out(to - from);
  auto read = [&](size_t a, size_t b) {
    for (size_t j = a; j < b; ++j) {
      (void)read_site_event(events.line(lines[from + j]), out[j]);  // not JSON: an event without fields
    }
  };
  constexpr size_t k_lines_per_thread = 4096;
  const size_t n = out.size();
  const size_t threads = std::min<size_t>(
      {std::max(1u, std::thread::hardware_concurrency()), 8, (n + k_lines_per_thread - 1) / k_lines_per_thread});
  if (threads <= 1) {
    read(0, n);
    return out;
  }
  std::vector<std::thread> pool;
  const size_t share = (n + threads - 1) / threads;
  for (size_t a = share; a < n; a += share) {
    pool.emplace_back(read, a, std::min(n, a + share));
  }
  read(0, std::min(n, share));
  for (auto& th : pool) {
    th.join();
  }
  return out;
}

}  // namespace

RunTrace trace_from_events(const Events& events) {
  RunTrace t;
  int last_begun = 0;
  auto range = events.of(
      {EventKind::probes_missing, EventKind::site_begin, EventKind::site_end, EventKind::probe, EventKind::sync_error});
  std::vector<size_t> lines;
  for (auto at = range.begin(); at != range.end(); ++at) {
    if (events.kind(at.index()) == EventKind::probes_missing) {
      t.probes_missing = true;
    } else {
      lines.push_back(at.index());
    }
  }
  // Read in chunks, so that the lines read at once (a SiteEvent each) stay
  // a bounded share of the driver's memory.
  constexpr size_t k_chunk = 16384;
  std::vector<SiteEvent> read;
  SiteTrace* at_site = nullptr;  // the site of the line before: a site's lines come together, sites in order
  for (size_t j = 0; j < lines.size(); ++j) {
    if (j % k_chunk == 0) {
      read = read_site_events(events, lines, j, std::min(lines.size(), j + k_chunk));
    }
    const size_t i = lines[j];
    EventKind kind = events.kind(i);
    SiteEvent& e = read[j % k_chunk];
    int k = events.site(i);
    if (at_site == nullptr || at_site->site != k) {
      at_site = &t.sites.try_emplace(t.sites.lower_bound(k), k)->second;
      at_site->site = k;
    }
    SiteTrace& s = *at_site;
    if (e.has_kernel) {
      s.kernel = std::move(e.kernel);
    }
    if (kind == EventKind::site_begin) {
      if (e.has_static) {
        s.wrapper_site = e.wrapper_static;
      }
      s.began_at = e.clock;
      s.began = true;
      last_begun = k;
      t.launched = std::max(t.launched, k);
    } else if (kind == EventKind::site_end) {
      // A call that returned an error code (ATen's check inside a C-shim
      // call) is where the run stopped, as a fault inside it would be.
      s.ended = !e.failed;
      s.failed = !s.ended;
      s.touched = std::move(e.tensors);
    } else if (kind == EventKind::sync_error) {
      t.sync_error = k;
    } else {
      const std::string& tensor = e.tensor;
      auto it = std::find_if(s.tensors.begin(), s.tensors.end(),
                             [&](const ProbeStats& probe) { return probe.tensor == tensor; });
      if (it == s.tensors.end()) {
        it = s.tensors.insert(it, ProbeStats{tensor, true, std::nullopt, std::nullopt});
      }
      ProbeStats* p = &*it;
      t.poisoned = t.poisoned || e.stats.unwritten >= 0;
      if (e.constant) {
        p->origin = "constant";
      }
      if (e.phase == "before") {
        p->initialized = e.initialized;
        p->before = std::move(e.stats);
      } else {
        p->after = std::move(e.stats);
      }
    }
  }
  for (auto& [k, s] : t.sites) {
    for (auto& p : s.tensors) {
      p.initialized = p.initialized && p.before.has_value();
    }
  }
  if (last_begun > 0 && !t.sites[last_begun].ended) {
    t.unfinished = last_begun;
  }
  return t;
}

namespace {
constexpr double k_stuck_floor_s = 1.0;  // a first call's thread-pool start-up alone can take tens of ms
}  // namespace

std::optional<std::string> slow_not_stuck(OutcomeKind kind, const RunTrace& trace, double stopped_at, double limit_s) {
  if (kind != OutcomeKind::timeout || limit_s <= 0) {
    return std::nullopt;
  }
  const SiteTrace* s = trace.unfinished ? trace.site(*trace.unfinished) : nullptr;
  if (s == nullptr) {
    return std::nullopt;  // no launch began: nothing is named anyway
  }
  double ran = stopped_at > 0 && s->began_at > 0 ? stopped_at - s->began_at : -1;
  if (ran >= std::max(limit_s / 2, k_stuck_floor_s)) {
    return std::nullopt;
  }
  std::string how = ran >= 0 ? fmt::format("had run {:.2f} s", ran) : "had run for a time the runner did not report";
  return fmt::format(
      "the run was stopped at its {:.2f} s limit while call site {} ({}) {} (a launch is called stuck "
      "after half the limit and at least {:.0f} s): the model is slow, not stuck in one launch; "
      "raise --timeout",
      limit_s, s->site, s->kernel, how, k_stuck_floor_s);
}

namespace {

// The tensor whose NaN/Inf count grew the most at this site (the first in
// probe order among equals), and by how much.
int64_t made_nonfinite(const TensorStats& t) {
  return made_nan(t) + t.inf_count;
}

std::pair<const ProbeStats*, int64_t> worst_increase(const SiteTrace& s) {
  std::pair<const ProbeStats*, int64_t> worst{nullptr, 0};
  for (const auto& p : s.tensors) {
    if (!p.after) {
      continue;
    }
    int64_t before = p.initialized && p.before ? made_nonfinite(*p.before) : 0;
    if (made_nonfinite(*p.after) - before > worst.second) {
      worst = {&p, made_nonfinite(*p.after) - before};
    }
  }
  return worst;
}

// What a site's written inputs already held: NaN, Inf. With
// `constant_sources`, NaN/Inf in the model's constants do not count: the
// first site that reads a bad parameter is where it enters the run.
struct HeldBefore {
  bool nan = false;
  bool inf = false;
};
HeldBefore held_before(const SiteTrace& s, bool constant_sources) {
  HeldBefore h;
  for (const auto& p : s.tensors) {
    if (p.initialized && p.before && !(constant_sources && p.origin == "constant")) {
      h.nan = h.nan || made_nan(*p.before) > 0;
      h.inf = h.inf || p.before->inf_count > 0;
    }
  }
  return h;
}

// Whether values with these counts, written by a site whose inputs held
// `h`, are new: NaN from inputs without NaN (Inf - Inf, 0 * Inf, log of a
// negative), or Inf from finite inputs. NaN and Inf already there only
// propagate.
bool new_nonfinite(const TensorStats& after, int64_t nan_before, int64_t inf_before, HeldBefore h) {
  bool nan = made_nan(after) > nan_before && !h.nan;
  bool inf = after.inf_count > inf_before && !h.nan && !h.inf;
  return nan || inf;
}

}  // namespace

std::optional<CreatedBad> created_bad(const RunTrace& trace, int site, const ReturnedBy& returned_by) {
  for (const auto& [name, creator] : returned_by) {
    if (creator != site) {
      continue;
    }
    for (auto it = trace.sites.upper_bound(site); it != trace.sites.end(); ++it) {
      const ProbeStats* p = it->second.find(name);
      if (p == nullptr || !p->before) {
        continue;
      }
      if (p->initialized && p->before->nonfinite() > 0) {
        return CreatedBad{it->first, p};
      }
      break;  // its first appearance was finite
    }
  }
  return std::nullopt;
}

// Whether some tensor the site touches has more NaN after its launch than before.
bool nan_grew(const SiteTrace& s) {
  return std::any_of(s.tensors.begin(), s.tensors.end(), [](const ProbeStats& p) {
    int64_t before = p.initialized && p.before ? made_nan(*p.before) : 0;
    return p.after && made_nan(*p.after) > before;
  });
}

std::optional<int> first_introducer(const RunTrace& trace, int lo, int hi, const ReturnedBy& returned_by,
                                    bool constant_sources, const std::set<std::string>& inf_by_design) {
  for (auto it = trace.sites.lower_bound(lo); it != trace.sites.end() && it->first <= hi; ++it) {
    const SiteTrace& s = it->second;
    HeldBefore h = held_before(s, constant_sources);
    if (inf_by_design.count(s.kernel) > 0 && !nan_grew(s)) {
      continue;  // -inf of a mask: the kernel's own literal, not an overflow
    }
    bool made = std::any_of(s.tensors.begin(), s.tensors.end(), [&](const ProbeStats& p) {
      bool before = p.initialized && p.before;
      return p.after && new_nonfinite(*p.after, before ? made_nan(*p.before) : 0, before ? p.before->inf_count : 0, h);
    });
    if (!made) {
      if (auto c = created_bad(trace, it->first, returned_by)) {
        made = new_nonfinite(*c->probe->before, 0, 0, h);
      }
    }
    if (made) {
      return it->first;
    }
  }
  return std::nullopt;
}

Probe answer_step(Predicate pred, OutcomeKind expected, const Classification& cls, const RunTrace& trace, int lo,
                  int hi, const ReturnedBy& returned_by, bool constant_sources,
                  const std::set<std::string>& inf_by_design) {
  Probe p;
  p.runs = 1;
  p.agreeing = 1;
  p.verdict = StepVerdict::error;
  if (cls.internal || cls.cannot_test) {
    p.note = cls.internal.value_or(cls.cannot_test.value_or(""));
    return p;
  }
  bool failed = is_model_failure(cls.kind);
  std::string differently =
      failed ? fmt::format("the run failed differently ({}: {})", outcome_name(cls.kind), cls.first_line)
             : "the failure did not reproduce in this run";
  if (pred == Predicate::nonfinite) {
    if (auto site = first_introducer(trace, lo, hi, returned_by, constant_sources, inf_by_design)) {
      p.verdict = StepVerdict::reproduces;
      p.exact = site;
    } else if (cls.kind == OutcomeKind::nonfinite) {
      p.verdict = StepVerdict::clean;
    } else {
      p.note = differently;
    }
    return p;
  }
  if (trace.sync_error && *trace.sync_error == hi) {
    p.verdict = StepVerdict::reproduces;
  } else if (trace.unfinished && (trace.launched > 0 || failed)) {
    int u = *trace.unfinished;
    if (u < lo) {
      p.note = fmt::format("the run faulted at call site {}, before the range {}-{}", u, lo, hi);
    } else {
      p.verdict = u <= hi ? StepVerdict::reproduces : StepVerdict::clean;
      p.exact = u <= hi ? std::optional<int>(u) : std::nullopt;
    }
  } else if (cls.kind == OutcomeKind::timeout && trace.launched > 0) {
    // Stopped between launches: the time went elsewhere (no heap hint).
    p.note = fmt::format(
        "the run was stopped at its time limit after call site {} returned, outside any launch; "
        "raise --timeout",
        trace.launched);
  } else if (failed && trace.launched > 0) {
    // Failed after every probed launch returned: on CUDA without a sync in
    // range, the fault is later than hi.
    p.verdict = hi < trace.launched ? StepVerdict::clean : StepVerdict::error;
    if (p.verdict == StepVerdict::error) {
      p.note = fmt::format("the run failed after its last call site returned ({})", k_memory_corruption_hint);
    }
  } else if (cls.kind == expected) {
    p.verdict = StepVerdict::clean;  // it stopped at a site the probes left out
  } else {
    p.note = differently;
  }
  return p;
}

Probe aggregate_answers(const std::vector<Probe>& answers) {
  Probe out;
  out.runs = static_cast<int>(answers.size());
  for (const auto& a : answers) {
    if (a.verdict == StepVerdict::error) {
      out.verdict = StepVerdict::error;
      out.note = a.note;
      out.agreeing = 0;
      return out;
    }
  }
  std::map<std::pair<int, int>, int> counts;  // (verdict, exact) -> n
  for (const auto& a : answers) {
    ++counts[{static_cast<int>(a.verdict), a.exact.value_or(0)}];
  }
  auto best =
      std::max_element(counts.begin(), counts.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  out.agreeing = best->second;
  if (counts.size() == 1) {
    out.verdict = static_cast<StepVerdict>(best->first.first);
    if (best->first.second != 0) {
      out.exact = best->first.second;
    }
  } else {
    out.verdict = StepVerdict::inconclusive;
    out.note = fmt::format("{} of {} runs agreed", out.agreeing, out.runs);
  }
  return out;
}

std::optional<int64_t> index_bound_of(const std::string& line) {
  // Inductor's check ("index out of bounds: 0 <= tmp3 < 5L"), and ATen's own
  // inside an extern call ("... takes value 65 which is not in the valid
  // range [0, 60)", "index 7 is out of bounds for dimension 0 with size 5").
  static const std::vector<std::regex> patterns = {
      std::regex(R"(index out of bounds[^<]*<=[^<]*<\s*(-?\d{1,18}))"),
      std::regex(R"(not in the valid range \[-?\d{1,18}, (-?\d{1,18})\))"),
      std::regex(R"(out of bounds for dimension \d+ with size (\d{1,18}))")};
  std::smatch m;
  for (const auto& re : patterns) {
    if (std::regex_search(line, m, re)) {
      return std::stoll(m[1].str());
    }
  }
  return std::nullopt;
}

std::string kind_of_kernel(const std::string& kernel) {
  if (kernel.find("::") != std::string::npos) {
    return "extern";  // a custom operator run by the proxy executor ("myops::scaled_log")
  }
  if (kernel.rfind("triton_", 0) == 0) {
    return "triton";
  }
  if (kernel.rfind("aoti_torch_", 0) == 0) {
    return "extern";
  }
  return "cpp";
}

namespace {

std::string nonfinite_why(const SiteTrace& s, bool flags, const RunTrace& trace, const ReturnedBy& returned_by) {
  auto [p, grew] = worst_increase(s);
  if (p == nullptr) {
    if (auto made = created_bad(trace, s.site, returned_by)) {
      const TensorStats& st = *made->probe->before;
      return fmt::format("created {} holding {} NaN and {} Inf from finite inputs (shown where call site {} reads it)",
                         made->probe->tensor, st.nan_count, st.inf_count, made->seen_at);
    }
    return fmt::format("introduced non-finite values (the {} did not show which tensor)",
                       flags ? "printed blocks" : "evidence run");
  }
  if (flags) {
    std::string state = !p->before                    ? "not printed before launch"
                        : p->before->nonfinite() == 0 ? "its before-launch min/max were finite"
                                                      : "not yet written before launch";
    return fmt::format("introduced {} in {} ({})", p->after->nonfinite_name(), p->tensor, state);
  }
  return fmt::format("introduced {} NaN and {} Inf in {} ({} before launch)", made_nan(*p->after), p->after->inf_count,
                     p->tensor, p->initialized ? "finite" : "not written under this name");
}

}  // namespace

Culprit build_culprit(const CulpritInput& in) {
  Culprit c;
  c.call_index = in.site;
  const SiteTrace* ev = in.evidence ? in.evidence->site(in.site) : nullptr;
  const SiteTrace* hist = in.history ? in.history->site(in.site) : nullptr;
  c.kernel = hist && !hist->kernel.empty() ? hist->kernel : ev ? ev->kernel : "";
  const auto& sites = in.wrapper->call_sites;
  // The wrapper's call site that ran, where the probes know it (sites in
  // branches that did not run make the numbers differ), else the same number.
  int at = hist && hist->wrapper_site > 0 ? hist->wrapper_site
           : ev && ev->wrapper_site > 0   ? ev->wrapper_site
                                          : in.site;
  bool in_wrapper = at >= 1 && static_cast<size_t>(at) <= sites.size();
  if (c.kernel.empty() && in_wrapper) {
    c.kernel = sites[at - 1].kernel;
  }
  c.kind = kind_of_kernel(c.kernel);
  if (in_wrapper && sites[at - 1].kernel == c.kernel) {
    c.kind = std::string(kernel_kind_name(sites[at - 1].kind));
    c.source_nodes = sites[at - 1].source_nodes;
    c.aten_ops = sites[at - 1].aten_ops;
    c.post_grad_nodes = sites[at - 1].post_grad_nodes;
    c.branch = sites[at - 1].branch;
    c.source_lines = source_lines(sites[at - 1].python_stacks);
  }
  for (const auto& info : predicate_table()) {
    c.phase = info.predicate == in.predicate ? std::string(info.culprit_phase) : c.phase;
  }
  if (ev == nullptr) {
    c.why = "named by the search (the probes of its evidence run were not kept)";
    return c;
  }
  c.args = ev->tensors;
  bool flags = in.evidence->counts_are_flags;
  if (in.predicate == Predicate::mismatch) {
    c.why = "its output differs from eager (the evidence run did not show which tensor)";
    return c;
  }
  if (in.predicate == Predicate::nonfinite) {
    c.why = nonfinite_why(*ev, flags, *in.evidence, in.returned_by);
    if (auto made = created_bad(*in.evidence, in.site, in.returned_by); made && !ev->find(made->probe->tensor)) {
      // What it created is shown only where a later site reads it.
      c.args.push_back(ProbeStats{made->probe->tensor, false, std::nullopt, made->probe->before});
    }
  } else {
    c.why = (ev->failed ? "the call returned an error: " : "the launch never returned: ") + redact_paths(in.first_line);
  }
  const RunTrace& history = in.history ? *in.history : *in.evidence;
  if (auto u = in.evidence->poisoned ? unwritten_read(*ev) : std::nullopt) {
    // Under the poison variant: memory no kernel wrote, read by this kernel
    // (left so by an earlier one, or by its own partial write).
    const TensorStats& st = u->before ? *u->probe->before : *u->probe->after;
    c.unwritten = unwritten_text(*u);
    c.why = c.unwritten + "; " + c.why;
    if (u->before && !u->never_written) {
      c.producer = producer_of(base_tensor_name(u->probe->tensor),
                               fmt::format("was left with {} of its {} elements unwritten", st.unwritten, st.numel),
                               in.site, history, *in.wrapper);
      return c;
    }
  }
  if (auto bad = bad_input(*ev, flags, index_bound_of(in.first_line))) {
    c.producer = walk_producer_back(producer_of(bad->first, bad->second, in.site, history, *in.wrapper),
                                    index_bound_of(in.first_line), *in.evidence, history, *in.wrapper);
  }
  return c;
}

}  // namespace aoti_bisect
