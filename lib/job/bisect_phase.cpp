#include "job/bisect_phase.hpp"
#include "common/text.hpp"

#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "bisect/bisect.hpp"
#include "build/build.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "job/divergence.hpp"
#include "job/guide_mode.hpp"
#include "protocol/runner.hpp"
#include "protocol/values.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

enum class Predicate { fault, nonfinite, mismatch, unsupported };

std::string_view predicate_name(Predicate p) {
  switch (p) {
    case Predicate::fault: return "fault";
    case Predicate::nonfinite: return "nonfinite";
    case Predicate::mismatch: return "mismatch";
    default: return "unsupported";
  }
}

Predicate predicate_for(OutcomeKind kind) {
  switch (kind) {
    case OutcomeKind::nonfinite: return Predicate::nonfinite;
    case OutcomeKind::mismatch: return Predicate::mismatch;
    case OutcomeKind::input_mismatch:
    case OutcomeKind::ok: return Predicate::unsupported;
    default: return Predicate::fault;
  }
}

bool has_event(const std::vector<nlohmann::json>& events, EventKind kind) {
  for (const auto& e : events) {
    if (event_kind(e) == kind) {
      return true;
    }
  }
  return false;
}

int64_t bad_count(const TensorStats& s) { return s.nan_count + s.inf_count; }

struct SiteProbes {
  std::string kernel;
  std::map<std::string, std::pair<bool, TensorStats>> before;  // tensor -> (initialized, stats)
  std::map<std::string, TensorStats> after;
  std::vector<std::string> order;                             // tensors in probe order
};

std::map<int, SiteProbes> probes_by_site(const std::vector<nlohmann::json>& events) {
  std::map<int, SiteProbes> out;
  for (const auto& e : events) {
    if (event_kind(e) != EventKind::probe) {
      continue;
    }
    SiteProbes& p = out[e.value("site", 0)];
    p.kernel = e.value("kernel", "");
    std::string tensor = e.value("tensor", "");
    TensorStats st = tensor_stats_from_json(e["stats"]);
    if (std::find(p.order.begin(), p.order.end(), tensor) == p.order.end()) {
      p.order.push_back(tensor);
    }
    if (e.value("phase", "") == "before") {
      p.before[tensor] = {e.value("initialized", true), st};
    } else {
      p.after[tensor] = st;
    }
  }
  return out;
}

// The tensor of a site whose non-finite count grew the most, and by how much.
std::pair<std::string, int64_t> worst_increase(const SiteProbes& p) {
  std::pair<std::string, int64_t> worst{"", 0};
  for (const auto& [tensor, after] : p.after) {
    int64_t before = 0;
    auto it = p.before.find(tensor);
    if (it != p.before.end() && it->second.first) {
      before = bad_count(it->second.second);
    }
    if (bad_count(after) - before > worst.second) {
      worst = {tensor, bad_count(after) - before};
    }
  }
  return worst;
}

// A site whose initialized inputs already held NaN/Inf only propagates them.
bool inputs_already_bad(const SiteProbes& p) {
  for (const auto& [tensor, before] : p.before) {
    if (before.first && bad_count(before.second) > 0) {
      return true;
    }
  }
  return false;
}

std::string kind_of_kernel(const std::string& kernel) {
  if (kernel.rfind("triton_", 0) == 0) {
    return "triton";
  }
  if (kernel.rfind("aoti_torch_", 0) == 0) {
    return "extern";
  }
  return "cpp";
}

// One child run's answer to "is the first bad site in [lo, hi]?".
Probe answer_of(Predicate pred, const ChildResult& r, int lo, int hi, const ToleranceTable* tolerances,
                const std::map<std::string, int>* returned_by) {
  Probe p;
  p.runs = 1;
  p.agreeing = 1;
  if (r.cls.internal || r.cls.cannot_test) {
    p.verdict = StepVerdict::error;
    p.note = r.cls.internal.value_or(r.cls.cannot_test.value_or(""));
    return p;
  }
  SiteEvidence ev = read_site_evidence(r.events, lo, hi);
  bool failed = is_model_failure(r.cls.kind);
  if (pred == Predicate::mismatch) {
    if (r.cls.kind != OutcomeKind::mismatch && r.cls.kind != OutcomeKind::ok) {
      p.verdict = StepVerdict::error;
      p.note = fmt::format("the run failed differently ({}: {})", outcome_name(r.cls.kind), r.cls.first_line);
    } else if (auto site = first_divergent(compare_sites(r.events, *tolerances, *returned_by), lo, hi)) {
      p.verdict = StepVerdict::reproduces;
      p.exact = site;
    } else {
      p.verdict = StepVerdict::clean;
    }
    return p;
  }
  if (pred == Predicate::nonfinite) {
    if (ev.introducer) {
      p.verdict = StepVerdict::reproduces;
      p.exact = ev.introducer;
    } else if (r.cls.kind == OutcomeKind::nonfinite) {
      p.verdict = StepVerdict::clean;
    } else {
      p.verdict = StepVerdict::error;
      p.note = failed ? fmt::format("the run failed differently ({}: {})", outcome_name(r.cls.kind), r.cls.first_line)
                      : "the failure did not reproduce in this run";
    }
    return p;
  }
  if (ev.sync_error && *ev.sync_error == hi) {
    p.verdict = StepVerdict::reproduces;
  } else if (ev.unfinished) {
    int u = *ev.unfinished;
    if (u < lo) {
      p.verdict = StepVerdict::error;
      p.note = fmt::format("the run faulted at call site {}, before the range {}-{}", u, lo, hi);
    } else {
      p.verdict = u <= hi ? StepVerdict::reproduces : StepVerdict::clean;
      p.exact = u <= hi ? std::optional<int>(u) : std::nullopt;
    }
  } else if (failed) {
    // Failed after every probed launch returned: on CUDA without a sync in
    // range, the fault is later than hi.
    p.verdict = hi < ev.sites ? StepVerdict::clean : StepVerdict::error;
    if (p.verdict == StepVerdict::error) {
      p.note = "the run failed after its last call site returned";
    }
  } else {
    p.verdict = StepVerdict::error;
    p.note = "the failure did not reproduce in this run";
  }
  return p;
}

}  // namespace

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
  auto best = std::max_element(counts.begin(), counts.end(),
                               [](const auto& x, const auto& y) { return x.second < y.second; });
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

namespace {

std::string site_label(int site, const std::string& kernel) { return fmt::format("call site {} {}", site, kernel); }

void compare_call_sites(Report& report, const WrapperInfo& original, const WrapperInfo& instrumented) {
  if (original.call_sites.empty() || instrumented.call_sites.empty()) {
    return;
  }
  size_t n = std::min(original.call_sites.size(), instrumented.call_sites.size());
  for (size_t i = 0; i < n; ++i) {
    if (original.call_sites[i].kernel != instrumented.call_sites[i].kernel) {
      report.builds.call_sites_match = false;
      report.builds.note = fmt::format("call site {} is {} in the package but {} in the instrumented build", i + 1,
                                       original.call_sites[i].kernel, instrumented.call_sites[i].kernel);
      return;
    }
  }
  report.builds.call_sites_match = original.call_sites.size() == instrumented.call_sites.size();
  if (!*report.builds.call_sites_match) {
    report.builds.note = fmt::format("the package launches {} call sites, the instrumented build {}",
                                     original.call_sites.size(), instrumented.call_sites.size());
  }
}

// Finds, among the culprit's inputs before launch, one that was already bad:
// non-finite, or an integer index outside the bound the error names (or
// negative, or beyond the int32 range, when no bound is known).
std::optional<std::pair<std::string, std::string>> bad_input(const SiteProbes& p, std::optional<int64_t> bound) {
  for (const auto& tensor : p.order) {
    auto it = p.before.find(tensor);
    if (it == p.before.end() || !it->second.first) {
      continue;
    }
    const TensorStats& st = it->second.second;
    if (bad_count(st) > 0) {
      return std::make_pair(tensor, fmt::format("holds {} NaN and {} Inf before the launch", st.nan_count,
                                                st.inf_count));
    }
    bool integral = st.dtype.rfind("int", 0) == 0 || st.dtype.rfind("uint", 0) == 0;
    if (!integral || !st.min || !st.max) {
      continue;
    }
    auto lo = static_cast<int64_t>(*st.min);
    auto hi = static_cast<int64_t>(*st.max);
    if (bound && (lo < 0 || hi >= *bound)) {
      return std::make_pair(tensor, fmt::format("holds values in [{}, {}], outside [0, {})", lo, hi, *bound));
    }
    if (!bound && (lo < 0 || hi > std::numeric_limits<int32_t>::max())) {
      return std::make_pair(tensor, fmt::format("holds values in [{}, {}]: not a plausible index", lo, hi));
    }
  }
  return std::nullopt;
}

std::optional<Producer> producer_of(const std::string& tensor, const std::string& why, int site,
                                    const std::vector<nlohmann::json>& trace, const WrapperInfo& wrapper) {
  Producer prod;
  prod.tensor = tensor;
  prod.why = tensor + " " + why;
  if (tensor.rfind("arg", 0) == 0) {
    for (const auto& in : wrapper.inputs) {
      if (in.name == tensor) {
        prod.why = fmt::format("graph input {} ({}) {}", in.index, tensor, why);
      }
    }
    return prod;
  }
  for (const auto& e : trace) {
    if (event_kind(e) != EventKind::site_end || e.value("site", 0) >= site) {
      continue;
    }
    for (const auto& t : e.value("tensors", nlohmann::json::array())) {
      if (t == tensor) {
        prod.call_index = e.value("site", 0);
        prod.kernel = e.value("kernel", "");
      }
    }
  }
  return prod;
}

Culprit make_culprit(int site, Predicate pred, const BisectSetup& s, const WrapperInfo& inst,
                     const std::vector<nlohmann::json>& trace, const ChildResult& evidence) {
  Culprit c;
  c.call_index = site;
  for (const auto& e : trace) {
    if (event_kind(e) == EventKind::site_begin && e.value("site", 0) == site) {
      c.kernel = e.value("kernel", "");
    }
  }
  c.kind = kind_of_kernel(c.kernel);
  if (site >= 1 && static_cast<size_t>(site) <= inst.call_sites.size() &&
      inst.call_sites[site - 1].kernel == c.kernel) {
    c.kind = std::string(kernel_kind_name(inst.call_sites[site - 1].kind));
    c.source_nodes = inst.call_sites[site - 1].source_nodes;
  }
  auto probes = probes_by_site(evidence.events);
  SiteProbes p = probes.count(site) ? probes[site] : SiteProbes{};
  for (const auto& tensor : p.order) {
    ProbeStats ps;
    ps.tensor = tensor;
    if (auto it = p.before.find(tensor); it != p.before.end()) {
      ps.initialized = it->second.first;
      ps.before = it->second.second;
    }
    if (auto it = p.after.find(tensor); it != p.after.end()) {
      ps.after = it->second;
    }
    c.args.push_back(ps);
  }
  std::string line = evidence.cls.first_line.empty() ? s.first_line : evidence.cls.first_line;
  if (pred == Predicate::mismatch) {
    c.phase = "after_launch";
    c.why = "its output differs from eager (the evidence run did not show which tensor)";
  } else if (pred == Predicate::nonfinite) {
    c.phase = "after_launch";
    auto [tensor, grew] = worst_increase(p);
    if (!tensor.empty()) {
      const TensorStats& a = p.after.at(tensor);
      bool was_written = p.before.count(tensor) && p.before.at(tensor).first;
      c.why = fmt::format("introduced {} NaN and {} Inf in {} ({} before launch)", a.nan_count, a.inf_count, tensor,
                          was_written ? "finite" : "not written under this name");
    } else {
      c.why = "introduced non-finite values (the evidence run did not show which tensor)";
    }
  } else {
    c.phase = "launch";
    c.why = fmt::format("the launch never returned: {}", redact_paths(line));
  }
  if (auto bad = pred == Predicate::mismatch ? std::nullopt : bad_input(p, index_bound_of(line))) {
    c.producer = producer_of(bad->first, bad->second, site, trace, s.wrapper.inputs.empty() ? inst : s.wrapper);
  }
  return c;
}

void note_honest_error(Bisection& bis, const std::vector<SiteCompare>& sites) {
  auto h = largest_within(sites);
  if (h && (!bis.largest_within || h->ratio > bis.largest_within->ratio)) {
    bis.largest_within = h;
  }
}

}  // namespace


std::optional<std::string> find_exported_program(const RunOptions& opt, const Package& pkg, const ModelFiles& model,
                                                 std::string& name) {
  name = "model";
  if (!opt.exported_program.empty()) {
    return opt.exported_program.string();
  }
  const auto& eps = pkg.exported_programs();
  if (!eps.empty()) {
    name = std::find(eps.begin(), eps.end(), model.name) != eps.end() ? model.name : eps.front();
    return pkg.path().string();
  }
  return std::nullopt;
}

std::optional<int64_t> index_bound_of(const std::string& line) {
  static const std::regex re(R"(index out of bounds[^<]*<=[^<]*<\s*(-?\d+))");
  std::smatch m;
  if (std::regex_search(line, m, re)) {
    return std::stoll(m[1].str());
  }
  return std::nullopt;
}

SiteEvidence read_site_evidence(const std::vector<nlohmann::json>& events, int lo, int hi) {
  SiteEvidence ev;
  std::set<int> ended;
  int last_begun = 0;
  for (const auto& e : events) {
    EventKind type = event_kind(e);
    if (type == EventKind::site_begin) {
      last_begun = e.value("site", 0);
      ev.sites = std::max(ev.sites, last_begun);
    } else if (type == EventKind::site_end) {
      ended.insert(e.value("site", 0));
    } else if (type == EventKind::sync_error) {
      ev.sync_error = e.value("site", 0);
    }
  }
  if (last_begun > 0 && !ended.count(last_begun)) {
    ev.unfinished = last_begun;
  }
  for (const auto& [site, p] : probes_by_site(events)) {
    if (site >= lo && site <= hi && worst_increase(p).second > 0 && !inputs_already_bad(p)) {
      ev.introducer = site;
      break;
    }
  }
  return ev;
}

void record_search(Context& ctx, Bisection& bis, const SearchResult& sr) {
  bis.runs += sr.runs;
  bis.status = std::string(search_status_name(sr.status));
  for (const auto& st : sr.steps) {
    bis.steps.push_back({st.lo, st.hi, st.purpose, std::string(step_verdict_name(st.probe.verdict)), st.probe.runs,
                         st.probe.agreeing, redact_paths(st.probe.note)});
  }
  ctx.save();
}

BisectOutcome run_bisection(Context& ctx, const BisectSetup& s) {
  const RunOptions& opt = ctx.opt;
  Predicate pred = predicate_for(s.kind);
  if (pred == Predicate::unsupported) {
    return {Verdict::not_isolated, fmt::format("no kernel search for a {} failure", outcome_name(s.kind))};
  }
  std::string ep_model;
  auto ep = find_exported_program(opt, s.pkg, s.model, ep_model);
  if (!ep) {
    return {Verdict::not_isolated,
            "naming the kernel needs the exported program: give --exported-program EP.pt2 (torch.export.save of the "
            "same model), or a package that holds it (package_pt2)"};
  }
  Strategy strategy = *strategy_from_name(opt.strategy);
  if (pred == Predicate::fault && ctx.device_key == "cpu") {
    strategy = Strategy::all;  // a CPU fault is synchronous: a trace run names the site
  }
  int repeats = opt.bisect_repeats.value_or(s.deterministic ? 1 : 3);
  GuideRequest guide{*ep, ep_model, pred == Predicate::fault, strategy, repeats, ""};
  if (opt.rebuild_per_step) {
    if (pred == Predicate::mismatch) {
      return {Verdict::not_isolated, "--rebuild-per-step prints kernel inputs; comparing kernels with eager needs "
                                     "the probes of one instrumented build (drop --rebuild-per-step)"};
    }
    return run_guide_mode(ctx, s, guide);
  }

  ctx.begin_phase("build", "instrumented build (intermediate-value printer, level 1)");
  BuildRequest req;
  req.exported_program = *ep;
  req.model_name = ep_model;
  req.inductor_configs = s.inductor_configs;
  req.cache_dir = opt.cache_dir;
  req.timeout_s = opt.build_timeout_s;
  req.expected_torch_version = s.runner_torch_version;
  BuildResult built;
  try {
    built = build_instrumented(req);
  } catch (const Error& e) {
    ctx.report.builds.note = redact_paths(e.what());
    return {Verdict::not_isolated, redact_paths(e.what())};
  }
  Builds& b = ctx.report.builds;
  b.items.push_back({"instrumented", built.key, built.cache_hit, built.seconds, built.torch_version});
  b.count += built.cache_hit ? 0 : 1;
  b.cache_hits += built.cache_hit ? 1 : 0;
  b.seconds += built.seconds;
  ctx.progress.note(built.cache_hit ? "instrumented build found in the cache"
                                    : fmt::format("instrumented build done in {:.1f} s", built.seconds));

  // The mismatch search compares each probed buffer with the eager value of
  // the graph node it holds: the build's node map, and one eager run of the
  // exported program node by node on the same inputs.
  NodeMap node_map;
  nlohmann::json node_info;
  fs::path node_values;
  if (pred == Predicate::mismatch) {
    if (built.node_map.empty()) {
      return {Verdict::not_isolated, "the instrumented build wrote no node map (which graph node each buffer holds); "
                                     "cannot compare kernels with eager"};
    }
    try {
      node_map = node_map_from_json(nlohmann::json::parse(read_file(built.node_map, "node map"), nullptr, false));
      ctx.progress.note("eager values of the graph nodes (the exported program, node by node)");
      EagerRequest er;
      er.exported_program = *ep;
      er.model_name = ep_model;
      er.inputs = opt.inputs;
      er.node_map = built.node_map;
      er.node_values_out = s.work_dir / "node-values.pt";
      er.node_info_out = s.work_dir / "node-info.json";
      er.cache_dir = opt.cache_dir;
      er.timeout_s = opt.build_timeout_s;
      compute_eager_reference(er);
      node_values = er.node_values_out;
      node_info = nlohmann::json::parse(read_file(er.node_info_out, "node info"), nullptr, false);
    } catch (const Error& e) {
      return {Verdict::not_isolated, redact_paths(e.what())};
    }
  }

  Package inst = Package::open(built.package);
  const ModelFiles& im = inst.select_model(inst.models().size() == 1 ? "" : s.model.name);
  WrapperInfo iw = inst.wrapper_info(im);
  compare_call_sites(ctx.report, s.wrapper, iw);
  if (iw.printer_level != 1) {
    return {Verdict::not_isolated, "the instrumented build has no level-1 printer calls; cannot probe it"};
  }
  fs::path inst_dir = inst.extract(s.work_dir / "instrumented");

  int n_static = static_cast<int>(iw.call_sites.size());
  int planned = 2 + planned_oracle_calls(std::max(1, n_static), strategy) * repeats;
  ctx.runs_planned = ctx.runs_done + planned;
  Bisection& bis = ctx.report.bisection.emplace();
  bis.strategy = std::string(strategy_name(strategy));
  bis.predicate = std::string(predicate_name(pred));
  bis.variant = s.variant;
  bis.planned_runs = planned;
  ctx.begin_phase("bisect", fmt::format("plan: {} call sites, {} search, up to {} runs of about {:.1f} s", n_static,
                                        bis.strategy, planned, s.baseline_seconds));

  int run_no = 0;
  auto child = [&](const std::string& purpose, const ProbePlan& plan) {
    // Only runs that compare values load the per-node reference (it can be large).
    bool compares = std::any_of(plan.ranges.begin(), plan.ranges.end(),
                                [](const ProbePlan::Range& r) { return r.mode >= ProbeMode::stats; });
    ChildRequest req{fmt::format("bisect.{}.{}", ++run_no, purpose), s.variant, 0, s.env, inst_dir, plan,
                     compares ? node_values : fs::path()};
    return ctx.run_child(req);
  };

  ChildResult trace = child("trace", ProbePlan{});
  if (!trace.finished) {
    return {Verdict::interrupted, ""};
  }
  bis.steps.push_back({1, n_static, "trace", is_model_failure(trace.cls.kind) ? "reproduces" : "clean", 1, 1,
                       trace.cls.first_line});
  bis.runs = 1;
  if (has_event(trace.events, EventKind::probes_missing) && pred == Predicate::mismatch) {
    return {Verdict::not_isolated, "the instrumented model's probe calls did not reach the runner (symbol prefix or "
                                   "static link?); comparing kernels with eager needs them"};
  }
  if (has_event(trace.events, EventKind::probes_missing)) {
    guide.fallback_reason = "the instrumented model's probe calls did not reach the runner (symbol prefix or static link?)";
    return run_guide_mode(ctx, s, guide);
  }
  SiteEvidence tev = read_site_evidence(trace.events, 1, 0);
  bis.call_sites = std::max(tev.sites, n_static);
  if (tev.sites != n_static && n_static > 0 && pred != Predicate::fault) {
    b.note += fmt::format("{}the run launched {} call sites, the wrapper lists {}", b.note.empty() ? "" : "; ",
                          tev.sites, n_static);
  }
  if (trace.cls.kind == OutcomeKind::ok) {
    bis.status = "not_found";
    bis.message = "the failure did not reproduce in the instrumented build";
    return {Verdict::suppressed_by_instrumentation, bis.message};
  }
  if (trace.cls.kind != s.kind && pred != Predicate::fault) {
    bis.status = "error";
    bis.message = fmt::format("the instrumented build fails differently: {} ({})", outcome_name(trace.cls.kind),
                              trace.cls.first_line);
    return {Verdict::not_isolated, bis.message};
  }
  int n = std::max(tev.sites, 1);
  // Buffers extern calls create and return are shown only where a later
  // site reads them: that site is probed too, and the value credited to the
  // call that returned it. Static call-site numbers must match the run's.
  std::map<std::string, int> returned_by;
  std::map<int, int> consumers;
  if (pred == Predicate::mismatch && tev.sites == n_static) {
    returned_by = returned_buffers(iw.call_sites);
    consumers = consumer_sites(trace.events, returned_by);
  }
  auto add_consumers = [&](ProbePlan& plan, int lo, int hi) {
    for (auto it = consumers.lower_bound(lo); it != consumers.end() && it->first <= hi; ++it) {
      if (it->second > hi) {
        plan.ranges.push_back({it->second, it->second, ProbeMode::stats});
      }
    }
  };
  if (pred == Predicate::mismatch) {
    int mapped = 0;
    bis.unmapped = unmapped_sites(trace.events, node_map, mapped, returned_by);
    bis.mapped_sites = mapped;
    for (auto& u : bis.unmapped) {
      u.why = redact_paths(u.why);
    }
    ctx.progress.note(fmt::format("{} of {} call sites write a buffer that holds a graph node's value", mapped,
                                  tev.sites));
  }

  Oracle oracle = [&](int lo, int hi) -> Probe {
    ProbePlan plan;
    if (pred != Predicate::fault) {
      plan.ranges.push_back({lo, hi, ProbeMode::stats});
      add_consumers(plan, lo, hi);
    } else {
      plan.ranges.push_back({hi, hi, ProbeMode::sync});
    }
    std::vector<Probe> answers;
    for (int r = 0; r < repeats; ++r) {
      ChildResult res = child(fmt::format("{}-{}", lo, hi), plan);
      if (!res.finished) {
        Probe p;
        p.verdict = StepVerdict::error;
        p.note = "interrupted";
        return p;
      }
      answers.push_back(answer_of(pred, res, lo, hi, &ctx.tolerances, &returned_by));
      if (pred == Predicate::mismatch) {
        note_honest_error(bis, compare_sites(res.events, ctx.tolerances, returned_by));
      }
    }
    return aggregate_answers(answers);
  };
  SearchResult sr = find_first_bad(n, strategy, oracle);
  bis.message = sr.message;
  record_search(ctx, bis, sr);
  if (interrupt_requested()) {
    return {Verdict::interrupted, ""};
  }
  if (pred == Predicate::mismatch && sr.status != SearchResult::Status::found) {
    bool all_clean = std::all_of(sr.steps.begin(), sr.steps.end(), [](const SearchStep& st) {
      return st.probe.verdict == StepVerdict::clean || st.probe.verdict == StepVerdict::reproduces;
    });
    if (all_clean) {
      bis.status = "not_found";
      bis.message = "no probed call site's output left the tolerance while its inputs were within it";
      ctx.save();
      return {Verdict::not_isolated,
              fmt::format("no call site's output differs from eager beyond tolerance while its inputs are within it "
                          "({} of {} call sites mapped to graph nodes{}); the difference starts in an unmapped site "
                          "or builds up below the per-kernel tolerance",
                          bis.mapped_sites.value_or(0), n,
                          bis.unmapped.empty() ? "" : fmt::format(", first unmapped: call site {} {}",
                                                                  bis.unmapped.front().call_index,
                                                                  bis.unmapped.front().kernel))};
    }
  }
  if (sr.status == SearchResult::Status::inconclusive) {
    return {Verdict::inconclusive, "the search was inconclusive: " + sr.message};
  }
  if (sr.status != SearchResult::Status::found || !sr.first) {
    return {Verdict::not_isolated, "the search did not name a call site: " + sr.message};
  }

  int k = *sr.first;
  ProbePlan evidence_plan;
  evidence_plan.ranges.push_back({k, k, ProbeMode::save});
  add_consumers(evidence_plan, k, k);
  fs::path repro_dir = ctx.out_dir / "repro";
  std::error_code ec;
  fs::remove_all(repro_dir, ec);
  evidence_plan.save_dir = fs::absolute(repro_dir);
  ChildResult evidence = child("evidence", evidence_plan);
  if (!evidence.finished) {
    return {Verdict::interrupted, ""};
  }
  bis.runs += 1;
  Culprit c = make_culprit(k, pred, s, iw, trace.events, evidence);
  if (pred == Predicate::mismatch) {
    c.graph_nodes = computed_nodes(trace.events, node_map, k, node_info, returned_by);
    auto sites = compare_sites(evidence.events, ctx.tolerances, returned_by);
    for (const auto& site : sites) {
      if (site.site == k && site.introduced) {
        c.divergence = make_divergence(site, node_map, node_info);
        const Divergence& d = *c.divergence;
        std::string nodes;
        for (const auto& g : d.nodes) {
          nodes += (nodes.empty() ? "" : ", ") + g.name;
        }
        c.why = fmt::format(
            "output {}{} differs from eager: max abs error {} (rel {} of max |eager| {}), allowed {}; {}",
            d.tensor, nodes.empty() ? "" : " (" + nodes + ")", number_text(d.max_abs_error),
            number_text(d.max_rel_error), number_text(d.scale), number_text(d.atol + d.rtol * d.scale),
            d.inputs_compared == 0
                ? "none of its inputs is a mapped buffer of an earlier kernel"
                : fmt::format("its {} compared input{} within tolerance", d.inputs_compared,
                              d.inputs_compared == 1 ? " was" : "s were"));
      }
    }
    note_honest_error(bis, compare_sites(evidence.events, ctx.tolerances, returned_by));
  }
  ctx.report.culprit = c;
  Reproducer repro;
  repro.dir = display_path(repro_dir);
  for (const auto& e : evidence.events) {
    if (event_kind(e) == EventKind::saved) {
      repro.files.push_back(fs::path(e.value("path", "")).filename().string());
    }
  }
  repro.command = ctx.report.reproduce_command;
  ctx.report.repro = repro;
  return {Verdict::isolated, fmt::format("isolated to {} ({})", site_label(k, c.kernel), c.kind)};
}

}  // namespace aoti_bisect
