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
  if (f.kind == OutcomeKind::mismatch) {
    return "not shrunk: a mismatch is judged against the reference of the whole batch";
  }
  if (f.kind == OutcomeKind::timeout) {
    return "not shrunk: every run of a set of samples that hangs would take the whole time limit";
  }
  if (!f.deterministic) {
    return fmt::format("not shrunk: the failure reproduced in {} of {} runs, so a set of samples that passes could "
                       "pass by chance",
                       f.reproduced, f.runs);
  }
  return "";
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

void shrink_trigger(JobContext& job, const ModelDir& model, const MatrixPhase& matrix, const BatchDimension& dim) {
  const Settings& s = job.settings;
  Recorder& rec = job.recorder;
  if (!s.shrink) {
    return;
  }
  const Failure& f = matrix.failure();
  if (std::string why = why_not(matrix, f); !why.empty()) {
    rec.shrink_note(why);
    return;
  }
  if (dim.kind == BatchDimension::Kind::fixed) {
    rec.shrink_note(fmt::format("the package takes only batch {}: no smaller batch can run", dim.size));
    return;
  }
  if (dim.kind != BatchDimension::Kind::dynamic) {
    rec.shrink_note("not shrunk: " + dim.why);
    return;
  }
  const std::vector<TensorInfo>& inputs = matrix.baseline().cls.inputs;
  std::vector<int64_t> sizes;
  for (int i : dim.inputs) {
    if (static_cast<size_t>(i) >= inputs.size() || inputs[static_cast<size_t>(i)].shape.empty()) {
      rec.shrink_note(fmt::format("not shrunk: the run shows no input {} with a dimension 0", i));
      return;
    }
    sizes.push_back(inputs[static_cast<size_t>(i)].shape[0]);
  }
  const int64_t batch = sizes.front();
  if (std::any_of(sizes.begin(), sizes.end(), [&](int64_t n) { return n != batch; })) {
    std::vector<std::string> t;
    for (size_t k = 0; k < sizes.size(); ++k) {
      t.push_back(fmt::format("input {}: {}", dim.inputs[k], sizes[k]));
    }
    rec.shrink_note(fmt::format("not shrunk: the inputs that share the package's batch dimension hold different "
                                "batches ({})",
                                join(t, ", ")));
    return;
  }
  if (batch <= 1) {
    rec.shrink_note("not shrunk: the batch holds one sample");
    return;
  }
  const int64_t min = std::max<int64_t>(1, dim.min.value_or(1));
  const int levels = static_cast<int>(std::ceil(std::log2(static_cast<double>(batch))));
  const int budget = std::min(40, 4 * levels + 8);
  rec.begin_phase("shrink", fmt::format("the {} samples of the failing batch: halves first, then single samples, in "
                                        "the environment the failure reproduces in",
                                        batch));
  int serial = 0;
  struct Ran {
    std::string id;
    ChildResult result;
    bool repeated = false;  // run repeated to the package's smallest batch
  };
  std::map<std::vector<int64_t>, Ran> ran;
  auto run_rows = [&](const std::vector<int64_t>& rows) {
    ChildRequest req;
    req.id = fmt::format("shrink-{}", ++serial);
    req.variant = f.reproducing_variant.empty() ? "baseline" : f.reproducing_variant;
    req.env = matrix.chosen_env();
    req.model = model;
    req.group = "shrink";
    req.batches = matrix.run_list();  // the failing batch of a loop, where the job ran one
    req.samples = rows;
    req.batch_inputs = dim.inputs;
    return std::make_pair(req.id, job.runs.run(req));
  };
  bool as_is = true;  // sets below the compiled minimum run as they are, until one cannot
  auto oracle = [&](const std::vector<int64_t>& set) -> std::optional<bool> {
    if (interrupt_requested()) {
      return std::nullopt;
    }
    // A set smaller than the package's compiled minimum runs as it is first,
    // as the package runs it by default (its input checks off): repeated to
    // the minimum, a sample keeps its own company, which a model with batch
    // statistics sees. Repeated only where it could not run so.
    const bool small = static_cast<int64_t>(set.size()) < min;
    auto [id, r] = run_rows(small && !as_is ? padded_samples(set, min) : set);
    bool repeated = small && !as_is;
    if (small && as_is &&
        (!r.finished || r.cls.cannot_test || r.cls.internal ||
         (r.cls.kind != OutcomeKind::ok && r.cls.kind != f.kind)) &&
        !interrupt_requested()) {
      as_is = false;  // the next small sets go repeated straight away
      std::tie(id, r) = run_rows(padded_samples(set, min));
      repeated = true;
    }
    if (!r.finished || r.cls.cannot_test || r.cls.internal) {
      return std::nullopt;
    }
    const bool failed = r.cls.kind == f.kind;
    ran[set] = {id, std::move(r), repeated};
    return failed;
  };
  SampleShrink found = shrink_samples(batch, oracle, budget);
  if (static_cast<int64_t>(found.samples.size()) >= batch) {
    rec.shrink_note(found.stopped && serial == 0
                        ? std::string("not shrunk: the first run of a set of samples could not say")
                        : fmt::format("not shrunk: no smaller set of the {} samples failed in {} run{}", batch,
                                      serial, serial == 1 ? "" : "s"));
    return;
  }
  MinimalInputs m;
  for (int64_t k : found.samples) {
    m.samples.push_back(k + 1);
  }
  m.of = batch;
  m.minimal = found.minimal;
  auto it = ran.find(found.samples);
  const bool repeated = it != ran.end() && it->second.repeated;
  bool singles_repeated = false;  // a single sample ran repeated, not alone
  for (const auto& [set, run] : ran) {
    singles_repeated = singles_repeated || (set.size() == 1 && run.repeated);
  }
  m.alone = found.samples.size() == 1 && !repeated;
  m.none_alone = found.none_alone && !singles_repeated;
  m.repeated_to = repeated ? min : 0;
  m.runs = serial;
  m.how = found.by_halves ? "halves, then the one sample left" : "halves, then delta debugging";
  const std::string who = samples_text(found.samples);
  const std::string could_not = fmt::format("below batch {}, the smallest the package was compiled for, it could not run "
                                            "as it is",
                                            min);
  if (found.samples.size() == 1) {
    m.sentence = repeated ? fmt::format("{} of {} fails repeated to batch {} ({})", who, batch, min, could_not)
                          : fmt::format("{} of {} fails alone", who, batch);
  } else if (found.none_alone && singles_repeated) {
    m.sentence = fmt::format("{} of {} fail together; {} fails repeated to batch {} on its own ({})", who, batch,
                             found.samples.size() == 2 ? "neither" : "none", min, could_not);
  } else if (found.none_alone && found.samples.size() == 2) {
    m.sentence = fmt::format("{} of {} fail together; neither alone", who, batch);
  } else if (found.none_alone) {
    m.sentence = fmt::format("{} of {} fail together; none alone", who, batch);
  } else {
    m.sentence = fmt::format("{} of {} fail together{}", who, batch,
                             found.minimal ? "; no smaller set of them failed"
                                           : "; the smallest failing set found before the runs ran out");
  }
  if (static_cast<int64_t>(found.samples.size()) < min && !repeated) {
    m.sentence += fmt::format(" (run at batch {}, below batch {}, the smallest the package was compiled for, as the "
                              "package runs it by default)",
                              found.samples.size(), min);
  }
  m.sentence += fmt::format(" ({} run{} of sub-batches)", m.runs, m.runs == 1 ? "" : "s");
  if (it != ran.end()) {
    // What the failing set holds that the sets that passed do not.
    std::vector<BatchRun> passing_runs;
    for (const auto& [set, run] : ran) {
      if (run.result.cls.kind != f.kind) {
        passing_runs.push_back(as_batch_run(run.result));
      }
    }
    std::vector<const BatchRun*> passing;
    for (const auto& b : passing_runs) {
      passing.push_back(&b);
    }
    m.facts = distinguishing_facts(as_batch_run(it->second.result), passing, who, "the samples that passed", false);
    const fs::path saved = s.out_dir / "runs" / it->second.id / "inputs.pt";
    const fs::path dest = s.out_dir / "repro" / "minimal.inputs.pt";
    std::error_code ec;
    fs::create_directories(dest.parent_path(), ec);
    if (!ec && fs::is_regular_file(saved, ec)) {
      fs::copy_file(saved, dest, fs::copy_options::overwrite_existing, ec);
      if (!ec) {
        m.file = display_path(dest);
      }
    }
  }
  std::string reproduce;
  if (!m.file.empty()) {
    Settings with_minimal = s;
    with_minimal.inputs = s.out_dir / "repro" / "minimal.inputs.pt";
    with_minimal.sample_inputs = false;
    reproduce = reproduce_command(with_minimal, matrix.chosen_env(), {});
  }
  rec.minimal_inputs(std::move(m), reproduce);
}

}  // namespace aoti_bisect
