// Where a sample depends on its batch: one sample run alone, then in the failing batch, compared at every
// call site, naming the first site whose values for the sample differ beyond tolerance.

#include "job/batch_dependence.hpp"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "common/files.hpp"
#include "common/scratch_dir.hpp"
#include "common/text.hpp"
#include "evidence/divergence.hpp"
#include "evidence/evidence.hpp"
#include "job/shrink.hpp"
#include "process/process.hpp"
#include "protocol/events.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// At most this many samples are compared, each in a run of its own.
constexpr size_t k_most_samples = 8;

std::string plural(int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// What differs at the sample's first call site, in the figures the runner measured.
std::string difference_text(const SampleInCompany& c) {
  std::string what = c.whole_batch
                         ? fmt::format("{}, which has no row per sample (a value over the whole batch)", c.tensor)
                         : fmt::format("{}, the sample's rows of its dimension {}", c.tensor, c.rows_dim);
  std::string counts = fmt::format("{} of {} differ", c.differ, plural(c.elements, "element", "elements"));
  if (c.nonfinite > 0) {
    return fmt::format("{}: {}, {} NaN or Inf in one run only (at the first such: {} in the batch, {} alone)", what,
                       counts, c.nonfinite, c.in_batch, c.alone);
  }
  return fmt::format("{}: {}, the largest difference {} ({} in the batch, {} alone; the tolerance there {})", what,
                     counts, number_text(c.max_abs), c.in_batch, c.alone, number_text(c.bound));
}

std::string compared_text(const SampleInCompany& c) {
  return fmt::format("{} compared ({}{})", plural(c.sites_compared, "call site", "call sites"),
                     plural(c.tensors_compared, "tensor", "tensors"),
                     c.tensors_not_compared > 0
                         ? fmt::format("; {} not, no one dimension of {} holding the batch", c.tensors_not_compared,
                                       c.tensors_not_compared == 1 ? "it" : "them")
                         : std::string());
}

// The samples compared (0-based, in the file's order): the trigger's, then
// the first others, k_most_samples in all.
std::vector<int64_t> samples_to_compare(const MinimalInputs& m) {
  std::vector<int64_t> out;
  for (int64_t k : m.samples) {
    if (out.size() < k_most_samples) {
      out.push_back(k - 1);
    }
  }
  for (int64_t k = 0; k < m.of && out.size() < k_most_samples; ++k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) {
      out.push_back(k);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One sample's comparisons from the run in company: its probe events with
// its own `compare` object (the runner's `compare_samples[]` entry).
SampleInCompany read_sample(const Events& events, int64_t sample, int last, const ToleranceTable& tolerances) {
  SampleInCompany c;
  c.sample = sample + 1;
  Events own;
  for (const auto& e : events.of({EventKind::probe})) {
    if (e.value("site", 0) > last || !e.contains("compare_samples") || !e["compare_samples"].is_array()) {
      continue;
    }
    for (const auto& one : e["compare_samples"]) {
      if (one.value("sample", int64_t{-1}) != sample) {
        continue;
      }
      (one.contains("unmatched") ? c.tensors_not_compared : c.tensors_compared) += 1;
      nlohmann::json copy = e;
      copy.erase("compare_samples");
      copy["compare"] = one;
      own.push_back(std::move(copy));
    }
  }
  for (const SiteCompare& site : compare_sites(own, tolerances)) {
    if (site.outputs.empty()) {
      continue;
    }
    ++c.sites_compared;
    if (c.site || !site.introduced) {
      continue;
    }
    const TensorCompare& t = *site.introduced;
    c.site = site.site;
    c.kernel = site.kernel;
    c.tensor = t.tensor;
    c.whole_batch = t.whole_batch;
    c.rows_dim = t.rows_dim;
    c.differ = t.differ;
    c.elements = t.elements;
    c.nonfinite = t.nonfinite;
    c.max_abs = t.max_abs;
    c.bound = t.tolerance.atol + t.tolerance.rtol * t.scale;
    c.in_batch = t.actual;
    c.alone = t.expected;
  }
  return c;
}

std::vector<int64_t> numbered(const std::vector<SampleInCompany>& samples, bool differing) {
  std::vector<int64_t> out;
  for (const auto& c : samples) {
    if (c.site.has_value() == differing) {
      out.push_back(c.sample - 1);
    }
  }
  return out;
}

}  // namespace

namespace {

// The runs of each chosen sample alone (at batch 1 as the package runs it
// by default; repeated to its compiled minimum only where it could not run
// so), every call site's values saved; the runs in company read them back.
struct AloneRuns {
  nlohmann::json refs = nlohmann::json::array();  // the reference file's samples
  std::map<int64_t, RunTrace> traces;
  std::map<int64_t, int64_t> rows;  // the batch each ran at
  std::string failed;               // why the comparison cannot go on
};

class CompanyAndAlone {
 public:
  CompanyAndAlone(JobContext& job, const ModelDir& probed, const MatrixPhase& matrix, const BatchDimension& dim,
                  fs::path dir)
      : m_job(job), m_probed(probed), m_matrix(matrix), m_dim(dim), m_dir(std::move(dir)) {}

  ChildRequest request(const std::string& id, const ProbePlan& plan) const {
    const Failure& f = m_matrix.failure();
    ChildRequest req;
    req.id = id;
    req.variant = f.reproducing_variant.empty() ? "baseline" : f.reproducing_variant;
    req.env = m_matrix.chosen_env();
    req.model = m_probed;
    req.probe_plan = plan;
    req.group = "batch";
    req.batches = m_matrix.run_list();
    return req;
  }

  AloneRuns alone(const std::vector<int64_t>& chosen, int64_t min, BatchDependence& b) {
    AloneRuns out;
    std::error_code ec;
    bool as_is = true;  // alone at batch 1, until a run cannot
    for (int64_t sample : chosen) {
      ProbePlan save;
      save.default_mode = ProbeMode::save;  // every call site
      save.save_dir = m_dir / fmt::format("sample{}", sample + 1);
      save.save_after = true;
      fs::create_directories(m_dir, ec);
      ChildResult run;
      int64_t rows = 1;
      for (int attempt = as_is ? 0 : 1; attempt < 2; ++attempt) {
        rows = attempt == 0 ? 1 : min;
        ChildRequest req = request(fmt::format("batch-alone-{}{}", sample + 1, attempt == 0 ? "" : "-repeated"), save);
        req.samples = padded_samples({sample}, rows);
        req.batch_inputs = m_dim.inputs;
        fs::remove_all(save.save_dir, ec);
        fs::create_directories(save.save_dir, ec);
        run = m_job.runs.run(req);
        ++b.runs;
        const OutcomeKind kind = m_matrix.failure().kind;
        const bool usable = run.finished && !run.cls.cannot_test && !run.cls.internal &&
                            (run.cls.kind == OutcomeKind::ok || run.cls.kind == kind);
        if (usable || min <= 1 || interrupt_requested()) {
          break;
        }
        as_is = false;  // the next samples run repeated straight away
      }
      nlohmann::json sites = nlohmann::json::object();
      for (const auto& e : run.events.of({EventKind::saved})) {
        sites[std::to_string(e.value("site", 0))][e.value("tensor", "")] = e.value("path", "");
      }
      if (sites.empty()) {
        out.failed = fmt::format(
            "not compared in company and alone: the run of sample {} alone saved no call "
            "site's values",
            sample + 1);
        return out;
      }
      out.refs.push_back({{"sample", sample}, {"alone", rows}, {"sites", std::move(sites)}});
      b.repeated = b.repeated || rows > 1;
      out.rows[sample] = rows;
      out.traces[sample] = trace_from_events(run.events);
    }
    return out;
  }

  // The failing batch run once more, each call site's values compared with
  // the samples' own alone.
  ChildResult company(AloneRuns& alone, BatchDependence& b) {
    nlohmann::json ref = {{"rows", {{"batch", b.batch}, {"alone", 1}}}, {"samples", std::move(alone.refs)}};
    const fs::path ref_file = m_dir / "alone.json";
    write_file_atomic(ref_file, ref.dump());
    ProbePlan compare;
    compare.default_mode = ProbeMode::stats;
    ChildRequest req = request("batch-company", compare);
    req.node_reference = ref_file;
    ChildResult run = m_job.runs.run(req);
    ++b.runs;
    return run;
  }

 private:
  JobContext& m_job;
  const ModelDir& m_probed;
  const MatrixPhase& m_matrix;
  const BatchDimension& m_dim;
  fs::path m_dir;
};

// The last call site every run launched alike: a branch taken by one batch
// size and not the other ends the comparison there (INT_MAX: all).
int last_common_site(const RunTrace& company, const std::map<int64_t, RunTrace>& alone) {
  int last = INT_MAX;
  for (const auto& [k, site] : company.sites) {
    for (const auto& [sample, ta] : alone) {
      const SiteTrace* other = ta.site(k);
      if (k > 0 && k <= last && (other == nullptr || other->kernel != site.kernel)) {
        last = k - 1;
      }
    }
  }
  return last;
}

// The sentence: which samples differ in company and where, or that they agree.
std::string dependence_sentence(const BatchDependence& b, const MinimalInputs& m, const std::vector<int64_t>& chosen,
                                int64_t min, bool company_recorded, int last) {
  const std::vector<int64_t> differing = numbered(b.samples, true);
  const std::vector<int64_t> agreeing = numbered(b.samples, false);
  const std::string alone_text = fmt::format(
      "{} alone{}", chosen.size() == 1 ? "a run of it" : "runs of each",
      b.repeated ? fmt::format(" (repeated to batch {} where it could not run at batch 1, below batch {}, the smallest "
                               "the package was compiled for)",
                               min, min)
      : min > 1 ? fmt::format(" (at batch 1, below batch {}, the smallest the package was compiled for, as the package "
                              "runs it by default)",
                              min)
                : std::string());
  std::string head;
  if (b.fails_only_in_company) {
    std::vector<int64_t> trigger;
    for (int64_t k : m.samples) {
      trigger.push_back(k - 1);
    }
    head = samples_text(trigger) + " fail only together; ";
  }
  std::string of =
      static_cast<int64_t>(chosen.size()) < b.batch
          ? fmt::format(" ({} of the {} samples compared: the trigger's and the first others)", chosen.size(), b.batch)
          : std::string();
  const SampleInCompany& any = b.samples.front();
  std::string sentence;
  if (b.detailed) {
    const SampleInCompany& d = b.samples[*b.detailed];
    sentence = fmt::format(
        "{}{} differ{} between the failing batch of {} and {}{}{}: sample {} first at call site {} "
        "({}), {}; {}",
        head, samples_text(differing), differing.size() == 1 ? "s" : "", b.batch, alone_text,
        agreeing.empty()
            ? std::string()
            : fmt::format("; {} agree{} within tolerance", samples_text(agreeing), agreeing.size() == 1 ? "s" : ""),
        of, d.sample, *d.site, d.kernel, difference_text(d), compared_text(d));
  } else if (any.sites_compared == 0) {
    sentence = fmt::format("{}{} in the failing batch of {} could not be compared with {}: {}", head,
                           samples_text(chosen), b.batch, alone_text,
                           company_recorded ? compared_text(any) : "the run in company recorded no probe");
  } else {
    sentence = fmt::format(
        "{}{} agree{} within tolerance between the failing batch of {} and {}{}, at every one of the {} compared{} "
        "({}{}{})",
        head, samples_text(chosen), chosen.size() == 1 ? "s" : "", b.batch, alone_text, of,
        plural(any.sites_compared, "call site", "call sites"), chosen.size() == 1 ? "" : " for each",
        plural(any.tensors_compared, "tensor", "tensors"), chosen.size() == 1 ? "" : " per sample",
        any.tensors_not_compared > 0
            ? fmt::format("; {} not, no one dimension of {} holding the batch", any.tensors_not_compared,
                          any.tensors_not_compared == 1 ? "it" : "them")
            : std::string());
  }
  if (last != INT_MAX) {
    sentence += fmt::format("; the runs launched other kernels from call site {} on, compared up to it", last + 1);
  }
  return sentence;
}

}  // namespace

void check_batch_dependence(JobContext& job, const std::optional<ModelDir>& probed, const MatrixPhase& matrix,
                            const BatchDimension& dim) {
  const Settings& s = job.settings;
  Recorder& rec = job.recorder;
  const Report& report = rec.report();
  if (!s.shrink || !report.minimal_inputs) {
    return;  // not shrunk: the shrink's note says why
  }
  const MinimalInputs m = *report.minimal_inputs;
  if (!probed) {
    rec.batch_dependence_note("not compared in company and alone: the search had no model with run-time probes");
    return;
  }
  if (interrupt_requested() || m.of < 2) {
    return;
  }
  BatchDependence b;
  b.batch = m.of;
  b.fails_only_in_company = m.none_alone;
  const int64_t min = std::max<int64_t>(1, dim.min.value_or(1));
  const std::vector<int64_t> chosen = samples_to_compare(m);
  rec.begin_phase("batch", fmt::format("{} in the failing batch of {} against each alone: {} runs probing every call "
                                       "site, compared site by site",
                                       samples_text(chosen), b.batch, chosen.size() + 1));
  rec.plan_runs(static_cast<int>(chosen.size()) + 1);
  const fs::path dir = fs::absolute(s.out_dir / "batch-dependence");
  std::error_code ec;
  fs::remove_all(dir, ec);
  const ScratchDir cleanup(dir);  // tensor contents: never left in the report folder
  CompanyAndAlone comparison(job, *probed, matrix, dim, dir);
  AloneRuns alone = comparison.alone(chosen, min, b);
  if (!alone.failed.empty()) {
    rec.batch_dependence_note(alone.failed);
    return;
  }
  ChildResult company = comparison.company(alone, b);
  if (interrupt_requested()) {
    return;
  }
  const int last = last_common_site(trace_from_events(company.events), alone.traces);
  for (int64_t sample : chosen) {
    b.samples.push_back(read_sample(company.events, sample, last, s.tolerances));
    b.samples.back().in_trigger = std::find(m.samples.begin(), m.samples.end(), sample + 1) != m.samples.end();
    b.samples.back().alone_batch = alone.rows[sample];
  }
  // The sample the sentence details: where the trigger fails only in
  // company, the first of its samples that differs; else the first other.
  for (int pass = 0; pass < 2 && !b.detailed; ++pass) {
    for (size_t i = 0; i < b.samples.size() && !b.detailed; ++i) {
      const bool preferred = b.fails_only_in_company ? b.samples[i].in_trigger : !b.samples[i].in_trigger;
      if (b.samples[i].site && (pass == 1 || preferred)) {
        b.detailed = i;
      }
    }
  }
  b.dependent = b.detailed.has_value() || b.fails_only_in_company;
  b.sentence = dependence_sentence(b, m, chosen, min, !company.events.empty(), last);
  rec.batch_dependence(std::move(b));
}

}  // namespace aoti_bisect
