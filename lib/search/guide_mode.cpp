#include "search/guide_mode.hpp"

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
#include "search/search.hpp"
#include "package/facts.hpp"
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

bool is_graph_input(const std::string& tensor) { return is_graph_input_name(tensor); }

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

RunTrace trace_from_printer(const SiteMapping& mapping) {
  RunTrace t;
  t.counts_are_flags = true;
  for (const auto& ps : mapping.sites) {
    SiteTrace& st = t.sites[ps.site];
    st.site = ps.site;
    st.kernel = ps.kernel;
    st.began = true;
    st.ended = !ps.after.empty();
    for (const auto& b : ps.before) {
      st.tensors.push_back(ProbeStats{b.tensor, ps.initialized.count(b.tensor) > 0, stats_of(b), std::nullopt});
    }
    for (const auto& a : ps.after) {
      st.touched.push_back(a.tensor);
      auto it = std::find_if(st.tensors.begin(), st.tensors.end(), [&](const ProbeStats& p) { return p.tensor == a.tensor; });
      if (it == st.tensors.end()) {
        st.tensors.push_back(ProbeStats{a.tensor, false, std::nullopt, stats_of(a)});
      } else {
        it->after = stats_of(a);
      }
    }
  }
  if (!mapping.sites.empty() && mapping.sites.back().after.empty() && !mapping.sites.back().before.empty()) {
    t.unfinished = mapping.sites.back().site;
  }
  return t;
}

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

Probe guide_answer(Predicate pred, OutcomeKind expected, const Classification& cls, const SiteMapping& mapping,
                   int lo, int hi) {
  if (!mapping.problem.empty() && !cls.internal && !cls.cannot_test) {
    return Probe{StepVerdict::error, std::nullopt, 1, 1, mapping.problem};
  }
  return answer_step(pred, expected, cls, trace_from_printer(mapping), lo, hi);
}

namespace {

// One rebuilt package, ready to run: extracted, its sites checked against the
// original wrapper's.
struct GuideBuild {
  ModelDir dir;
  std::vector<std::string> printing;
  std::string problem;  // why its printed output cannot be mapped; "" when it can
};

// The evidence one run left about the sites it printed.
struct RunEvidence {
  RunTrace trace;
  std::string first_line;
};

class GuideSearch {
 public:
  GuideSearch(JobEnv& env, const BisectSetup& s, Predicate pred, int repeats)
      : m_env(env), m_s(s), m_pred(pred), m_repeats(repeats) {}

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
    for (int r = 0; r < m_repeats; ++r) {
      ChildRequest creq{fmt::format("guide.{}.{}-{}", ++m_run_no, lo, hi), m_s.variant, r, m_s.env, b.dir,
                        std::nullopt, {}, true};
      ChildResult res = m_env.runs.run(creq);
      if (!res.finished) {
        return Probe{StepVerdict::error, std::nullopt, 0, 0, "interrupted"};
      }
      m_last_ok = res.cls.kind == OutcomeKind::ok;
      SiteMapping mapping = map_printed_sites(parse_printer_output(res.stdout_text), b.printing);
      auto ev = std::make_shared<RunEvidence>(RunEvidence{trace_from_printer(mapping), res.cls.first_line});
      for (const auto& [site, st] : ev->trace.sites) {
        if (site >= lo && site <= hi) {
          m_evidence[site] = ev;
        }
      }
      answers.push_back(guide_answer(m_pred, m_s.kind, res.cls, mapping, lo, hi));
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
    BuildResult built;
    try {
      built = build_from_exported_program(m_env, m_s, 2, kernels);
    } catch (const ProgramRefused&) {
      throw;
    } catch (const Error& e) {
      g.problem = redact_paths(e.what());
      return g;
    }
    Recorder& rec = m_env.recorder;
    std::string purpose = "guide " + join(kernels, ",");
    rec.build({purpose, built.key, built.cache_hit, built.seconds, built.torch_version, "guide",
               "an Inductor rebuild with the level-2 printer", {}},
              true);
    rec.progress().note(built.cache_hit ? fmt::format("{}: found in the cache", purpose)
                                        : fmt::format("{}: built in {:.1f} s", purpose, built.seconds));
    try {
      Package pkg = Package::open(built.package);
      const ModelFiles& model = pkg.select_model(pkg.models().size() == 1 ? "" : m_s.model.name);
      WrapperInfo w = pkg.wrapper_info(model);
      g.problem = compare_sites(w);
      if (!g.problem.empty()) {
        rec.call_sites_match(false, g.problem);
        return g;
      }
      if (!rec.report().builds.call_sites_match) {
        rec.call_sites_match(true, "");
      }
      g.printing = printing_kernels(pkg.read_entry(model.wrapper_cpp), w.call_sites);
      fs::path dir = m_env.work_dir / fmt::format("guide-{}", m_builds.size());
      g.dir = ModelDir{pkg.extract(dir), write_model_facts(w, dir.string() + "-facts.json")};
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

  JobEnv& m_env;
  const BisectSetup& m_s;
  Predicate m_pred;
  int m_repeats = 1;
  std::map<std::vector<std::string>, GuideBuild> m_builds;
  std::map<int, std::shared_ptr<RunEvidence>> m_evidence;
  int m_run_no = 0;
  bool m_last_ok = false;
};

}  // namespace

BisectOutcome GuideSource::isolate(JobEnv& env, const BisectSetup& s, Predicate pred, Bisection& bis) {
  Recorder& rec = env.recorder;
  int n = static_cast<int>(s.wrapper.call_sites.size());
  if (s.exported_program.empty() && m_fallback_reason.empty()) {
    return {Verdict::not_isolated, needs_exported_program(), ""};
  }
  std::string prefix = m_fallback_reason.empty() ? "" : m_fallback_reason + "; fell back to guide mode; ";
  if (n == 0 || s.exported_program.empty()) {
    bis.status = "error";
    bis.message = prefix + (n == 0 ? "guide mode needs the package wrapper's call-site list, and none was found"
                                   : needs_exported_program());
    rec.bisection(bis);
    return {Verdict::not_isolated, bis.message, ""};
  }
  Strategy strategy = env.settings.strategy;
  if (pred == Predicate::fault && env.device_key == "cpu") {
    strategy = Strategy::all;  // a CPU fault is synchronous: one printed run names the site
  }
  int repeats = env.settings.bisect_repeats.value_or(s.deterministic ? 1 : 3);
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
  rec.begin_phase("bisect", fmt::format("guide mode: {} call sites, {} search, up to {} level-2 rebuilds and {} runs",
                                        n, bis.strategy, planned, planned * repeats));

  GuideSearch search(env, s, pred, repeats);
  SearchResult sr = find_first_bad(n, strategy, [&](int lo, int hi) { return search.ask(lo, hi); });
  bis.message = prefix + fmt::format("guide mode: {} level-2 builds ({} from the cache)", rec.report().builds.count,
                                     rec.report().builds.cache_hits) +
                (sr.message.empty() ? "" : "; " + sr.message);
  record_search(bis, sr);
  rec.bisection(bis);
  if (interrupt_requested()) {
    return {Verdict::interrupted, "", ""};
  }
  if (sr.status == SearchResult::Status::inconclusive) {
    return {Verdict::inconclusive, "the search was inconclusive: " + sr.message, ""};
  }
  if (sr.status == SearchResult::Status::error && search.last_run_ok()) {
    return {Verdict::suppressed_by_instrumentation, "the failure did not reproduce in a guide-mode build", ""};
  }
  if (sr.status != SearchResult::Status::found || !sr.first) {
    return {Verdict::not_isolated, "the search did not name a call site: " + sr.message, ""};
  }
  int k = *sr.first;
  const RunEvidence* ev = search.evidence(k);
  Culprit c = build_culprit({k, pred, ev ? &ev->trace : nullptr, ev ? &ev->trace : nullptr, &s.wrapper,
                             ev && !ev->first_line.empty() ? ev->first_line : s.first_line, {}});
  rec.culprit(c, std::nullopt);
  return {Verdict::isolated, fmt::format("isolated to call site {} {} ({}) in guide mode", k, c.kernel, c.kind), ""};
}

}  // namespace aoti_bisect
