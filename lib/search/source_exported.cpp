// The exported program at printer level 1: one instrumented build (cached),
// its call sites compared with the package's, and for mismatch the node map
// and one eager run of the exported program node by node.

#include <algorithm>

#include <fmt/format.h>

#include "build/build.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "search/instrumentation.hpp"
#include "search/search.hpp"
#include "package/facts.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

void compare_call_sites(Recorder& rec, const WrapperInfo& original, const WrapperInfo& instrumented) {
  if (original.call_sites.empty() || instrumented.call_sites.empty()) {
    return;
  }
  size_t n = std::min(original.call_sites.size(), instrumented.call_sites.size());
  for (size_t i = 0; i < n; ++i) {
    if (original.call_sites[i].kernel != instrumented.call_sites[i].kernel) {
      rec.call_sites_match(false, fmt::format("call site {} is {} in the package but {} in the instrumented build",
                                              i + 1, original.call_sites[i].kernel, instrumented.call_sites[i].kernel));
      return;
    }
  }
  bool match = original.call_sites.size() == instrumented.call_sites.size();
  rec.call_sites_match(match, match ? "" : fmt::format("the package launches {} call sites, the instrumented build {}",
                                                       original.call_sites.size(), instrumented.call_sites.size()));
}

// The eager value of every mapped buffer's graph node, for the mismatch search.
void add_eager_values(JobEnv& env, const BisectSetup& s, const BuildResult& built, ProbedModel& m) {
  m.node_map = node_map_from_json(nlohmann::json::parse(read_file(built.node_map, "node map"), nullptr, false));
  env.recorder.progress().note("eager values of the graph nodes (the exported program, node by node)");
  EagerRequest er;
  er.exported_program = s.exported_program;
  er.model_name = s.exported_model;
  er.inputs = env.settings.inputs;
  er.node_map = built.node_map;
  er.node_values_out = env.work_dir / "node-values.pt";
  er.node_info_out = env.work_dir / "node-info.json";
  er.cache_dir = env.settings.cache_dir;
  er.timeout_s = env.settings.build_timeout_s;
  compute_eager_reference(er);
  m.node_values = er.node_values_out;
  m.node_info = nlohmann::json::parse(read_file(er.node_info_out, "node info"), nullptr, false);
}

}  // namespace

BuildResult build_from_exported_program(JobEnv& env, const BisectSetup& s, int printer_level,
                                        const std::vector<std::string>& filtered_kernels) {
  BuildRequest req;
  req.exported_program = s.exported_program;
  req.model_name = s.exported_model;
  req.inductor_configs = env.settings.inductor_configs;
  req.printer_level = printer_level;
  req.filtered_kernels = filtered_kernels;
  req.cache_dir = env.settings.cache_dir;
  req.timeout_s = env.settings.build_timeout_s;
  req.expected_torch_version = s.runner_torch_version;
  try {
    return build_instrumented(req);
  } catch (const Error& e) {
    env.recorder.builds_note(redact_paths(e.what()));
    throw;
  }
}

std::variant<ProbedModel, std::string> ExportedProgramSource::prepare(JobEnv& env, const BisectSetup& s,
                                                                      Predicate pred) {
  return probed_exported_program(env, s, pred);
}

bool same_call_sites(const WrapperInfo& a, const WrapperInfo& b) {
  return a.call_sites.size() == b.call_sites.size() &&
         std::equal(a.call_sites.begin(), a.call_sites.end(), b.call_sites.begin(),
                    [](const CallSite& x, const CallSite& y) { return x.kernel == y.kernel; });
}

std::variant<ProbedModel, std::string> probed_exported_program(JobEnv& env, const BisectSetup& s, Predicate pred) {
  if (s.exported_program.empty()) {
    return needs_exported_program();
  }
  Recorder& rec = env.recorder;
  rec.begin_phase("build", "instrumented build (intermediate-value printer, level 1)");
  BuildResult built;
  try {
    built = build_from_exported_program(env, s, 1);
  } catch (const ProgramRefused&) {
    throw;  // not a reason to try another source: the job stops
  } catch (const Error& e) {
    return redact_paths(e.what());
  }
  rec.build({"instrumented", built.key, built.cache_hit, built.seconds, built.torch_version, "exported_program",
             "an Inductor build of the exported program with the level-1 printer: its kernels may differ from the "
             "package's",
             {}},
            true);
  rec.progress().note(built.cache_hit ? "instrumented build found in the cache"
                                      : fmt::format("instrumented build done in {:.1f} s", built.seconds));
  ProbedModel m;
  if (pred == Predicate::mismatch) {
    if (built.node_map.empty()) {
      return std::string("the instrumented build wrote no node map (which graph node each buffer holds); cannot "
                         "compare kernels with eager");
    }
    try {
      add_eager_values(env, s, built, m);
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
  m.model = ModelDir{inst.extract(env.work_dir / "instrumented"),
                     write_model_facts(m.wrapper, env.work_dir / "instrumented-facts.json")};
  return m;
}

}  // namespace aoti_bisect
