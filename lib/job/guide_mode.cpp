#include "job/guide_mode.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "build/build.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "package/package.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// "[  before_launch - cpp_fused_log_2 - buf7  ]:" -> the block's identity.
std::optional<PrintedTensor> parse_header(std::string_view line) {
  line = trim(line);
  if (line.size() < 4 || line.front() != '[' || line.substr(line.size() - 2) != "]:") {
    return std::nullopt;
  }
  std::string_view inner = trim(line.substr(1, line.size() - 3));
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    size_t sep = inner.find(" - ", at);
    parts.emplace_back(trim(inner.substr(at, sep == std::string_view::npos ? sep : sep - at)));
    if (sep == std::string_view::npos) {
      break;
    }
    at = sep + 3;
  }
  PrintedTensor t;
  if (parts.size() == 2 && parts[0] == "aoti_model_inputs") {
    t.phase = parts[0];
    t.tensor = parts[1];
  } else if (parts.size() == 3 && (parts[0] == "before_launch" || parts[0] == "after_launch")) {
    t.phase = parts[0];
    t.kernel = parts[1];
    t.tensor = parts[2];
  } else {
    return std::nullopt;
  }
  return t;
}

// strtod reads "nan", "-nan", "inf" and "-inf" as the printer writes them.
std::optional<double> parse_number(std::string_view text) {
  std::string s(trim(text));
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str()) {
    return std::nullopt;
  }
  return v;
}

// "[8, 32]" -> {8, 32}; "[]" -> {}.
std::vector<int64_t> parse_size(std::string_view text) {
  std::vector<int64_t> dims;
  std::string s(trim(text));
  for (char& c : s) {
    c = (c == '[' || c == ']' || c == ',') ? ' ' : c;
  }
  std::istringstream in(s);
  int64_t d = 0;
  while (in >> d) {
    dims.push_back(d);
  }
  return dims;
}

// The printer writes C++ type names ("long int"); the rest of the report
// speaks torch dtypes.
std::string normalize_dtype(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> names = {
      {"float", "float32"},       {"double", "float64"},         {"c10::Half", "float16"},
      {"c10::BFloat16", "bfloat16"}, {"long int", "int64"},      {"long", "int64"},
      {"int", "int32"},           {"short int", "int16"},        {"short", "int16"},
      {"signed char", "int8"},    {"unsigned char", "uint8"},    {"bool", "bool"},
  };
  auto it = names.find(name);
  return it == names.end() ? std::string(name) : it->second;
}

bool finite_or_absent(const std::optional<double>& v) { return !v || std::isfinite(*v); }

// A field line "Name: value" of the current block; others are element values.
void apply_field(PrintedTensor& t, std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return;
  }
  std::string_view key = trim(line.substr(0, colon));
  std::string_view value = trim(line.substr(colon + 1));
  if (key == "Number of elements") {
    t.numel = static_cast<int64_t>(parse_number(value).value_or(0));
  } else if (key == "Dtype") {
    t.dtype = normalize_dtype(value);
  } else if (key == "Mean value") {
    t.mean = parse_number(value);
  } else if (key == "Min value") {
    t.min = parse_number(value);
  } else if (key == "Max value") {
    t.max = parse_number(value);
  } else if (key == "Size") {
    t.shape = parse_size(value);
  }
}

bool is_graph_input(const std::string& tensor) { return tensor.rfind("arg", 0) == 0; }

const PrintedTensor* find_tensor(const std::vector<PrintedTensor>& blocks, const std::string& tensor) {
  for (const auto& b : blocks) {
    if (b.tensor == tensor) {
      return &b;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<PrintedTensor> parse_printer_output(std::string_view text) {
  std::vector<PrintedTensor> out;
  bool open = false;
  auto close = [&] {
    if (open) {
      PrintedTensor& t = out.back();
      t.has_nonfinite = !finite_or_absent(t.min) || !finite_or_absent(t.max) || !finite_or_absent(t.mean);
    }
    open = false;
  };
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    std::string_view line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? text.size() : nl + 1;
    if (auto header = parse_header(line)) {
      close();
      out.push_back(std::move(*header));
      open = true;
    } else if (open && trim(line).empty()) {
      close();
    } else if (open) {
      apply_field(out.back(), line);
    }
  }
  close();
  return out;
}

std::vector<std::string> printing_kernels(const std::string& source, const std::vector<CallSite>& sites) {
  std::vector<std::string_view> lines;
  std::string_view text(source);
  for (size_t at = 0; at <= text.size();) {
    size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (nl == std::string_view::npos) {
      break;
    }
    at = nl + 1;
  }
  std::vector<std::string> out;
  int previous = 0;  // line of the previous call site
  for (const auto& site : sites) {
    if (site.line <= 0) {
      out.push_back(site.kernel);  // no position known: assume it prints
      continue;
    }
    std::string marker = "\"before_launch - " + site.kernel + " - ";
    bool prints = false;
    for (int l = previous + 1; l < site.line && l <= static_cast<int>(lines.size()); ++l) {
      std::string_view line = lines[l - 1];
      prints = prints || (line.find("aoti_torch_print_tensor_handle(") != std::string_view::npos &&
                          line.find(marker) != std::string_view::npos);
    }
    out.push_back(prints ? site.kernel : "");
    previous = site.line;
  }
  return out;
}

SiteMapping map_printed_sites(const std::vector<PrintedTensor>& printed, const std::vector<std::string>& printing) {
  SiteMapping m;
  std::map<std::string, std::vector<int>> sites_of;  // kernel -> its printing sites, in order
  for (size_t i = 0; i < printing.size(); ++i) {
    if (!printing[i].empty()) {
      sites_of[printing[i]].push_back(static_cast<int>(i) + 1);
    }
  }
  std::map<std::string, size_t> groups_of;  // kernel -> groups seen
  std::set<std::string> written;            // tensors printed after some launch
  auto finish = [&] {
    if (!m.sites.empty()) {
      for (const auto& t : m.sites.back().after) {
        written.insert(t.tensor);
      }
    }
  };
  for (const auto& t : printed) {
    if (t.phase == "aoti_model_inputs") {
      continue;
    }
    PrintedSite* cur = m.sites.empty() ? nullptr : &m.sites.back();
    bool new_group = cur == nullptr || cur->kernel != t.kernel || (t.phase == "before_launch" && !cur->after.empty());
    if (new_group) {
      finish();
      size_t k = groups_of[t.kernel]++;
      const auto& candidates = sites_of[t.kernel];
      if (k >= candidates.size()) {
        m.problem = fmt::format("the run printed {} groups for {}, the wrapper launches it from {} printing sites",
                                k + 1, t.kernel, candidates.size());
        return m;
      }
      m.sites.push_back(PrintedSite{candidates[k], t.kernel, {}, {}, {}});
      cur = &m.sites.back();
    }
    if (t.phase == "before_launch") {
      if (is_graph_input(t.tensor) || written.count(t.tensor)) {
        cur->initialized.insert(t.tensor);
      }
      cur->before.push_back(t);
    } else {
      cur->after.push_back(t);
    }
  }
  return m;
}

std::optional<Introduction> first_introduction(const std::vector<PrintedSite>& sites, int lo, int hi) {
  for (const auto& ps : sites) {
    if (ps.site < lo || ps.site > hi) {
      continue;
    }
    // Already-bad initialized data: the site only propagates it.
    bool bad_input = std::any_of(ps.before.begin(), ps.before.end(), [&](const PrintedTensor& b) {
      return b.has_nonfinite && ps.initialized.count(b.tensor);
    });
    if (bad_input) {
      continue;
    }
    for (const auto& a : ps.after) {
      if (!a.has_nonfinite) {
        continue;
      }
      const PrintedTensor* b = find_tensor(ps.before, a.tensor);
      bool written = b != nullptr && ps.initialized.count(a.tensor) > 0;
      if (b == nullptr || !written || !b->has_nonfinite) {
        return Introduction{ps.site, a.tensor, written};
      }
    }
  }
  return std::nullopt;
}

std::optional<int> unfinished_site(const std::vector<PrintedSite>& sites) {
  if (!sites.empty() && sites.back().after.empty() && !sites.back().before.empty()) {
    return sites.back().site;
  }
  return std::nullopt;
}

Probe guide_answer(bool fault, OutcomeKind expected, const Classification& cls, const SiteMapping& mapping, int lo,
                   int hi) {
  Probe p;
  p.runs = 1;
  p.agreeing = 1;
  p.verdict = StepVerdict::error;
  if (cls.internal || cls.cannot_test) {
    p.note = cls.internal.value_or(cls.cannot_test.value_or(""));
    return p;
  }
  if (!mapping.problem.empty()) {
    p.note = mapping.problem;
    return p;
  }
  bool failed = is_model_failure(cls.kind);
  std::string differently = failed ? fmt::format("the run failed differently ({}: {})", outcome_name(cls.kind),
                                                 cls.first_line)
                                   : "the failure did not reproduce in this run";
  if (!fault) {
    if (auto intro = first_introduction(mapping.sites, lo, hi)) {
      p.verdict = StepVerdict::reproduces;
      p.exact = intro->site;
    } else if (cls.kind == OutcomeKind::nonfinite) {
      p.verdict = StepVerdict::clean;
    } else {
      p.note = differently;
    }
    return p;
  }
  if (auto u = unfinished_site(mapping.sites); u && failed) {
    if (*u < lo) {
      p.note = fmt::format("the run faulted at call site {}, before the range {}-{}", *u, lo, hi);
    } else {
      p.verdict = *u <= hi ? StepVerdict::reproduces : StepVerdict::clean;
      p.exact = *u <= hi ? std::optional<int>(*u) : std::nullopt;
    }
  } else if (cls.kind == expected) {
    p.verdict = StepVerdict::clean;  // it stopped at a site the filter left unprinted
  } else {
    p.note = differently;
  }
  return p;
}

namespace {

// One rebuilt package, ready to run: extracted, its sites checked against the
// original wrapper's.
struct GuideBuild {
  fs::path dir;
  std::vector<std::string> printing;
  std::string problem;  // why its printed output cannot be mapped; "" when it can
};

// The evidence one run left about the sites it printed.
struct RunEvidence {
  SiteMapping mapping;
  std::string first_line;
};

TensorStats stats_of(const PrintedTensor& t) {
  TensorStats s;
  s.name = t.tensor;
  s.dtype = t.dtype;
  s.shape = t.shape;
  s.numel = t.numel;
  s.min = t.min;
  s.max = t.max;
  s.mean = t.mean;
  // The printer gives no counts: these are flags (1 = some element is NaN,
  // resp. +-Inf, as far as min/max/mean show), not counts.
  auto any = [&](auto pred) { return (t.min && pred(*t.min)) || (t.max && pred(*t.max)) || (t.mean && pred(*t.mean)); };
  s.nan_count = any([](double v) { return std::isnan(v); }) ? 1 : 0;
  s.inf_count = any([](double v) { return std::isinf(v); }) ? 1 : 0;
  return s;
}

std::string nonfinite_name(const PrintedTensor& t) {
  TensorStats s = stats_of(t);
  return s.nan_count && s.inf_count ? "NaN/Inf" : s.inf_count ? "Inf" : "NaN";
}

// Among a faulting site's initialized inputs, one that was already bad:
// non-finite, or an integer index outside the bound the error names.
std::optional<std::pair<std::string, std::string>> bad_input(const PrintedSite& ps, std::optional<int64_t> bound) {
  for (const auto& b : ps.before) {
    if (!ps.initialized.count(b.tensor)) {
      continue;
    }
    if (b.has_nonfinite) {
      return std::make_pair(b.tensor, fmt::format("held {} before the launch", nonfinite_name(b)));
    }
    bool integral = b.dtype.rfind("int", 0) == 0 || b.dtype.rfind("uint", 0) == 0;
    if (!integral || !b.min || !b.max) {
      continue;
    }
    // The printer shows six significant digits: the range is approximate.
    auto lo = static_cast<int64_t>(*b.min);
    auto hi = static_cast<int64_t>(*b.max);
    if (bound && (lo < 0 || hi >= *bound)) {
      return std::make_pair(b.tensor, fmt::format("holds values in [{}, {}], outside [0, {})", lo, hi, *bound));
    }
    if (!bound && (lo < 0 || hi > std::numeric_limits<int32_t>::max())) {
      return std::make_pair(b.tensor, fmt::format("holds values in [{}, {}]: not a plausible index", lo, hi));
    }
  }
  return std::nullopt;
}

Producer producer_of(const std::string& tensor, const std::string& why, const RunEvidence& ev, int site,
                     const WrapperInfo& wrapper) {
  Producer prod;
  prod.tensor = tensor;
  prod.why = tensor + " " + why;
  for (const auto& in : wrapper.inputs) {
    if (in.name == tensor) {
      prod.why = fmt::format("graph input {} ({}) {}", in.index, tensor, why);
    }
  }
  for (const auto& ps : ev.mapping.sites) {
    if (ps.site < site && find_tensor(ps.after, tensor) != nullptr && !is_graph_input(tensor)) {
      prod.call_index = ps.site;
      prod.kernel = ps.kernel;
    }
  }
  return prod;
}

Culprit guide_culprit(int site, bool fault, const BisectSetup& s, const RunEvidence* ev) {
  Culprit c;
  c.call_index = site;
  const CallSite& cs = s.wrapper.call_sites.at(site - 1);
  c.kernel = cs.kernel;
  c.kind = std::string(kernel_kind_name(cs.kind));
  c.source_nodes = cs.source_nodes;
  c.phase = fault ? "launch" : "after_launch";
  const PrintedSite* ps = nullptr;
  if (ev != nullptr) {
    for (const auto& p : ev->mapping.sites) {
      ps = p.site == site ? &p : ps;
    }
  }
  if (ps == nullptr) {
    c.why = "named by the guide-mode search (its printed blocks were not kept)";
    return c;
  }
  for (const auto& b : ps->before) {
    ProbeStats a{b.tensor, ps->initialized.count(b.tensor) > 0, stats_of(b), std::nullopt};
    if (const PrintedTensor* after = find_tensor(ps->after, b.tensor)) {
      a.after = stats_of(*after);
    }
    c.args.push_back(a);
  }
  for (const auto& t : ps->after) {
    if (find_tensor(ps->before, t.tensor) == nullptr) {
      c.args.push_back(ProbeStats{t.tensor, false, std::nullopt, stats_of(t)});
    }
  }
  std::string line = ev->first_line.empty() ? s.first_line : ev->first_line;
  if (fault) {
    c.why = fmt::format("the launch never returned: {}", redact_paths(line));
    if (auto bad = bad_input(*ps, index_bound_of(line))) {
      c.producer = producer_of(bad->first, bad->second, *ev, site, s.wrapper);
    }
  } else if (auto intro = first_introduction({*ps}, site, site)) {
    const PrintedTensor* before = find_tensor(ps->before, intro->tensor);
    std::string state = before == nullptr          ? "not printed before launch"
                        : !before->has_nonfinite   ? "its before-launch min/max were finite"
                                                   : "not yet written before launch";
    c.why = fmt::format("introduced {} in {} ({})", nonfinite_name(*find_tensor(ps->after, intro->tensor)),
                        intro->tensor, state);
  } else {
    c.why = "introduced non-finite values (the printed blocks did not show which tensor)";
  }
  return c;
}

class GuideSearch {
 public:
  GuideSearch(Context& ctx, const BisectSetup& s, const GuideRequest& req) : m_ctx(ctx), m_s(s), m_req(req) {}

  // The rebuilt package printing the kernels of [lo, hi]; one build per
  // distinct kernel set in a job.
  const GuideBuild& build_for(int lo, int hi) {
    std::vector<std::string> kernels;
    for (int i = lo; i <= hi; ++i) {
      kernels.push_back(m_s.wrapper.call_sites[i - 1].kernel);
    }
    std::sort(kernels.begin(), kernels.end());
    kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
    auto [it, fresh] = m_builds.try_emplace(kernels);
    if (fresh) {
      it->second = rebuild(kernels);
    }
    return it->second;
  }

  Probe ask(int lo, int hi) {
    const GuideBuild& b = build_for(lo, hi);
    if (!b.problem.empty()) {
      return Probe{StepVerdict::error, std::nullopt, 0, 0, b.problem};
    }
    std::vector<Probe> answers;
    for (int r = 0; r < m_req.repeats; ++r) {
      ChildRequest creq{fmt::format("guide.{}.{}-{}", ++m_run_no, lo, hi), m_s.variant, r, m_s.env, b.dir,
                        std::nullopt, {}};
      ChildResult res = m_ctx.run_child(creq);
      if (!res.finished) {
        return Probe{StepVerdict::error, std::nullopt, 0, 0, "interrupted"};
      }
      m_last_ok = res.cls.kind == OutcomeKind::ok;
      std::string text = read_file(m_ctx.out_dir / "runs" / creq.id / "stdout.txt", "the run's output");
      auto ev = std::make_shared<RunEvidence>(
          RunEvidence{map_printed_sites(parse_printer_output(text), b.printing), res.cls.first_line});
      for (const auto& ps : ev->mapping.sites) {
        if (ps.site >= lo && ps.site <= hi) {
          m_evidence[ps.site] = ev;
        }
      }
      answers.push_back(guide_answer(m_req.fault, m_s.kind, res.cls, ev->mapping, lo, hi));
    }
    return aggregate_answers(answers);
  }

  const RunEvidence* evidence(int site) const {
    auto it = m_evidence.find(site);
    return it == m_evidence.end() ? nullptr : it->second.get();
  }
  bool last_run_ok() const { return m_last_ok; }

 private:
  GuideBuild rebuild(const std::vector<std::string>& kernels) {
    GuideBuild g;
    BuildRequest req;
    req.exported_program = m_req.exported_program;
    req.model_name = m_req.model_name;
    req.inductor_configs = m_s.inductor_configs;
    req.printer_level = 2;
    req.filtered_kernels = kernels;
    req.cache_dir = m_ctx.opt.cache_dir;
    req.timeout_s = m_ctx.opt.build_timeout_s;
    req.expected_torch_version = m_s.runner_torch_version;
    BuildResult built;
    try {
      built = build_instrumented(req);
    } catch (const Error& e) {
      g.problem = redact_paths(e.what());
      m_ctx.report.builds.note = g.problem;
      return g;
    }
    Builds& b = m_ctx.report.builds;
    std::string purpose = "guide " + join(kernels, ",");
    b.items.push_back({purpose, built.key, built.cache_hit, built.seconds, built.torch_version});
    b.count += built.cache_hit ? 0 : 1;
    b.cache_hits += built.cache_hit ? 1 : 0;
    b.seconds += built.seconds;
    m_ctx.progress.note(built.cache_hit ? fmt::format("{}: found in the cache", purpose)
                                        : fmt::format("{}: built in {:.1f} s", purpose, built.seconds));
    try {
      Package pkg = Package::open(built.package);
      const ModelFiles& model = pkg.select_model(pkg.models().size() == 1 ? "" : m_s.model.name);
      WrapperInfo w = pkg.wrapper_info(model);
      g.problem = compare_sites(w);
      if (!g.problem.empty()) {
        b.call_sites_match = false;
        b.note = g.problem;
        return g;
      }
      b.call_sites_match = b.call_sites_match.value_or(true);
      g.printing = printing_kernels(pkg.read_entry(model.wrapper_cpp), w.call_sites);
      g.dir = pkg.extract(m_s.work_dir / fmt::format("guide-{}", m_builds.size()));
    } catch (const Error& e) {
      g.problem = redact_paths(e.what());
    }
    return g;
  }

  // Printed blocks are mapped by occurrence in the original call-site list:
  // the rebuilt wrapper must launch the same kernels in the same order.
  std::string compare_sites(const WrapperInfo& w) const {
    const auto& orig = m_s.wrapper.call_sites;
    if (w.printer_level != 2) {
      return "the rebuilt package has no level-2 printer calls";
    }
    for (size_t i = 0; i < std::min(orig.size(), w.call_sites.size()); ++i) {
      if (orig[i].kernel != w.call_sites[i].kernel) {
        return fmt::format("call site {} is {} in the package but {} in the guide-mode build", i + 1, orig[i].kernel,
                           w.call_sites[i].kernel);
      }
    }
    if (orig.size() != w.call_sites.size()) {
      return fmt::format("the package launches {} call sites, the guide-mode build {}", orig.size(),
                         w.call_sites.size());
    }
    return "";
  }

  Context& m_ctx;
  const BisectSetup& m_s;
  const GuideRequest& m_req;
  std::map<std::vector<std::string>, GuideBuild> m_builds;
  std::map<int, std::shared_ptr<RunEvidence>> m_evidence;
  int m_run_no = 0;
  bool m_last_ok = false;
};

}  // namespace

BisectOutcome run_guide_mode(Context& ctx, const BisectSetup& s, const GuideRequest& req) {
  int n = static_cast<int>(s.wrapper.call_sites.size());
  Bisection& bis = ctx.report.bisection ? *ctx.report.bisection : ctx.report.bisection.emplace();
  std::string prefix = req.fallback_reason.empty() ? "" : req.fallback_reason + "; fell back to guide mode; ";
  if (n == 0) {
    bis.status = "error";
    bis.message = prefix + "guide mode needs the package wrapper's call-site list, and none was found";
    return {Verdict::not_isolated, bis.message};
  }
  int planned = planned_oracle_calls(n, req.strategy);
  ctx.runs_planned = ctx.runs_done + planned * req.repeats;
  bis.strategy = std::string(strategy_name(req.strategy));
  bis.predicate = req.fault ? "fault" : "nonfinite";
  bis.variant = s.variant;
  bis.call_sites = n;
  bis.planned_runs += planned * req.repeats;
  ctx.begin_phase("bisect", fmt::format("guide mode: {} call sites, {} search, up to {} level-2 rebuilds and {} runs",
                                        n, bis.strategy, planned, planned * req.repeats));

  GuideSearch search(ctx, s, req);
  SearchResult sr = find_first_bad(n, req.strategy, [&](int lo, int hi) { return search.ask(lo, hi); });
  bis.message = prefix + fmt::format("guide mode: {} level-2 builds ({} from the cache)", ctx.report.builds.count,
                                     ctx.report.builds.cache_hits) +
                (sr.message.empty() ? "" : "; " + sr.message);
  record_search(ctx, bis, sr);
  if (interrupt_requested()) {
    return {Verdict::interrupted, ""};
  }
  if (sr.status == SearchResult::Status::inconclusive) {
    return {Verdict::inconclusive, "the search was inconclusive: " + sr.message};
  }
  if (sr.status == SearchResult::Status::error && search.last_run_ok()) {
    return {Verdict::suppressed_by_instrumentation, "the failure did not reproduce in a guide-mode build"};
  }
  if (sr.status != SearchResult::Status::found || !sr.first) {
    return {Verdict::not_isolated, "the search did not name a call site: " + sr.message};
  }
  int k = *sr.first;
  Culprit c = guide_culprit(k, req.fault, s, search.evidence(k));
  ctx.report.culprit = c;
  return {Verdict::isolated, fmt::format("isolated to call site {} {} ({}) in guide mode", k, c.kernel, c.kind)};
}

}  // namespace aoti_bisect
