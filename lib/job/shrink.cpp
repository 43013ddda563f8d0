// Shrinking the trigger: runs of sub-batches find the failing batch's smallest failing set of samples,
// whose inputs are saved as repro/minimal.inputs.pt; or why it cannot be shrunk.

#include "job/shrink.hpp"

#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "bisect/samples.hpp"
#include "classify/batch_runs.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "process/process.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// Why the batch cannot be shrunk here ("" when it can).
std::string why_not(const MatrixPhase& matrix, const Failure& f) {
  if (matrix.run_list().size() > 1) {
    return "not shrunk: the failure comes from a run over several batches";
  }
  if (f.kind == OutcomeKind::timeout) {
    return "not shrunk: every run of a set of samples that hangs would take the whole time limit";
  }
  if (!f.deterministic) {
    return fmt::format(
        "not shrunk: the failure reproduced in {} of {} runs, so a set of samples that passes could "
        "pass by chance",
        f.reproduced, f.runs);
  }
  return "";
}

// A mismatch is judged against the reference: a set of samples is judged
// against the reference's rows of those samples (the runner cuts it with
// the inputs), which only holds where every output has the batch as its
// dimension 0. "" when it does.
std::string reference_not_cut(const MatrixPhase& matrix, int64_t batch) {
  if (matrix.failure().kind != OutcomeKind::mismatch) {
    return "";
  }
  const auto& outputs = matrix.baseline().cls.outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& shape = outputs[i].shape;
    if (shape.empty() || shape[0] != batch) {
      std::vector<std::string> dims;
      for (int64_t n : shape) {
        dims.push_back(std::to_string(n));
      }
      return fmt::format(
          "not shrunk: a mismatch is judged against the reference, and output {} (shape [{}]) has no dimension 0 of "
          "the batch's {} samples to cut it with",
          i, join(dims, ", "), batch);
    }
  }
  return outputs.empty() ? "not shrunk: the baseline run shows no outputs to cut the reference with" : "";
}

BatchRun as_batch_run(const ChildResult& r) {
  BatchRun b;
  b.inputs = r.cls.inputs;
  b.input_stats = r.cls.input_stats;
  b.kind = r.cls.kind;
  return b;
}

}  // namespace

std::vector<int64_t> padded_samples(const std::vector<int64_t>& set, int64_t min) {
  std::vector<int64_t> out = set;
  for (size_t i = 0; static_cast<int64_t>(out.size()) < min; ++i) {
    out.push_back(set[i % set.size()]);
  }
  return out;
}

std::string samples_text(const std::vector<int64_t>& samples) {
  std::vector<std::string> n;
  for (int64_t s : samples) {
    n.push_back(std::to_string(s + 1));
  }
  if (n.size() == 1) {
    return "sample " + n.front();
  }
  std::string last = n.back();
  n.pop_back();
  return "samples " + join(n, ", ") + " and " + last;
}

namespace {

// The failing batch's size where it can be shrunk, else why not (the report's shrink note).
struct Shrinkable {
  int64_t batch = 0;
  std::string why_not;
};

Shrinkable shrinkable_batch(const MatrixPhase& matrix, const BatchDimension& dim) {
  if (std::string why = why_not(matrix, matrix.failure()); !why.empty()) {
    return {0, why};
  }
  if (dim.kind == BatchDimension::Kind::fixed) {
    return {0, fmt::format("the package takes only batch {}: no smaller batch can run", dim.size)};
  }
  if (dim.kind != BatchDimension::Kind::dynamic) {
    return {0, "not shrunk: " + dim.why};
  }
  const std::vector<TensorInfo>& inputs = matrix.baseline().cls.inputs;
  std::vector<int64_t> sizes;
  for (int i : dim.inputs) {
    if (static_cast<size_t>(i) >= inputs.size() || inputs[static_cast<size_t>(i)].shape.empty()) {
      return {0, fmt::format("not shrunk: the run shows no input {} with a dimension 0", i)};
    }
    sizes.push_back(inputs[static_cast<size_t>(i)].shape[0]);
  }
  const int64_t batch = sizes.front();
  if (std::any_of(sizes.begin(), sizes.end(), [&](int64_t n) { return n != batch; })) {
    std::vector<std::string> t;
    for (size_t k = 0; k < sizes.size(); ++k) {
      t.push_back(fmt::format("input {}: {}", dim.inputs[k], sizes[k]));
    }
    return {0, fmt::format("not shrunk: the inputs that share the package's batch dimension hold different "
                           "batches ({})",
                           join(t, ", "))};
  }
  if (batch <= 1) {
    return {0, "not shrunk: the batch holds one sample"};
  }
  if (std::string why = reference_not_cut(matrix, batch); !why.empty()) {
    return {0, why};
  }
  return {batch, ""};
}

// The runs of sets of the failing batch's samples, in the environment the
// failure reproduces in: the oracle shrink_samples asks.
class SubBatchRuns {
 public:
  struct Ran {
    std::string id;
    ChildResult result;
    bool repeated = false;  // run repeated to the package's smallest batch
  };

  SubBatchRuns(JobContext& job, const ModelDir& model, const MatrixPhase& matrix, const BatchDimension& dim,
               int64_t min)
      : m_job(job), m_model(model), m_matrix(matrix), m_dim(dim), m_min(min) {}

  // Whether `set` fails as the batch did; nullopt when its run cannot say.
  std::optional<bool> fails(const std::vector<int64_t>& set) {
    if (interrupt_requested()) {
      return std::nullopt;
    }
    // A set smaller than the package's compiled minimum runs as it is first,
    // as the package runs it by default (its input checks off): repeated to
    // the minimum, a sample keeps its own company, which a model with batch
    // statistics sees. Repeated only where it could not run so.
    const OutcomeKind kind = m_matrix.failure().kind;
    const bool small = static_cast<int64_t>(set.size()) < m_min;
    auto [id, r] = run_rows(small && !m_as_is ? padded_samples(set, m_min) : set);
    bool repeated = small && !m_as_is;
    if (small && m_as_is &&
        (!r.finished || r.cls.cannot_test || r.cls.internal || (r.cls.kind != OutcomeKind::ok && r.cls.kind != kind)) &&
        !interrupt_requested()) {
      m_as_is = false;  // the next small sets go repeated straight away
      std::tie(id, r) = run_rows(padded_samples(set, m_min));
      repeated = true;
    }
    if (!r.finished || r.cls.cannot_test || r.cls.internal) {
      return std::nullopt;
    }
    const bool failed = r.cls.kind == kind;
    m_ran[set] = {id, std::move(r), repeated};
    return failed;
  }

  int runs() const { return m_serial; }
  const std::map<std::vector<int64_t>, Ran>& ran() const { return m_ran; }

 private:
  std::pair<std::string, ChildResult> run_rows(const std::vector<int64_t>& rows) {
    const Failure& f = m_matrix.failure();
    ChildRequest req;
    req.id = fmt::format("shrink-{}", ++m_serial);
    req.variant = f.reproducing_variant.empty() ? "baseline" : f.reproducing_variant;
    req.env = m_matrix.chosen_env();
    req.model = m_model;
    req.group = "shrink";
    req.batches = m_matrix.run_list();  // the failing batch of a loop, where the job ran one
    req.samples = rows;
    req.batch_inputs = m_dim.inputs;
    return std::make_pair(req.id, m_job.runs.run(req));
  }

  JobContext& m_job;
  const ModelDir& m_model;
  const MatrixPhase& m_matrix;
  const BatchDimension& m_dim;
  const int64_t m_min;
  int m_serial = 0;
  bool m_as_is = true;  // sets below the compiled minimum run as they are, until one cannot
  std::map<std::vector<int64_t>, Ran> m_ran;
};

// What the shrinking found, in one sentence.
std::string minimal_sentence(const SampleShrink& found, int64_t batch, int64_t min, bool repeated,
                             bool singles_repeated, int runs) {
  const std::string who = samples_text(found.samples);
  const std::string could_not = fmt::format(
      "below batch {}, the smallest the package was compiled for, it could not run "
      "as it is",
      min);
  std::string sentence;
  if (found.samples.size() == 1) {
    sentence = repeated ? fmt::format("{} of {} fails repeated to batch {} ({})", who, batch, min, could_not)
                        : fmt::format("{} of {} fails alone", who, batch);
  } else if (found.none_alone && singles_repeated) {
    sentence = fmt::format("{} of {} fail together; {} fails repeated to batch {} on its own ({})", who, batch,
                           found.samples.size() == 2 ? "neither" : "none", min, could_not);
  } else if (found.none_alone && found.samples.size() == 2) {
    sentence = fmt::format("{} of {} fail together; neither alone", who, batch);
  } else if (found.none_alone) {
    sentence = fmt::format("{} of {} fail together; none alone", who, batch);
  } else {
    sentence = fmt::format(
        "{} of {} fail together{}", who, batch,
        found.minimal ? "; no smaller set of them failed" : "; the smallest failing set found before the runs ran out");
  }
  if (static_cast<int64_t>(found.samples.size()) < min && !repeated) {
    sentence += fmt::format(
        " (run at batch {}, below batch {}, the smallest the package was compiled for, as the "
        "package runs it by default)",
        found.samples.size(), min);
  }
  return sentence + fmt::format(" ({} run{} of sub-batches)", runs, runs == 1 ? "" : "s");
}

// What the failing set holds that the sets that passed do not, and its
// inputs saved as repro/minimal.inputs.pt.
void keep_failing_set(const Settings& s, OutcomeKind kind, const std::map<std::vector<int64_t>, SubBatchRuns::Ran>& ran,
                      const SubBatchRuns::Ran& failing, const std::string& who, MinimalInputs& m) {
  std::vector<BatchRun> passing_runs;
  for (const auto& [set, run] : ran) {
    if (run.result.cls.kind != kind) {
      passing_runs.push_back(as_batch_run(run.result));
    }
  }
  std::vector<const BatchRun*> passing;
  for (const auto& b : passing_runs) {
    passing.push_back(&b);
  }
  m.facts = distinguishing_facts(as_batch_run(failing.result), passing, who, "the samples that passed", false);
  const fs::path saved = s.out_dir / "runs" / failing.id / "inputs.pt";
  const fs::path dest = s.out_dir / "repro" / "minimal.inputs.pt";
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (!ec && fs::is_regular_file(saved, ec)) {
    fs::copy_file(saved, dest, fs::copy_options::overwrite_existing, ec);
    if (!ec) {
      m.file = display_path(dest);
    }
  }
  // A mismatch's set is judged against the reference's rows of its samples,
  // which the runner saved beside them.
  const fs::path reference = s.out_dir / "runs" / failing.id / "reference.pt";
  if (!m.file.empty() && kind == OutcomeKind::mismatch && fs::is_regular_file(reference, ec)) {
    fs::copy_file(reference, dest.parent_path() / "minimal.reference.pt", fs::copy_options::overwrite_existing, ec);
    if (!ec) {
      m.reference = display_path(dest.parent_path() / "minimal.reference.pt");
    }
  }
}

}  // namespace

void shrink_trigger(JobContext& job, const ModelDir& model, const MatrixPhase& matrix, const BatchDimension& dim) {
  const Settings& s = job.settings;
  Recorder& rec = job.recorder;
  if (!s.shrink) {
    return;
  }
  const Shrinkable shrinkable = shrinkable_batch(matrix, dim);
  if (!shrinkable.why_not.empty()) {
    rec.shrink_note(shrinkable.why_not);
    return;
  }
  const int64_t batch = shrinkable.batch;
  const int64_t min = std::max<int64_t>(1, dim.min.value_or(1));
  const int levels = static_cast<int>(std::ceil(std::log2(static_cast<double>(batch))));
  const int budget = std::min(40, 4 * levels + 8);
  rec.begin_phase("shrink", fmt::format("the {} samples of the failing batch: halves first, then single samples, in "
                                        "the environment the failure reproduces in",
                                        batch));
  SubBatchRuns runs(job, model, matrix, dim, min);
  SampleShrink found = shrink_samples(
      batch, [&](const std::vector<int64_t>& set) { return runs.fails(set); }, budget);
  if (static_cast<int64_t>(found.samples.size()) >= batch) {
    rec.shrink_note(found.stopped && runs.runs() == 0
                        ? std::string("not shrunk: the first run of a set of samples could not say")
                        : fmt::format("not shrunk: no smaller set of the {} samples failed in {} run{}", batch,
                                      runs.runs(), runs.runs() == 1 ? "" : "s"));
    return;
  }
  MinimalInputs m;
  for (int64_t k : found.samples) {
    m.samples.push_back(k + 1);
  }
  m.of = batch;
  m.minimal = found.minimal;
  auto it = runs.ran().find(found.samples);
  const bool repeated = it != runs.ran().end() && it->second.repeated;
  bool singles_repeated = false;  // a single sample ran repeated, not alone
  for (const auto& [set, run] : runs.ran()) {
    singles_repeated = singles_repeated || (set.size() == 1 && run.repeated);
  }
  m.alone = found.samples.size() == 1 && !repeated;
  m.none_alone = found.none_alone && !singles_repeated;
  m.repeated_to = repeated ? min : 0;
  m.runs = runs.runs();
  m.how = found.by_halves ? "halves, then the one sample left" : "halves, then delta debugging";
  m.sentence = minimal_sentence(found, batch, min, repeated, singles_repeated, m.runs);
  if (it != runs.ran().end()) {
    keep_failing_set(s, matrix.failure().kind, runs.ran(), it->second, samples_text(found.samples), m);
  }
  std::string reproduce;
  if (!m.file.empty()) {
    Settings with_minimal = s;
    with_minimal.inputs = s.out_dir / "repro" / "minimal.inputs.pt";
    with_minimal.sample_inputs = false;
    if (!m.reference.empty() && !s.against_eager) {
      with_minimal.reference = s.out_dir / "repro" / "minimal.reference.pt";
    }
    reproduce = reproduce_command(with_minimal, matrix.chosen_env(), {});
  }
  rec.minimal_inputs(std::move(m), reproduce);
}

}  // namespace aoti_bisect
