// The judge phase: whose bug the culprit is, and the smallest program.
#include "job/judge_phase.hpp"

#include <fstream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "evidence/judgement.hpp"
#include "evidence/wrapper_layout.hpp"
#include "inductor/build.hpp"
#include "inductor/judge.hpp"
#include "inputs/tensor_file.hpp"
#include "package/package.hpp"
#include "search/search.hpp"
#include "search/source_exported.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

// The culprit's graph nodes from a level-1 build's node map (cached), where
// the build's call sites are the package's; empty with a note otherwise.
std::vector<std::string> nodes_of_culprit(JobContext& job, const Inspected& in, const fs::path& ep,
                                          const std::string& ep_model, const Culprit& c, nlohmann::json& map) {
  Recorder& rec = job.recorder;
  BisectSetup setup{.pkg = *in.pkg,
                    .model = *in.model,
                    .wrapper = in.wrapper,
                    .kind = OutcomeKind::nonfinite,
                    .runner_torch_version = rec.report().environment.torch_version,
                    .exported_program = ep,
                    .exported_model = ep_model};
  try {
    BuildResult built = build_from_exported_program(job, setup, 1);
    if (built.node_map.empty()) {
      rec.note("judge: the exported program's build wrote no node map; the culprit's graph nodes are not known");
      return {};
    }
    Package inst = Package::open(built.package);
    const ModelFiles& im = inst.select_model(inst.models().size() == 1 ? "" : in.model->name);
    WrapperInfo w = inst.wrapper_info(im);
    if (std::string why = call_sites_differ(in.wrapper, w, "exported program's build"); !why.empty()) {
      rec.note("judge: the culprit's graph nodes are not known: " + why);
      return {};
    }
    map = nlohmann::json::parse(read_file(built.node_map, "node map"), nullptr, false);
    auto nodes = culprit_graph_nodes(in.wrapper, c.call_index, c.kernel, map);
    if (nodes.empty()) {
      rec.note(fmt::format("judge: the exported program's node map names no graph node the buffers of call site {} "
                           "{} compute; repro/upstream/ is not written",
                           c.call_index, c.kernel));
    }
    return nodes;
  } catch (const ProgramRefused&) {
    throw;
  } catch (const Error& e) {
    rec.note("judge: the culprit's graph nodes are not known: " + redact_paths(e.what()));
    return {};
  }
}

// The outputs of the first matrix run that showed the failure, if saved.
fs::path failing_outputs(const JobContext& job, OutcomeKind kind) {
  for (const auto& run : job.recorder.report().runs) {
    if (run.group != "matrix" || run.outcome != kind) {
      continue;
    }
    fs::path p = job.settings.out_dir / "runs" / run.id / "outputs.pt";
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      return p;
    }
  }
  return {};
}

std::string outputs_table(const Judgement& j) {
  std::string out = "| output | dtype | elements | eager rmse | package rmse | NaN/Inf eager, package, float64 |\n";
  out += "|---|---|---|---|---|---|\n";
  auto fig = [](const std::optional<double>& v) { return v ? fmt::format("{:.4g}", *v) : std::string("NaN/Inf"); };
  for (const auto& o : j.outputs) {
    out += fmt::format("| {} | {} | {} | {} | {} | {}, {}, {} |\n", o.index, o.dtype, o.numel, fig(o.eager_rmse),
                       o.package_measured ? fig(o.package_rmse) : "not saved", o.eager_nonfinite,
                       o.package_measured ? std::to_string(o.package_nonfinite) : "-", o.fp64_nonfinite);
  }
  return out;
}

// ISSUE.md beside the script: what a PyTorch issue asks for, no private path.
void write_issue(const fs::path& dir, const Judgement& j, const UpstreamRepro& u, const nlohmann::json& configs,
                 const std::string& torch_version) {
  std::string script = read_file(dir / "repro.py", "upstream repro");
  std::string text = "# AOTInductor produces wrong results";
  if (!j.culprit_nodes.empty()) {
    text += " in " + join(j.culprit_nodes, ", ");
  }
  text += "\n\n## Versions\n\ntorch " + torch_version + "\n\n## Inductor configs\n\n```\n" + configs.dump(2) +
          "\n```\n\n## What happens\n\n" + j.sentence + ".\n\n";
  text += "Measured against a float64 eager run (root mean square error; the AOTI minifier's rule: "
          "the compiled result may be at most 2-3 times eager's error + 1e-4 away):\n\n" +
          outputs_table(j) + "\n";
  text += fmt::format(
      "## Repro\n\nThe {} graph node(s) below, of the model's {}, compiled alone show it (the script exits 1). "
      "Save it as repro.py beside inputs.pt and constants.pt (attached) and run `python repro.py`.\n\n"
      "```python\n{}```\n",
      u.nodes, u.graph_nodes, script);
  std::ofstream(dir / "ISSUE.md", std::ios::binary) << text;
}

}  // namespace

void judge_culprit(JobContext& job, const Inspected& in, const MatrixPhase& matrix) {
  Recorder& rec = job.recorder;
  const Settings& s = job.settings;
  if (!s.judge || !rec.report().culprit) {
    return;
  }
  const Culprit c = *rec.report().culprit;
  std::string ep_model;
  auto ep = find_exported_program(s, *in.pkg, *in.model, ep_model);
  Judgement not_judged;
  if (!ep) {
    not_judged.sentence = needs_exported_program_to_judge();
    rec.judgement(not_judged);
    return;
  }
  const OutcomeKind kind = matrix.failure().kind;
  if (matrix.run_list().size() > 1) {
    not_judged.sentence = fmt::format(
        "not judged: the failure needs the {} batches before it, and eager runs one set of inputs",
        matrix.run_list().size() - 1);
    rec.judgement(not_judged);
    return;
  }
  rec.begin_phase("judge", "whose bug: the exported program eagerly and in float64, against the package");
  try {
    JudgeRequest req;
    req.exported_program = *ep;
    req.python = job.settings.python;
    req.model_name = ep_model;
    nlohmann::json node_map = nlohmann::json::object();
    req.culprit_nodes = nodes_of_culprit(job, in, *ep, ep_model, c, node_map);
    req.inputs = plain_torch_save(s.inputs, "inputs file", job.work_dir);
    req.package_outputs = failing_outputs(job, kind);
    req.tolerances = to_json(s.tolerances);
    req.device = s.eager_device;
    req.libraries = s.load_libraries;
    req.cache_dir = s.cache_dir;
    req.timeout_s = s.build_timeout_s;
    const bool upstream = !req.culprit_nodes.empty() &&
                          (kind == OutcomeKind::nonfinite || kind == OutcomeKind::mismatch);
    const fs::path dir = s.out_dir / "repro" / "upstream";
    if (upstream) {
      std::error_code ec;
      fs::remove_all(dir, ec);
      req.upstream_dir = dir;
      req.configs = s.inductor_configs;
      req.symptom = kind == OutcomeKind::nonfinite ? "nonfinite" : "mismatch";
      rec.progress().note(fmt::format("judge: eager and float64 runs, then the culprit's {} graph nodes compiled "
                                      "alone (repro/upstream/repro.py)",
                                      req.culprit_nodes.size()));
    }
    nlohmann::json result = run_judge(req);
    Judgement j = judgement_from(kind, result);
    if (kind == OutcomeKind::mismatch && result.contains("upstream") && result["upstream"].is_object()) {
      judge_alone(j, result["upstream"], in.wrapper, node_map);
    }
    rec.judgement(j);
    if (result.contains("upstream") && result["upstream"].is_object()) {
      UpstreamRepro u = upstream_from(result["upstream"], display_path(dir / "repro.py"));
      if (j.kind == "compiler" && u.reproduced) {
        write_issue(dir, j, u, req.configs, result.value("torch_version", ""));
        u.issue = display_path(dir / "ISSUE.md");
      }
      rec.upstream(u);
    }
  } catch (const Error& e) {  // an interrupt too: the job's next step sees it
    not_judged.sentence = "not judged: " + redact_paths(e.what());
    rec.judgement(not_judged);
  }
}

}  // namespace aoti_bisect
