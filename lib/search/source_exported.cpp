// The exported program at printer level 1: one instrumented build (cached),
// its call sites compared with the package's, and for mismatch the node map
// and one eager run of the exported program node by node.

#include "search/source_exported.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "codegen/rewrite.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "evidence/wrapper_layout.hpp"
#include "inductor/build.hpp"
#include "inputs/tensor_file.hpp"
#include "package/facts.hpp"
#include "search/library_rebuild.hpp"
#include "search/search.hpp"
#include "search/search_common.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

void compare_call_sites(Recorder& rec, const WrapperInfo& original, const WrapperInfo& instrumented) {
  if (original.call_sites.empty() || instrumented.call_sites.empty()) {
    return;
  }
  std::string why = call_sites_differ(original, instrumented, "instrumented build");
  rec.call_sites_match(why.empty(), why);
}

// The eager value of every mapped buffer's graph node, for the mismatch search.
void add_eager_values(JobContext& job, const BisectSetup& s, const BuildResult& built, ProbedModel& m) {
  m.node_map = node_map_from_json(nlohmann::json::parse(read_file(built.node_map, "node map"), nullptr, false));
  job.recorder.progress().note("eager values of the graph nodes (the exported program, node by node)");
  EagerRequest er;
  er.exported_program = s.exported_program;
  er.model_name = s.exported_model;
  er.inputs = plain_torch_save(job.settings.inputs, "inputs file", job.work_dir);
  er.libraries = job.settings.load_libraries;
  er.node_map = built.node_map;
  er.node_values_out = job.work_dir / "node-values.pt";
  er.node_info_out = job.work_dir / "node-info.json";
  er.cache_dir = job.settings.cache_dir;
  er.timeout_s = job.settings.build_timeout_s;
  er.device = job.settings.eager_device;
  er.python = job.settings.python;
  compute_eager_reference(er);
  m.node_values = er.node_values_out;
  m.node_info = nlohmann::json::parse(read_file(er.node_info_out, "node info"), nullptr, false);
}

// The printer leaves call sites inside control flow (torch.cond branches)
// without probes. Its build's own wrapper gets probe calls there, the
// printer's level-1 text, and is recompiled with the commands it recorded
// (kernel and weights objects as built); the search then sees every call
// site that runs. Where that cannot be done, the blind spots stay and the
// search never isolates past them (the reason is in builds.note).
void fill_blind_spots(JobContext& job, const std::string& torch_version, const Package& inst, const ModelFiles& im,
                      ProbedModel& m) {
  auto spots = blind_spots(m.wrapper);
  if (spots.empty()) {
    return;
  }
  std::set<int> unprobed;
  for (const auto& site : m.wrapper.call_sites) {
    if (!site.probed) {
      unprobed.insert(site.index);
    }
  }
  Recorder& rec = job.recorder;
  std::string where = describe(spots.front());
  if (job.device_key != "cpu" || im.kernel_cpp.empty() || im.shared_object.empty()) {
    rec.builds_note(
        fmt::format("the printer left {} call sites without probes ({}); they cannot be filled in for "
                    "this build, so the search stops there",
                    unprobed.size(), where));
    return;
  }
  rec.begin_phase(
      "build", fmt::format("probes for the {} call sites the printer left out (inside control flow)", unprobed.size()));
  try {
    fs::path model_dir = m.model.dir / "data" / "aotinductor" / im.name;
    LibrarySources src{"", inst.read_entry(im.wrapper_cpp), inst.read_entry(im.kernel_cpp),
                       model_dir / fs::path(im.shared_object).filename()};
    src.wrapper = insert_probes(src.recorded_wrapper, m.wrapper, ProbeText{&unprobed, false});
    RebuiltLibrary built = rebuild_library(src, job.settings.cache_dir, job.settings.build_timeout_s);
    WrapperInfo filled = parse_wrapper(src.wrapper);
    if (!blind_spots(filled).empty() || filled.call_sites.size() != m.wrapper.call_sites.size()) {
      rec.builds_note(
          "probe calls inserted inside control flow did not cover every call site; the search stops at "
          "the blind spot " +
          where);
      return;
    }
    fs::path dest = copy_package_with(m.model.dir, im.name, built.library, im.wrapper_cpp, src.wrapper,
                                      job.work_dir / "instrumented-filled");
    rec.build({"instrumented, probes inside control flow",
               built.library.parent_path().filename().string(),
               built.cache_hit,
               built.seconds,
               torch_version,
               std::string(probe_source_name(ProbeSource::exported_program)),
               fmt::format("the instrumented build's wrapper with the printer's probe calls added at {} call sites "
                           "it left out ({}), recompiled with its recorded commands",
                           unprobed.size(), where),
               {}},
              true);
    rec.progress().note(fmt::format("{} call sites inside control flow probed: {} in {:.1f} s", unprobed.size(),
                                    built.cache_hit ? "found in the cache" : "wrapper recompiled", built.seconds));
    m.wrapper = std::move(filled);
    m.model = ModelDir{dest, write_model_facts(m.wrapper, job.work_dir / "instrumented-filled-facts.json")};
  } catch (const Error& e) {
    rec.builds_note(
        fmt::format("the call sites the printer left out ({}) could not be probed: {}; the search stops "
                    "there",
                    where, redact_paths(e.what())));
  }
}

}  // namespace

BuildResult build_from_exported_program(JobContext& job, const BisectSetup& s, int printer_level,
                                        const std::vector<std::string>& filtered_kernels) {
  BuildRequest req;
  req.exported_program = s.exported_program;
  req.model_name = s.exported_model;
  req.inductor_configs = job.settings.inductor_configs;
  req.printer_level = printer_level;
  req.filtered_kernels = filtered_kernels;
  req.libraries = job.settings.load_libraries;
  req.python = job.settings.python;
  // Freezing took effect in the package (it holds constants freezing made):
  // it was compiled with grad off, and so is the rebuild.
  req.no_grad = std::any_of(s.wrapper.constant_info.begin(), s.wrapper.constant_info.end(),
                            [](const ConstantInfo& c) { return c.frozen() || c.opaque; });
  if (req.no_grad && !req.inductor_configs.contains("freezing")) {
    // AOTI packages do not record their Inductor configs; these constants
    // exist only with freezing on.
    req.inductor_configs["freezing"] = true;
    job.recorder.builds_note(
        "freezing=True taken for the rebuild: the package holds constants only freezing makes "
        "(_frozen_param*, oneDNN-packed weights)");
  }
  req.cache_dir = job.settings.cache_dir;
  req.timeout_s = job.settings.build_timeout_s;
  req.expected_torch_version = s.runner_torch_version;
  try {
    return build_instrumented(req);
  } catch (const Error& e) {
    job.recorder.builds_note(redact_paths(e.what()));
    throw;
  }
}

std::variant<ProbedModel, std::string> ExportedProgramSource::prepare(JobContext& job, const BisectSetup& s,
                                                                      Predicate pred) {
  return probed_exported_program(job, s, pred);
}

std::variant<ProbedModel, std::string> probed_exported_program(JobContext& job, const BisectSetup& s, Predicate pred) {
  if (s.exported_program.empty()) {
    return needs_exported_program();
  }
  Recorder& rec = job.recorder;
  rec.begin_phase("build", "instrumented build (intermediate-value printer, level 1)");
  BuildResult built;
  try {
    built = build_from_exported_program(job, s, 1);
  } catch (const ProgramRefused&) {
    throw;  // not a reason to try another source: the job stops
  } catch (const Error& e) {
    return redact_paths(e.what());
  }
  rec.build({"instrumented",
             built.key,
             built.cache_hit,
             built.seconds,
             built.torch_version,
             std::string(probe_source_name(ProbeSource::exported_program)),
             "an Inductor build of the exported program with the level-1 printer: its kernels may differ from the "
             "package's",
             {}},
            true);
  rec.progress().note(built.cache_hit ? "instrumented build found in the cache"
                                      : fmt::format("instrumented build done in {:.1f} s", built.seconds));
  ProbedModel m;
  if (pred == Predicate::mismatch) {
    if (built.node_map.empty()) {
      return std::string(
          "the instrumented build wrote no node map (which graph node each buffer holds); cannot "
          "compare kernels with eager");
    }
    try {
      add_eager_values(job, s, built, m);
    } catch (const ProgramRefused&) {
      throw;
    } catch (const Error& e) {
      return redact_paths(e.what());
    }
  }
  Package inst = Package::open(built.package);
  const ModelFiles& im = inst.select_model(inst.models().size() == 1 ? "" : s.model.name);
  m.wrapper = inst.wrapper_info(im);
  compare_call_sites(rec, s.wrapper, m.wrapper);
  if (m.wrapper.printer_level != 1) {
    return std::string("the instrumented build has no level-1 printer calls; cannot probe it");
  }
  m.model = ModelDir{inst.extract(job.work_dir / "instrumented"),
                     write_model_facts(m.wrapper, job.work_dir / "instrumented-facts.json")};
  fill_blind_spots(job, built.torch_version, inst, im, m);
  return m;
}

}  // namespace aoti_bisect
