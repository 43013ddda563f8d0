// report.md's culprit and search sections: the evidence of the culprit and
// how the search found it.

#include <algorithm>

#include <fmt/format.h>

#include "common/text.hpp"
#include "report/markdown_parts.hpp"
#include "report/sink_text.hpp"

namespace aoti_bisect::report_md {

using namespace report_text;

namespace {

// The most rows of a culprit's argument table and of the steps table.
constexpr size_t k_max_arg_rows = 12;
constexpr size_t k_max_step_rows = 20;

// "NaN / Inf / min / max" of a probed tensor; "—" when it was not probed.
std::string stats_cell(const std::optional<TensorStats>& s) {
  if (!s) {
    return "—";
  }
  return fmt::format("{} / {} / {} / {}", s->nan_count, s->inf_count, stat_string(s->min), stat_string(s->max));
}

bool arg_stands_out(const ProbeStats& a) {
  auto bad = [](const std::optional<TensorStats>& s) { return s && (s->nan_count > 0 || s->inf_count > 0); };
  return !a.initialized || bad(a.before) || bad(a.after);
}

// Which args the table shows, in their order: the ones that stand out
// (uninitialized, NaN or Inf) first claim the rows, the rest fill up.
std::vector<size_t> shown_args(const std::vector<ProbeStats>& args) {
  std::vector<size_t> shown;
  for (size_t i = 0; i < args.size() && shown.size() < k_max_arg_rows; ++i) {
    if (arg_stands_out(args[i])) {
      shown.push_back(i);
    }
  }
  for (size_t i = 0; i < args.size() && shown.size() < k_max_arg_rows; ++i) {
    if (!arg_stands_out(args[i])) {
      shown.push_back(i);
    }
  }
  std::sort(shown.begin(), shown.end());
  return shown;
}

std::string phase_text(const std::string& phase) {
  if (phase == "launch") {
    return "faulted during its launch";
  }
  if (phase == "after_launch") {
    return "bad values after its launch";
  }
  return plain(phase);
}

std::string index_text(const std::vector<int64_t>& index) {
  return fmt::format("[{}]", fmt::join(index, ", "));
}

// "`relu` (`aten.relu.default`) at `model.py:12 in forward`: `h = F.relu(h)`"
std::string node_text(const GraphNodeRef& n) {
  std::string s = code(n.name);
  if (!n.op.empty()) {
    s += " (" + code(n.op) + ")";
  }
  if (!n.source.empty()) {
    s += " at " + code(n.source);
    if (!n.code.empty()) {
      s += ": " + code(n.code);
    }
  }
  return s;
}

// Compiled against eager for the culprit's diverging output.
std::string divergence_table(const Divergence& d) {
  std::string out;
  std::vector<std::string> nodes;
  for (const auto& n : d.nodes) {
    nodes.push_back(node_text(n));
  }
  out += table_head({"compiled vs eager", ""});
  out += table_row({"output", code(d.tensor) + (d.dtype.empty() ? "" : " (" + plain(d.dtype) + ")")});
  out += table_row({"graph nodes", nodes.empty() ? "—" : fmt::format("{}", fmt::join(nodes, "; "))});
  if (!d.compared_with.empty() && d.nodes.size() > 1) {
    out += table_row({"compared with", code(d.compared_with) + " (the closest of the nodes this buffer may hold)"});
  }
  out += table_row({"max abs error", stat_string(d.max_abs_error)});
  out += table_row({"max rel error", stat_string(d.max_rel_error) + " (of max |eager| " + stat_string(d.scale) + ")"});
  out += table_row({"allowed", fmt::format("{} (atol {:g} + rtol {:g} × max |eager|)",
                                           stat_string(d.atol + d.rtol * d.scale), d.atol, d.rtol)});
  if (d.nonfinite > 0) {
    out += table_row({"NaN/Inf mismatches", std::to_string(d.nonfinite)});
  }
  out += table_row({"worst element", fmt::format("{}: compiled {}, eager {}", code(index_text(d.worst_index)),
                                                 code(d.actual), code(d.expected))});
  out += table_row({"inputs", d.inputs_compared == 0
                                  ? std::string("none compared (no mapped buffer of an earlier kernel)")
                                  : fmt::format("{} compared, all within tolerance (worst at {:.2g} of allowed)",
                                                d.inputs_compared, d.inputs_worst_ratio)});
  return out + "\n";
}

// The root cause, with the intermediates' evidence where the replay found them.
std::string root_cause_text(const RootCause& r) {
  std::string out;
  if (!r.sentence.empty()) {
    out += "**Root cause:** " + plain(r.sentence) + "\n\n";
  }
  if (!r.intermediates.empty()) {
    out += table_row({"inside the kernel", "measured in its replay (`repro/replay --intermediates`)"});
    out += table_row({"---", "---"});
    for (const auto& st : r.intermediates) {
      std::vector<std::string> at, operands;
      for (const auto& [name, value] : st.element) {
        at.push_back(fmt::format("{}={}", name, value));
      }
      for (const auto& [name, value] : st.operands) {
        operands.push_back(fmt::format("{} = {}", name, value));
      }
      std::string stored =
          st.output_tensor.empty() ? "" : ", stored at " + code(st.output_tensor + index_text(st.output_index));
      out += table_row({"intermediate", code(st.expression)});
      out += table_row({"element", (at.empty() ? std::string("the kernel's top level") : join(at, ", ")) + stored});
      out += table_row(
          {"operands there", operands.empty() ? std::string("none (no intermediate)") : join(operands, ", ")});
      out += table_row({"made", fmt::format("{} {} time{}{}",
                                            st.kind == "nan"     ? "NaN"
                                            : st.value == "-inf" ? "-Inf"
                                                                 : "Inf",
                                            st.elements, st.elements == 1 ? "" : "s",
                                            st.operation.empty() ? "" : " (" + st.operation + ")")});
      if (!st.op.empty()) {
        out += table_row({"graph op", code(st.op)});
      }
    }
    out += "\n";
  }
  if (!r.note.empty()) {
    out += "**Not measured:** " + plain(r.note) + "\n\n";
  }
  return out;
}

}  // namespace

namespace {

// The culprit's line: call site, kernel, kind, graph nodes, branch, phase.
std::string culprit_line(const Culprit& c) {
  std::string out = fmt::format("**Call site {}** {}", c.call_index, code(c.kernel));
  if (!c.kind.empty()) {
    out += " (" + plain(c.kind) + ")";
  }
  if (!c.source_nodes.empty()) {
    out += ", graph nodes " + code(c.source_nodes);
  }
  if (!c.branch.empty()) {
    out += ", inside subgraph " + code(c.branch) + " (a torch.cond branch that ran)";
  }
  if (!c.phase.empty()) {
    out += "; " + phase_text(c.phase);
  }
  return out + "  \n";
}

// Where it comes from: the Python source lines and the graph nodes it computes.
std::string culprit_source(const Culprit& c) {
  std::string out;
  for (const auto& l : c.source_lines) {
    out += fmt::format("**Source:** {}{}{}  \n", code(fmt::format("{}:{}", l.file, l.line)),
                       l.module.empty() ? "" : " in " + code(l.module), l.code.empty() ? "" : ": " + code(l.code));
  }
  if (!c.graph_nodes.empty()) {
    constexpr size_t k_max_nodes = 12;
    std::vector<std::string> nodes;
    for (size_t i = 0; i < c.graph_nodes.size() && i < k_max_nodes; ++i) {
      nodes.push_back(node_text(c.graph_nodes[i]));
    }
    out += "**Computes:** " + fmt::format("{}", fmt::join(nodes, "; "));
    if (c.graph_nodes.size() > k_max_nodes) {
      out += fmt::format(" and {} more", c.graph_nodes.size() - k_max_nodes);
    }
    out += "  \n";
  }
  return out;
}

// Where a bad input came from: a call site before it, a graph input, a constant.
std::string producer_line(const Producer& p) {
  std::string out = "**Bad input from:** ";
  if (p.call_index) {
    out += fmt::format("call site {} {}", *p.call_index, code(p.kernel));
    if (!p.tensor.empty()) {
      out += ", which wrote " + code(p.tensor);
    }
  }
  // A graph input or a constant (`parameter bn.weight (bn_weight) holds ...`)
  // is named by its why; a bare tensor name is taken for a graph input.
  bool named_by_why = false;
  for (std::string_view lead : {"graph input", "parameter ", "buffer ", "constant ", "frozen weight "}) {
    named_by_why = named_by_why || p.why.rfind(lead, 0) == 0;
  }
  if (!p.call_index && !named_by_why) {
    out += "graph input " + code(p.tensor);
  }
  if (!p.why.empty()) {
    out += (p.call_index || !named_by_why ? ": " : "") + plain(p.why);
  }
  return out + "  \n";
}

// The memcheck run aimed at the culprit, and what it reported.
std::string sanitizer_lines(const SanitizerPass& p) {
  std::string out =
      fmt::format("**compute-sanitizer (memcheck, aimed at the culprit; run {}):** {}  \n", code(p.run),
                  p.errors.empty() ? (p.note.empty() ? "no error reported" : p.note)
                                   : fmt::format("{} error{}", p.errors.size(), p.errors.size() == 1 ? "" : "s"));
  for (const auto& e : p.errors) {
    out +=
        fmt::format("- {}{}{}{}  \n", e.what, e.thread.empty() ? "" : " by thread " + e.thread + " in block " + e.block,
                    e.address.empty() ? "" : " at " + code(e.address), e.buffer.empty() ? "" : ": " + e.buffer);
  }
  return out + "\n";
}

// Outputs that differ between two runs of the culprit.
std::string run_to_run_table(const std::vector<RunDifference>& differ) {
  std::string out = table_head(
      {"output", "elements that differ between two runs", "largest difference", "where (first run vs second)"});
  for (const auto& d : differ) {
    out += table_row({code(d.tensor) + (d.dtype.empty() ? "" : " (" + plain(d.dtype) + ")"),
                      fmt::format("{} of {}", d.differ, d.elements), stat_string(d.max_abs),
                      d.worst_index.empty() ? "—"
                                            : fmt::format("{}: {} vs {}", code(index_text(d.worst_index)),
                                                          code(d.first), code(d.second))});
  }
  return out + "\n";
}

// The culprit's arguments before and after its launch.
std::string arguments_table(const std::vector<ProbeStats>& args) {
  std::string out =
      table_head({"tensor", "initialized", "before: NaN / Inf / min / max", "after: NaN / Inf / min / max"});
  std::vector<size_t> shown = shown_args(args);
  for (size_t i : shown) {
    const ProbeStats& a = args[i];
    std::string name = a.origin.empty() ? code(a.tensor) : code(a.tensor) + " (" + plain(a.origin) + ")";
    out += table_row({name, a.initialized ? "yes" : "**no**", stats_cell(a.before), stats_cell(a.after)});
  }
  if (shown.size() < args.size()) {
    out += fmt::format("\n... and {} more arguments, all in `report.json`.\n", args.size() - shown.size());
  }
  return out + "\n";
}

}  // namespace

std::string culprit_section(const Culprit& c) {
  std::string out = "## Culprit\n\n";
  out += root_cause_text(c.root_cause);
  if (c.judgement) {
    out += "**Whose bug:** " + plain(c.judgement->sentence) + "\n\n";
    if (!c.judgement->alone_sentence.empty()) {
      out += "**Alone:** " + plain(c.judgement->alone_sentence) + "\n\n";
    }
  }
  out += culprit_line(c);
  if (!c.why.empty()) {
    out += "**Why:** " + plain(c.why) + "  \n";
  }
  out += culprit_source(c);
  if (c.producer) {
    out += producer_line(*c.producer);
  }
  out += "\n";
  if (c.divergence) {
    out += divergence_table(*c.divergence);
  }
  if (c.sanitizer) {
    out += sanitizer_lines(*c.sanitizer);
  }
  if (!c.run_to_run.empty()) {
    out += run_to_run_table(c.run_to_run);
  }
  if (!c.args.empty()) {
    out += arguments_table(c.args);
  }
  return out;
}

namespace {

std::string step_row(const BisectionStep& s) {
  std::string range = s.lo == s.hi ? std::to_string(s.lo) : fmt::format("{}–{}", s.lo, s.hi);
  std::string verdict = plain(s.verdict);
  if (!s.note.empty()) {
    verdict += " (" + plain(s.note) + ")";
  }
  std::string runs = s.agreeing == s.runs ? std::to_string(s.runs) : fmt::format("{} ({} agree)", s.runs, s.agreeing);
  return table_row({range, plain(s.purpose), verdict, runs});
}

std::string steps_table(const std::vector<BisectionStep>& steps) {
  if (steps.empty()) {
    return "";
  }
  std::string out = table_head({"call sites", "purpose", "verdict", "runs"});
  if (steps.size() <= k_max_step_rows) {
    for (const auto& s : steps) {
      out += step_row(s);
    }
  } else {
    // The first steps show how the search began, the last ones what settled it.
    size_t half = k_max_step_rows / 2;
    for (size_t i = 0; i < half; ++i) {
      out += step_row(steps[i]);
    }
    out += table_row({"...", fmt::format("{} more steps", steps.size() - 2 * half), "", ""});
    for (size_t i = steps.size() - half; i < steps.size(); ++i) {
      out += step_row(steps[i]);
    }
  }
  return out + "\n";
}

// report.json's two numbers as the console gives them, then by purpose in
// the order the builds happened: "1 build run, 12.3 s (instrumented: 1
// run)", "no build run, 1 from the cache (hooks: from the cache)".
std::string builds_text(const Builds& b) {
  std::string out = builds_summary(b);
  std::vector<std::string> purposes;
  for (const auto& item : b.items) {
    if (std::find(purposes.begin(), purposes.end(), item.purpose) == purposes.end()) {
      purposes.push_back(item.purpose);
    }
  }
  std::vector<std::string> parts;
  for (const auto& purpose : purposes) {
    int built = 0;
    int hits = 0;
    for (const auto& item : b.items) {
      if (item.purpose == purpose) {
        item.cache_hit ? ++hits : ++built;
      }
    }
    std::string part = plain(purpose.empty() ? std::string("build") : purpose) + ": ";
    if (built > 0) {
      part += fmt::format("{} run", built);
      if (hits > 0) {
        part += fmt::format(", {} from the cache", hits);
      }
    } else {
      part += hits == 1 ? std::string("from the cache") : fmt::format("{} from the cache", hits);
    }
    parts.push_back(part);
  }
  if (parts.empty()) {
    return out;
  }
  return out.empty() ? fmt::format("{}", fmt::join(parts, "; ")) : fmt::format("{} ({})", out, fmt::join(parts, "; "));
}

}  // namespace

bool has_search(const Report& r) {
  return r.bisection || r.repro || r.builds.count + r.builds.cache_hits > 0 || !r.builds.items.empty();
}

// How the culprit was found (or, without one, how far the search got).
namespace {

// The search's one line: strategy, call sites, predicate, variant, status, runs.
std::string search_line(const Bisection& b) {
  std::string search = plain(b.strategy.empty() ? std::string("search") : b.strategy);
  search += fmt::format(" over {} call site{}", b.call_sites, b.call_sites == 1 ? "" : "s");
  if (!b.predicate.empty()) {
    search += " for " + code(b.predicate);
  }
  if (!b.variant.empty()) {
    search += " under variant " + code(b.variant);
  }
  search += fmt::format(": {}, {} run{}", plain(b.status.empty() ? std::string("unknown") : b.status), b.runs,
                        b.runs == 1 ? "" : "s");
  if (b.planned_runs > 0) {
    search += fmt::format(" of {} planned", b.planned_runs);
  }
  return search;
}

// How many call sites map to graph nodes, and the first unmapped ones.
std::string mapped_line(const Bisection& b) {
  std::string mapped =
      fmt::format("{} of {} call sites write a buffer that holds a graph node's value", *b.mapped_sites, b.call_sites);
  if (!b.unmapped.empty()) {
    constexpr size_t k_max_unmapped = 8;
    std::vector<std::string> list;
    for (size_t i = 0; i < b.unmapped.size() && i < k_max_unmapped; ++i) {
      list.push_back(
          fmt::format("{} {} ({})", b.unmapped[i].call_index, code(b.unmapped[i].kernel), plain(b.unmapped[i].why)));
    }
    mapped += fmt::format("; unmapped, not compared: {}", fmt::join(list, "; "));
    if (b.unmapped.size() > k_max_unmapped) {
      mapped += fmt::format(" and {} more", b.unmapped.size() - k_max_unmapped);
    }
  }
  return mapped;
}

// The bisection's items: the search, its probes, what it read.
void bisection_items(std::string& out, const Bisection& b) {
  item(out, "Search", search_line(b));
  if (!b.source.empty()) {
    std::string src = code(b.source);
    for (const auto& p : b.passed_over) {
      src += fmt::format(" ({} not used: {})", code(p.source), plain(p.why));
    }
    item(out, "Probes from", src);
  }
  item(out, "Message", plain(b.message));
  if (!b.self_check.empty()) {
    item(out, "Self-check", plain(b.self_check));
  }
  if (!b.reach.empty()) {
    item(out, "Reaches the outputs", plain(b.reach));
  }
  for (const auto& o : b.other_origins) {
    item(out, "Another origin", plain(o.note));
  }
  for (const auto& h : b.healed) {
    item(out, "Passed over", plain(h.note));
  }
  if (b.mapped_sites) {
    item(out, "Mapped to graph nodes", mapped_line(b));
  }
  if (b.largest_within) {
    const HonestError& h = *b.largest_within;
    item(out, "Largest in-tolerance difference",
         fmt::format("{:.2g} of the allowed error: call site {} {}, {} ({}), max abs error {}, rel {}", h.ratio,
                     h.call_index, code(h.kernel), code(h.tensor), plain(h.dtype), stat_string(h.max_abs_error),
                     stat_string(h.max_rel_error)));
  }
}

// The builds the search made, and whether their call sites match the package's.
std::string builds_line(const Builds& builds) {
  std::string out = builds_text(builds);
  if (builds.call_sites_match) {
    out += (out.empty() ? "" : "; ") + std::string(*builds.call_sites_match ? "call sites match the original"
                                                                            : "call sites differ from the original");
  }
  if (!builds.note.empty()) {
    out += (out.empty() ? "" : " (") + plain(builds.note) + (out.empty() ? "" : ")");
  }
  return out;
}

// The reproducer folder: its files and its replay.
std::string reproducer_line(const Reproducer& p) {
  std::string where = code(p.dir);
  if (!p.files.empty()) {
    constexpr size_t k_max_files = 6;
    std::vector<std::string> files;
    for (size_t i = 0; i < p.files.size() && i < k_max_files; ++i) {
      files.push_back(code(p.files[i]));
    }
    where += (where.empty() ? "" : ": ") + fmt::format("{}", fmt::join(files, ", "));
    if (p.files.size() > k_max_files) {
      where += fmt::format(" and {} more", p.files.size() - k_max_files);
    }
  }
  if (!p.replay.empty()) {
    where +=
        fmt::format("; {}: {} (exit 1 reproduces, 0 does not, 2 cannot run)", code(p.replay), plain(p.replay_note));
  } else if (!p.replay_note.empty()) {
    where += "; no replay: " + plain(p.replay_note);
  }
  if (p.upstream) {
    where += "; " + plain(upstream_sentence(*p.upstream));
  }
  return where;
}

}  // namespace

std::string search_section(const Report& r) {
  if (!has_search(r)) {
    return "";
  }
  std::string out = r.culprit ? "## How it was found\n\n" : "## Bisection\n\n";
  if (r.bisection) {
    bisection_items(out, *r.bisection);
  }
  item(out, "Builds", builds_line(r.builds));
  if (r.repro) {
    item(out, "Reproducer", reproducer_line(*r.repro));
  }
  out += "\n";
  if (r.bisection && !r.bisection->sites.empty()) {
    out += "![Call sites in launch order and the ranges the bisection probed](report.svg)\n\n";
  }
  if (r.bisection) {
    out += steps_table(r.bisection->steps);
  }
  if (r.repro && !r.repro->command.empty()) {
    out += code_block(r.repro->command, "sh") + "\n";
  }
  return out;
}

}  // namespace aoti_bisect::report_md
