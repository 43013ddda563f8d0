// Many batches: --inputs expanded into files, one run over every batch in one process, the failing batch
// then run alone, and --all-batches' run over every batch.

#include "job/batches.hpp"

#include <glob.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "classify/signature.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> sorted(std::vector<fs::path> files) {
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return natural_less(a.string(), b.string()); });
  return files;
}

std::vector<fs::path> folder_batches(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".pt" && e.is_regular_file(ec)) {
      files.push_back(e.path());
    }
  }
  if (ec) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("inputs folder '{}' cannot be read: {}", dir.string(), ec.message()));
  }
  if (files.empty()) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("inputs folder '{}' holds no .pt file (each batch is one torch.save file)", dir.string()));
  }
  return sorted(std::move(files));
}

std::vector<fs::path> glob_batches(const std::string& pattern) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<fs::path> files;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::error_code ec;
      if (fs::is_regular_file(g.gl_pathv[i], ec)) {
        files.emplace_back(g.gl_pathv[i]);
      }
    }
  }
  globfree(&g);
  if (files.empty()) {
    throw Error(ErrorKind::cannot_test, fmt::format("inputs '{}' matches no file", pattern));
  }
  return sorted(std::move(files));
}

std::string display(const fs::path& p) {
  return display_path(p);
}

}  // namespace

std::vector<fs::path> expand_inputs(const std::vector<std::string>& given) {
  std::vector<fs::path> out;
  for (const auto& g : given) {
    std::error_code ec;
    if (fs::is_directory(g, ec)) {
      auto files = folder_batches(g);
      out.insert(out.end(), files.begin(), files.end());
    } else if (fs::exists(g, ec) || g.find_first_of("*?[") == std::string::npos) {
      out.emplace_back(g);  // a file (missing ones are named by the inspect phase)
    } else {
      auto files = glob_batches(g);
      out.insert(out.end(), files.begin(), files.end());
    }
  }
  return out;
}

void record_batches(Recorder& rec, const BatchFindings& found) {
  if (found.failing_file) {
    rec.inputs_source(*found.failing_file, found.failing_sha256);
  }
  if (!found.records.empty()) {
    rec.batches(found.records, found.needs_history);
  }
  if (!found.groups.empty()) {
    rec.batch_groups(found.groups);
  }
  for (const auto& n : found.notes) {
    rec.note(n);
  }
}

std::vector<BatchRecord> batch_records(const std::vector<fs::path>& files, const std::vector<BatchRun>& ran,
                                       const std::string& failed_kind, const std::string& failed_line) {
  std::vector<BatchRecord> out;
  for (size_t i = 0; i < files.size(); ++i) {
    BatchRecord r;
    r.index = static_cast<int>(i);
    r.file = display(files[i]);
    if (i >= ran.size()) {
      r.outcome = "not_run";
    } else if (ran[i].returned && !ran[i].nonfinite) {
      r.outcome = "ok";
    } else {
      r.outcome = failed_kind;
      r.first_line = redact_paths(failed_line);
    }
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// --all-batches: the whole list again, going on past failures (and, after a
// crash, in a fresh process from the next batch); every failing batch is
// grouped by the signature of a failure not isolated. False: interrupted.
bool survey_batches(const Settings& s, Runs& runs, Progress& progress, const ChildRequest& baseline,
                    BatchFindings& found) {
  const size_t n = s.batches.size();
  std::vector<BatchRun> all;
  for (size_t start = 0, pass = 1; start < n; ++pass) {
    ChildRequest r = baseline;
    r.id = fmt::format("all-batches.{}", pass);
    r.variant = "all_batches";
    r.group = "batches";
    r.keep_going = true;
    r.batches.assign(s.batches.begin() + static_cast<std::ptrdiff_t>(start), s.batches.end());
    ChildResult res = runs.run(r);
    if (!res.finished) {
      return false;
    }
    std::vector<BatchRun> ran = res.batches;
    if (ran.empty() && r.batches.size() == 1) {  // one batch left: a run of its own
      BatchRun b;
      b.index = 0;
      b.returned = is_model_failure(res.cls.kind) ? false : true;
      b.kind = res.cls.kind;
      b.first_line = res.cls.first_line;
      ran.push_back(b);
    }
    if (ran.empty() || res.cls.cannot_test || res.cls.internal) {
      found.notes.push_back("--all-batches: the loop over every batch stopped: " +
                            res.cls.cannot_test.value_or(res.cls.internal.value_or("the run showed no batch")));
      break;
    }
    for (auto& b : ran) {
      b.index += static_cast<int>(start);
      all.push_back(b);
    }
    start = static_cast<size_t>(all.back().index) + 1;
    if (start < n && !all.back().returned) {
      found.notes.push_back(
          fmt::format("--all-batches: batch {} ended the process ({}); the loop went on in a fresh process from "
                      "batch {}, without the batches before it",
                      all.back().index + 1, outcome_name(all.back().kind), start + 1));
    }
  }
  std::vector<BatchRecord> records;
  std::vector<BatchGroup> groups;
  for (size_t i = 0; i < n; ++i) {
    BatchRecord rec_i;
    rec_i.index = static_cast<int>(i);
    rec_i.file = display(s.batches[i]);
    rec_i.outcome = "not_run";
    for (const auto& b : all) {
      if (b.index == static_cast<int>(i)) {
        rec_i.outcome = std::string(outcome_name(b.kind));
        rec_i.first_line = redact_paths(b.first_line);
        if (is_model_failure(b.kind)) {
          SignatureInput sig;
          sig.kind = rec_i.outcome;
          sig.first_line = rec_i.first_line;
          sig.flags = baseline.env;
          std::string signature = failure_signature(sig);
          auto g =
              std::find_if(groups.begin(), groups.end(), [&](const BatchGroup& x) { return x.signature == signature; });
          if (g == groups.end()) {
            groups.push_back({signature, rec_i.outcome, rec_i.first_line, {}});
            g = groups.end() - 1;
          }
          g->batches.push_back(rec_i.index);
        }
      }
    }
    records.push_back(std::move(rec_i));
  }
  size_t failing = 0;
  for (const auto& g : groups) {
    failing += g.batches.size();
  }
  progress.note(fmt::format("--all-batches: {} of {} batches failed, {} signature{}", failing, n, groups.size(),
                            groups.size() == 1 ? "" : "s"));
  found.records = std::move(records);
  found.groups = std::move(groups);
  return true;
}

}  // namespace

BatchLoop run_batch_loop(const Settings& s, Runs& runs, Progress& progress, ChildRequest baseline) {
  const size_t n = s.batches.size();
  baseline.batches = s.batches;
  BatchLoop out;
  out.loop = runs.run(baseline);
  if (!out.loop.finished) {
    out.interrupted = true;
    return out;
  }
  const std::vector<BatchRun>& ran = out.loop.batches;
  const Classification& last = out.loop.cls;
  bool broken = last.cannot_test || last.internal;  // an unreadable batch: the job stops on it
  bool failed = is_model_failure(last.kind);
  std::string kind = broken ? "could_not_test" : std::string(outcome_name(last.kind));
  out.found.records = batch_records(s.batches, ran, failed || broken ? kind : std::string("ok"),
                                    broken ? last.cannot_test.value_or(last.internal.value_or("")) : last.first_line);
  if (broken || !failed || ran.empty()) {
    out.run_list = s.batches;
    return out;
  }
  int k = ran.back().index;
  out.failing = k;
  bool history = false;
  OutcomeKind alone_kind = last.kind;
  if (k > 0) {  // the first batch has no history to need
    progress.note(fmt::format("{} {} of {} ({}) failed: {}; running it alone in a fresh process",
                              s.calls ? "call" : "batch", k + 1, n, display(s.batches[static_cast<size_t>(k)]), kind));
    ChildRequest alone = baseline;
    alone.id = "batch.alone";
    alone.group = "batches";
    alone.variant = "alone";
    alone.batches = {s.batches[static_cast<size_t>(k)]};
    ChildResult a = runs.run(alone);
    if (!a.finished) {
      out.interrupted = true;
      return out;
    }
    alone_kind = a.cls.kind;
    history = alone_kind != last.kind;
  }
  out.run_list = history ? std::vector<fs::path>(s.batches.begin(), s.batches.begin() + k + 1)
                         : std::vector<fs::path>{s.batches[static_cast<size_t>(k)]};
  FailingBatch fb;
  fb.index = k;
  fb.file = display(s.batches[static_cast<size_t>(k)]);
  fb.calls = s.calls;
  if (!s.calls) {
    std::vector<const BatchRun*> passing;
    for (const auto& b : ran) {
      if (b.index != k && b.returned && !b.nonfinite) {
        passing.push_back(&b);
      }
    }
    fb.facts = distinguishing_facts(ran.back(), passing, s.batches[static_cast<size_t>(k)].filename().string());
  }
  out.batch = fb;
  out.found.failing_file = fb.file;
  out.found.failing_sha256 = sha256_file(s.batches[static_cast<size_t>(k)]);
  out.found.records = batch_records(s.batches, ran, kind, last.first_line);
  out.found.needs_history = history;
  if (k > 0) {
    progress.note(history ? fmt::format("alone it ends {}: it fails only after the {} before it, which every "
                                        "later run feeds first",
                                        outcome_name(alone_kind), s.calls ? "calls" : "batches")
                          : "it fails alone too: later runs feed it alone");
  }
  for (const auto& f : fb.facts) {
    progress.note(f);
  }
  if (s.all_batches && !survey_batches(s, runs, progress, baseline, out.found)) {
    out.interrupted = true;
  }
  return out;
}

}  // namespace aoti_bisect
