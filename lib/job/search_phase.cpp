// The search phase: the answer first, then the search for the matrix's failure.
#include "job/search_phase.hpp"

#include <fmt/format.h>

#include "inductor/build.hpp"
#include "job/batch_dependence.hpp"
#include "job/judge_phase.hpp"
#include "matrix/matrix.hpp"
#include "process/process.hpp"
#include "repro/replay.hpp"
#include "search/mask_scan.hpp"
#include "search/search.hpp"

namespace aoti_bisect {

Step<BisectOutcome> SearchPhase::search(const BisectSetup& setup) {
  BisectOutcome b;
  try {
    b = run_bisection(m_job, setup, m_source);
  } catch (const ProgramRefused& e) {
    return Stop{Verdict::could_not_test, e.what()};
  }
  if (b.verdict == Verdict::interrupted || interrupt_requested()) {
    return interrupted_during(fmt::format("during the kernel bisection ({} phase)", m_job.recorder.phase()));
  }
  return b;
}

std::optional<FirstRunProbes> SearchPhase::first_run_probes() {
  const Settings& s = m_job.settings;
  if (!s.bisect || !s.answer_first || s.batches.size() > 1 || s.plan.empty() || m_model.dir.empty()) {
    return std::nullopt;
  }
  BisectSetup setup{.pkg = *m_in.pkg,
                    .model = *m_in.model,
                    .wrapper = m_in.wrapper,
                    .env = s.plan.front().env,
                    .variant = s.plan.front().variant,
                    .kind = OutcomeKind::nonfinite,
                    .first_line = "",
                    .deterministic = true,
                    .runner_torch_version = m_job.recorder.report().environment.torch_version,
                    .original = m_model};
  auto probes = aoti_bisect::first_run_probes(m_job, setup, m_source);
  if (auto* why = std::get_if<std::string>(&probes)) {
    m_job.recorder.progress().note("the first run is plain: " + *why);
    return std::nullopt;
  }
  return std::get<FirstRunProbes>(probes);
}

Step<> SearchPhase::first(const MatrixPhase& matrix) {
  Recorder& rec = m_job.recorder;
  const ChildResult& base = matrix.baseline();
  rec.note(
      fmt::format("the kernel search runs first, in the baseline's environment; the flag matrix follows ({}) "
                  "and completes the report (--matrix-first: the matrix before the search)",
                  matrix_plan_text(m_job.settings.plan,
                                   MatrixStage{base.cls.kind, m_job.settings.profile.backend != "cpu", false})));
  BisectSetup setup{.pkg = *m_in.pkg,
                    .model = *m_in.model,
                    .wrapper = m_in.wrapper,
                    .env = matrix.baseline_run().env,
                    .variant = matrix.baseline_run().variant,
                    .kind = base.cls.kind,
                    .first_line = base.cls.first_line,
                    .deterministic = true,
                    .baseline_seconds = base.status.seconds,
                    .runner_torch_version = rec.report().environment.torch_version,
                    .original = m_model,
                    .batches = matrix.run_list()};
  setup.first_trace = matrix.first_trace(setup.env, setup.first_trace_model);
  const std::string next = "; the flag matrix runs next and completes the report";
  setup.on_found = [&rec](const std::string& line) { rec.first_answer(line, false); };
  setup.on_culprit = [&rec, &next](const std::string& reason) { rec.answer_confirmed(reason + next); };
  auto first = search(setup);
  if (first.stopped()) {
    return first.stop();
  }
  if (first->verdict == Verdict::isolated && !rec.report().first_answer_seconds) {
    rec.first_answer(first->reason + next);  // a search that names its culprit elsewhere (guide mode)
  }
  m_early = std::move(*first);
  return Go{};
}

const BatchDimension& SearchPhase::batch_dimension() {
  if (!m_dim) {
    m_dim = aoti_bisect::batch_dimension(
        m_in.wrapper, m_in.model->wrapper_cpp.empty() ? "" : m_in.pkg->read_entry(m_in.model->wrapper_cpp));
  }
  return *m_dim;
}

Step<SearchAnswer> SearchPhase::failure(const MatrixPhase& matrix) {
  Recorder& rec = m_job.recorder;
  const Failure& f = matrix.failure();
  const std::string reproduced = matrix.failure_text();
  if (!m_job.settings.bisect) {
    return finished(Verdict::not_isolated, reproduced + "; kernel bisection was not asked for (--no-bisect)");
  }
  const BatchDimension& dim = batch_dimension();
  auto answer = [&](const BisectOutcome& b) {
    check_batch_dependence(m_job, b.probed, matrix, dim);
    if (b.verdict == Verdict::isolated) {
      judge_culprit(m_job, m_in, matrix);
    }
    return SearchAnswer{b.verdict, b.reason.empty() ? reproduced : reproduced + "; " + b.reason, b.explain_later};
  };
  if (m_early) {
    if (f.kind == matrix.baseline().cls.kind && f.deterministic && matrix.chosen_env() == matrix.baseline_run().env) {
      rec.refresh_repro_command();
      return answer(*m_early);
    }
    std::string why = f.kind != matrix.baseline().cls.kind
                          ? fmt::format("the matrix's failure is {}", outcome_name(f.kind))
                      : !f.deterministic ? std::string("not every run of the matrix reproduced it")
                                         : fmt::format("the matrix chose {} to search under", f.reproducing_variant);
    rec.set_aside_search();
    rec.note(fmt::format("the first search's answer is set aside ({}): the search runs again", why));
    clear_repro_folder(m_job.settings.out_dir / "repro");  // its saved tensors; the new search saves its own
  }
  BisectSetup setup{.pkg = *m_in.pkg,
                    .model = *m_in.model,
                    .wrapper = m_in.wrapper,
                    .env = matrix.chosen_env(),
                    .variant = f.reproducing_variant,
                    .kind = f.kind,
                    .first_line = f.first_line,
                    .deterministic = f.deterministic,
                    .baseline_seconds = matrix.baseline().status.seconds,
                    .runner_torch_version = rec.report().environment.torch_version,
                    .original = m_model,
                    .batches = matrix.run_list()};
  if (!m_early) {  // a first search set aside read the first run already
    setup.first_trace = matrix.first_trace(setup.env, setup.first_trace_model);
  }
  auto searched = search(setup);
  if (searched.stopped()) {
    return searched.stop();
  }
  return answer(*searched);
}

Stop SearchPhase::masks(const MatrixPhase& matrix, Stop clean) {
  if (!m_job.settings.check_masked || clean.verdict != Verdict::clean || clean.how != Stop::How::finish) {
    return clean;
  }
  Recorder& rec = m_job.recorder;
  const ChildResult& base = matrix.baseline();
  BisectSetup setup{.pkg = *m_in.pkg,
                    .model = *m_in.model,
                    .wrapper = m_in.wrapper,
                    .env = matrix.baseline_run().env,
                    .variant = matrix.baseline_run().variant,
                    .kind = OutcomeKind::nonfinite,
                    .first_line = "",
                    .deterministic = true,
                    .baseline_seconds = base.status.seconds,
                    .runner_torch_version = rec.report().environment.torch_version,
                    .original = m_model,
                    .batches = matrix.run_list()};
  MaskScan scan = scan_for_masks(m_job, setup);
  if (interrupt_requested()) {
    return interrupted_during("while looking for masked NaN/Inf");
  }
  rec.masks(scan.scanned ? std::optional<std::vector<HealedSite>>(scan.masked) : std::nullopt, scan.note);
  if (scan.masked.empty()) {
    return clean;
  }
  rec.progress().note("masked: " + mask_sentence(scan.masked.front()));
  clean.message += "; masked: " + mask_sentence(scan.masked.front());
  if (scan.masked.size() > 1) {
    clean.message += fmt::format(" ({} sites make NaN/Inf no output holds)", scan.masked.size());
  }
  return clean;
}

}  // namespace aoti_bisect
