// report.md: what a person pastes into a bug, readable in a minute. Names,
// paths and error lines go into code spans (so Markdown never interprets
// them); every table cell escapes '|'. A clean verdict gives a short report.

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/markdown_parts.hpp"
#include "report/sink_text.hpp"
#include "report/sinks.hpp"

namespace aoti_bisect {

namespace {

using namespace report_text;
using namespace report_md;

std::string human_verdict(Verdict v) {
  std::string s(verdict_name(v));
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

std::string title(const Report& r) {
  if (r.failure && r.verdict != Verdict::clean) {
    return fmt::format("# aoti-bisect: {}, {}\n\n", code(std::string(outcome_name(r.failure->kind))),
                       human_verdict(r.verdict));
  }
  if (r.verdict == Verdict::clean) {
    return "# aoti-bisect: clean, no failure reproduced\n\n";
  }
  return fmt::format("# aoti-bisect: {}\n\n", human_verdict(r.verdict));
}

std::string header(const Report& r) {
  std::string out = title(r);
  out += fmt::format("**Verdict:** {}", code(std::string(verdict_name(r.verdict))));
  if (!r.verdict_reason.empty()) {
    out += ": " + plain(r.verdict_reason);
  }
  out += "  \n";
  if (!r.package.model.empty()) {
    out += fmt::format("**Model:** {} in {}  \n", code(r.package.model), code(r.package.path));
  }
  if (!r.error.empty()) {
    out += fmt::format("**Error:** {}  \n", plain(r.error));
  }
  for (const auto& note : r.notes) {
    out += fmt::format("**Note:** {}  \n", plain(note));
  }
  return out + "\n";
}

// A run over several batches: which failed, whether it needs the ones
// before it, what distinguishes it, and every batch's outcome (20 at most).
std::string batches_section(const Report& r) {
  std::string line = batch_summary(r);
  if (line.empty()) {
    return "";
  }
  std::string out = "## Batches\n\n" + plain(line) + ".\n\n";
  for (const auto& fact : r.failure->batch->facts) {
    out += "- " + plain(fact) + "\n";
  }
  if (!r.failure->batch->facts.empty()) {
    out += "\n";
  }
  out += table_head({"Batch", "File", "Outcome", "First error line"});
  constexpr size_t k_rows = 20;
  for (size_t i = 0; i < r.batches.size() && i < k_rows; ++i) {
    const BatchRecord& b = r.batches[i];
    out += table_row(
        {std::to_string(b.index + 1), code(b.file), code(b.outcome), b.first_line.empty() ? "" : code(b.first_line)});
  }
  if (r.batches.size() > k_rows) {
    out += fmt::format("\nand {} more in report.json\n", r.batches.size() - k_rows);
  }
  if (!r.batch_groups.empty()) {
    out += "\n**Every failing batch** (`--all-batches`), by signature:\n\n";
    out += table_head({"Signature", "Kind", "First error line", "Batches"});
    for (const auto& g : r.batch_groups) {
      std::vector<std::string> idx;
      for (int b : g.batches) {
        idx.push_back(std::to_string(b + 1));  // numbered from 1, as the table above
      }
      out += table_row({code(g.signature), code(g.kind), g.first_line.empty() ? "" : code(g.first_line),
                        fmt::format("{}", fmt::join(idx, ", "))});
    }
  }
  return out + "\n";
}

// The coredump variant's reading (classify/gpu_coredump.hpp).
std::string coredump_section(const Report& r) {
  if (!r.coredump) {
    return "";
  }
  const CoreDumpReading& d = *r.coredump;
  std::string out = "## GPU core dump\n\n";
  out += fmt::format("Run {} stopped at the device exception and wrote a core dump{}.  \n", code(d.run),
                     d.file.empty() ? "" : " (" + code(d.file) + ")");
  out += "**Reading:** " + report_text::coredump_summary(d) + "  \n";
  if (!d.launch.empty()) {
    out += "**Launch:** " + code(d.launch) + (d.grid.empty() ? "" : ", grid " + d.grid) + "  \n";
  }
  if (d.device || d.sm) {
    out += fmt::format("**Where:** device {}, SM {}  \n", d.device ? std::to_string(*d.device) : "?",
                       d.sm ? std::to_string(*d.sm) : "?");
  }
  if (!d.read_by_debugger) {
    out += "The kernel's name needs cuda-gdb (`cuda-gdb --batch -ex \"target cudacore FILE\"`)" +
           (d.debugger_note.empty() ? std::string() : ": " + d.debugger_note) + ".  \n";
  }
  return out + "\n";
}

std::string what_failed(const Report& r) {
  const Failure& f = *r.failure;
  std::string out = "## What failed\n\n";
  std::string kind = code(std::string(outcome_name(f.kind)));
  if (f.signal) {
    kind += fmt::format(", signal {} ({})", *f.signal, signal_string(*f.signal));
  }
  out += fmt::format("- **Kind:** {}\n", kind);
  if (!f.first_line.empty()) {
    out += fmt::format("- **First error line:** {}\n", code(f.first_line));
  }
  out += fmt::format("- **First check:** {}\n", plain(first_check(f)));
  if (!f.signature.empty()) {
    out += fmt::format("- **Signature:** {}\n", code(f.signature));
  }
  out += "- **How often:** " + plain(how_often(f));
  if (!f.reproducing_variant.empty()) {
    out += fmt::format("; reproducing variant {} ({})", code(f.reproducing_variant),
                       f.deterministic ? "deterministic" : "flaky");
  }
  out += "\n";
  // The flag matrix's runs whose outcome is not the failure: what a flaky
  // failure looked like when it did not reproduce.
  std::vector<std::string> others;
  for (const RunRecord& run : r.runs) {
    if (run.group != "matrix") {
      continue;  // the search's, the batches' (## Batches)
    }
    if (run.outcome != f.kind) {
      others.push_back(
          fmt::format("{} {} ({})", code(run.id), code(std::string(outcome_name(run.outcome))), plain(run.exit)));
    }
  }
  if (!others.empty()) {
    constexpr size_t k_listed = 20;
    size_t n = others.size();
    if (n > k_listed) {
      others.resize(k_listed);
      others.push_back(fmt::format("and {} more in report.json", n - k_listed));
    }
    out += fmt::format("- **Runs with another outcome ({}):** {}\n", n, fmt::format("{}", fmt::join(others, "; ")));
  }
  const RunRecord* base = baseline_run(r);
  if (base && base->comparison && !base->comparison->within_tolerance) {
    const Comparison& c = *base->comparison;
    out += fmt::format(
        "- **Against the reference:** {} of {} elements outside atol={:g} + rtol={:g} × max |ref|; "
        "max abs error {}, max rel error {}",
        c.mismatched, c.total, c.atol, c.rtol, stat_string(c.max_abs_error), stat_string(c.max_rel_error));
    if (!c.worst_output.empty()) {
      out += fmt::format(", worst in {}", code(c.worst_output));
    }
    if (!c.note.empty()) {
      out += " (" + plain(c.note) + ")";
    }
    out += "\n";
  }
  return out + "\n";
}

std::string flags(const Report& r) {
  if (r.matrix.empty()) {
    return "";
  }
  std::string chosen = r.failure ? r.failure->reproducing_variant : "";
  std::string out = "## Under which flags\n\n" + table_head({"variant", "env", "reproduced"});
  for (const auto& v : r.matrix) {
    std::string name = code(v.name) + (v.name == chosen ? " (chosen)" : "");
    out += table_row({name, code(env_string(v.env)), fmt::format("{}/{}", v.reproduced, v.runs)});
  }
  out += "\n";
  if (!r.findings.empty()) {
    out += "## What the flags say\n\n";
    for (const auto& f : r.findings) {
      out += "- " + plain(f.sentence) + " (" + code(f.variant) + ")\n";
    }
    out += "\n";
  }
  return out;
}

std::string reproduce(const Report& r) {
  if (r.reproduce_command.empty()) {
    return "";
  }
  return "## Reproduce\n\n" + code_block(r.reproduce_command, "sh") + "\n";
}

std::string inputs(const Report& r) {
  if (r.inputs.empty() && r.inputs_path.empty()) {
    return "";
  }
  std::string out = "## Inputs\n\n";
  if (!r.inputs_path.empty()) {
    out += "From " + code(r.inputs_path);
    std::vector<std::string> about;
    if (!r.inputs_format.empty()) {
      about.push_back(r.inputs_format);
    }
    if (!r.inputs_sha256.empty()) {
      about.push_back(fmt::format("sha256 {}", code(r.inputs_sha256.substr(0, 12))));
    }
    if (!about.empty()) {
      out += fmt::format(" ({})", fmt::join(about, ", "));
    }
    if (!r.inputs_origin.empty()) {
      out += ", " + r.inputs_origin;
    }
    out += r.reference_path.empty() ? ".\n\n" : "; reference " + code(r.reference_path) + ".\n\n";
    for (const auto& line : r.inputs_read_as) {
      std::string sentence = line;
      sentence[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sentence[0])));
      out += sentence + ".\n";
    }
    if (!r.inputs_read_as.empty()) {
      out += "\n";
    }
  }
  if (!r.inputs_binding.empty()) {
    out += r.inputs_binding + "\n\n";
  }
  for (const auto& line : r.inputs_outside_range) {
    out += "**Outside the compiled range:** " + plain(line) + "; run as given, as the package runs it by default.\n\n";
  }
  if (r.minimal_inputs) {
    const MinimalInputs& m = *r.minimal_inputs;
    out += "**The trigger shrunk:** " + plain(m.sentence) + (m.file.empty() ? "" : "; its inputs: " + code(m.file)) +
           fmt::format(" (found by {}).\n\n", m.how);
    for (const auto& fact : m.facts) {
      out += "- " + plain(fact) + "\n";
    }
    if (!m.facts.empty()) {
      out += "\n";
    }
  } else if (!r.shrink_note.empty()) {
    out += "**The trigger:** " + plain(r.shrink_note) + ".\n\n";
  }
  if (r.batch_dependence) {
    out += std::string(r.batch_dependence->dependent ? "**Batch dependent:** " : "**In company:** ") +
           plain(r.batch_dependence->sentence) + ".\n\n";
  } else if (!r.batch_dependence_note.empty()) {
    out += "**In company:** " + plain(r.batch_dependence_note) + ".\n\n";
  }
  if (!r.inputs.empty()) {
    bool bad = std::any_of(r.inputs.begin(), r.inputs.end(), [](const TensorInfo& t) { return t.nonfinite() > 0; });
    bool named = std::any_of(r.inputs.begin(), r.inputs.end(), [](const TensorInfo& t) { return !t.argument.empty(); });
    bool offset =
        std::any_of(r.inputs.begin(), r.inputs.end(), [](const TensorInfo& t) { return t.storage_offset != 0; });
    std::vector<std::string> head = {"name"};
    if (named) {
      head.push_back("bound from");
    }
    head.insert(head.end(), {"dtype", "shape", "strides"});
    if (offset) {
      head.push_back("storage offset");
    }
    head.push_back("device");
    if (bad) {
      head.push_back("NaN/Inf");
    }
    out += table_head(head);
    for (const auto& t : r.inputs) {
      std::vector<std::string> row = {code(t.name)};
      if (named) {
        row.push_back(t.argument.empty() ? "" : code(t.argument));
      }
      row.insert(row.end(), {t.dtype, shape_string(t.shape), shape_string(t.strides)});
      if (offset) {
        row.push_back(std::to_string(t.storage_offset));
      }
      row.push_back(t.device);
      if (bad) {
        row.push_back(t.nonfinite() == 0 ? "none"
                                         : fmt::format("{} NaN, {} Inf, first at {}", t.nan_count, t.inf_count,
                                                       shape_string(t.first_nonfinite)));
      }
      out += table_row(row);
    }
    out += "\n";
  }
  return out;
}

std::string outputs(const Report& r) {
  const RunRecord* base = baseline_run(r);
  if (!base || base->outputs.empty()) {
    return "";
  }
  std::string out = fmt::format("## Outputs of run {}\n\n", code(base->id));
  out += table_head({"name", "dtype", "shape", "NaN", "Inf", "min", "max"});
  for (const auto& s : base->outputs) {
    out += table_row({code(s.name), s.dtype, shape_string(s.shape), std::to_string(s.nan_count),
                      std::to_string(s.inf_count), stat_string(s.min), stat_string(s.max)});
  }
  return out + "\n";
}

std::vector<std::pair<std::string, std::string>> environment_items(const Report& r) {
  const Environment& e = r.environment;
  std::string version = r.tool_version.empty() ? e.tool_version : r.tool_version;
  std::string device = e.device;
  if (!e.device_name.empty()) {
    device += (device.empty() ? "" : " ") + ("(" + e.device_name + ")");
  }
  std::vector<std::pair<std::string, std::string>> items = {{"tool", plain("aoti-bisect " + version)},
                                                            {"torch", plain(e.torch_version)},
                                                            {"python", plain(e.python_version)},
                                                            {"CUDA", plain(e.cuda_version)},
                                                            {"HIP", plain(e.hip_version)},
                                                            {"device", plain(device)},
                                                            {"driver", plain(e.driver_version)},
                                                            {"OS", plain(e.os)},
                                                            {"git revision", code(e.git_revision)}};
  std::erase_if(items, [](const auto& item) { return item.second.empty(); });
  return items;
}

std::string environment(const Report& r) {
  std::string out = "## Environment\n\n";
  for (const auto& [name, value] : environment_items(r)) {
    item(out, name, value);
  }
  return out + "\n";
}

// The clean report's environment and package: two lines.
std::string environment_short(const Report& r) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : environment_items(r)) {
    parts.push_back(name + " " + value);
  }
  std::string out = fmt::format("**Environment:** {}  \n", fmt::join(parts, " · "));
  if (!r.package.path.empty()) {
    out += fmt::format("**Package:** {}", code(r.package.path));
    if (!r.package.sha256.empty()) {
      out += fmt::format(" (sha256 {})", code(r.package.sha256.substr(0, 12)));
    }
    out += "\n";
  }
  return out + "\n";
}

std::string package(const Report& r) {
  const PackageSummary& p = r.package;
  if (p.path.empty() && p.sha256.empty()) {
    return "";
  }
  std::string model = code(p.model);
  if (p.models.size() > 1) {
    std::vector<std::string> all;
    for (const auto& m : p.models) {
      all.push_back(code(m));
    }
    model += fmt::format(" (package holds {})", fmt::join(all, ", "));
  }
  std::string out = "## Package\n\n";
  item(out, "path", code(p.path));
  item(out, "sha256", code(p.sha256.substr(0, 12)));
  item(out, "model", model);
  item(out, "device key", code(p.device_key));
  item(out, "call sites", p.call_sites > 0 ? std::to_string(p.call_sites) : "");
  std::string built = plain(p.torch_version);
  if (!p.torch_dir.empty()) {
    built += (built.empty() ? "" : " ") + fmt::format("({})", code(p.torch_dir));
  }
  if (!p.torch_libraries.empty()) {
    built += (built.empty() ? "" : ", ") + plain(fmt::format("links {}", fmt::join(p.torch_libraries, ", ")));
  }
  item(out, "built with torch", built);
  return out + "\n";
}

// --check-masked after a clean run: the sites that make NaN/Inf no output
// holds, or why they were not looked for.
std::string masked(const Report& r) {
  std::string out;
  if (r.masked) {
    for (const auto& h : *r.masked) {
      out += "**Masked:** " + plain(h.note) + ": the outputs are clean, the NaN/Inf are still made.\n\n";
    }
  } else if (!r.masked_note.empty()) {
    out += "**Masked NaN/Inf:** " + plain(r.masked_note) + ".\n\n";
  }
  return out;
}

std::string footer(const Report& r) {
  return fmt::format("_{} in {:.1f} s; every run is in `report.json`._\n", runs_text(r), r.total_seconds);
}

}  // namespace

std::string report_to_markdown(const Report& r) {
  std::string out = header(r);
  if (r.verdict == Verdict::clean) {
    const RunRecord* base = baseline_run(r);
    if (base && base->comparison) {
      const Comparison& c = *base->comparison;
      out += fmt::format(
          "**Against the reference:** all {} elements within tolerance; max abs error {}, max rel "
          "error {} (of max |ref|); tolerance atol {:g} + rtol {:g} × max |ref|{}  \n\n",
          c.total, stat_string(c.max_abs_error), stat_string(c.max_rel_error), c.atol, c.rtol,
          c.worst_output.empty() ? "" : " for " + code(c.worst_output));
    }
    return out + masked(r) + flags(r) + environment_short(r) + footer(r);
  }
  if (r.culprit) {
    out += culprit_section(*r.culprit) + search_section(r);
  }
  out += coredump_section(r);
  if (r.failure) {
    out += what_failed(r) + batches_section(r);
  }
  if (!r.culprit) {
    out += search_section(r);
  }
  out += flags(r) + reproduce(r) + inputs(r) + outputs(r) + environment(r) + package(r);
  return out + footer(r);
}

}  // namespace aoti_bisect
