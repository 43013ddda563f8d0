// The mismatch search's evidence: each call site's tensors compared with eager from the probe events,
// the first site whose outputs diverge while its inputs do not, and its graph nodes from the node map.

#include "evidence/divergence.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"
#include "protocol/runner.hpp"
#include "protocol/site_event.hpp"

namespace aoti_bisect {

namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();

std::string json_text(const nlohmann::json& v) {
  if (v.is_string()) {
    return v.get<std::string>();
  }
  if (v.is_number()) {
    return number_text(v.get<double>());
  }
  return "";
}

double ratio_of(const TensorCompare& c) {
  if (c.nonfinite > 0) {
    return k_inf;
  }
  double bound = c.tolerance.atol + c.tolerance.rtol * c.scale;
  if (bound <= 0) {
    return c.max_abs > 0 ? k_inf : 0;
  }
  return c.max_abs / bound;
}

// The figures against the candidates [first, first + count) the buffer
// holds there, the closest of them; against the closest of all without.
const nlohmann::json& chosen_figures(const nlohmann::json& compare, std::optional<std::pair<int, int>> segment) {
  if (!segment || !compare.contains("candidates") || !compare["candidates"].is_array()) {
    return compare;
  }
  const nlohmann::json* best = nullptr;
  auto score = [](const nlohmann::json& c) {
    int64_t nonfinite = c.value("nonfinite", int64_t{0});
    double max_abs = c.contains("max_abs") && c["max_abs"].is_number() ? c["max_abs"].get<double>() : 0.0;
    return std::make_pair(nonfinite, max_abs / std::max(c.value("scale", 0.0), 1e-30));
  };
  for (const auto& c : compare["candidates"]) {
    int i = c.value("candidate", -1);
    if (i >= segment->first && i < segment->first + segment->second && (!best || score(c) < score(*best))) {
      best = &c;
    }
  }
  return best != nullptr ? *best : compare;
}

std::optional<TensorCompare> compare_of(const nlohmann::json& e, const ToleranceTable& tolerances,
                                        std::optional<std::pair<int, int>> segment = std::nullopt) {
  auto it = e.find("compare");
  if (it == e.end() || !it->is_object()) {
    return std::nullopt;
  }
  const nlohmann::json& c = chosen_figures(*it, segment);
  if (it->contains("unmatched")) {
    TensorCompare t;
    t.tensor = e.value("tensor", "");
    t.before = e.value("phase", "") == "before";
    t.unmatched = (*it)["unmatched"].is_string() ? (*it)["unmatched"].get<std::string>() : "";
    return t;
  }
  TensorCompare t;
  t.tensor = e.value("tensor", "");
  t.before = e.value("phase", "") == "before";
  t.initialized = e.value("initialized", true);
  if (e.contains("stats") && e["stats"].is_object()) {
    t.dtype = e["stats"].value("dtype", "");
  }
  if (c.contains("unmatched")) {
    t.unmatched = c["unmatched"].is_string() ? c["unmatched"].get<std::string>() : "";
    return t;
  }
  t.candidate = c.value("candidate", 0);
  if (segment) {
    t.held_first = segment->first;
    t.held_count = segment->second;
  }
  t.max_abs = c.contains("max_abs") && c["max_abs"].is_number() ? c["max_abs"].get<double>() : 0.0;
  t.scale = c.value("scale", 0.0);
  t.nonfinite = c.value("nonfinite", int64_t{0});
  t.differ = c.value("differ", int64_t{-1});
  if (!c.contains("max_abs") || c["max_abs"].is_null()) {
    t.nonfinite = std::max<int64_t>(t.nonfinite, 1);
  }
  if (c.contains("worst") && c["worst"].is_array()) {
    t.worst = c["worst"].get<std::vector<int64_t>>();
  }
  t.elements = c.value("elements", int64_t{0});
  if (c.contains("rows") && c["rows"].is_object()) {
    t.whole_batch = c["rows"].value("whole", false);
    t.rows_dim = c["rows"].value("dim", -1);
  }
  t.actual = json_text(c.value("actual", nlohmann::json()));
  t.expected = json_text(c.value("expected", nlohmann::json()));
  if (c.contains("actual") && c["actual"].is_number()) {
    t.actual_value = c["actual"].get<double>();
  }
  if (c.contains("expected") && c["expected"].is_number()) {
    t.expected_value = c["expected"].get<double>();
  }
  // A buffer kept in a wider type than its node (a float32 buffer for a
  // bfloat16 node) differs from eager by the node's rounding: judge it by
  // the looser of the two dtypes.
  t.tolerance = tolerances.for_dtype(t.dtype);
  std::string expected_dtype = c.value("expected_dtype", "");
  if (!expected_dtype.empty() && expected_dtype != t.dtype) {
    Tolerance other = tolerances.for_dtype(expected_dtype);
    t.tolerance = Tolerance{std::max(t.tolerance.atol, other.atol), std::max(t.tolerance.rtol, other.rtol)};
  }
  t.ratio = ratio_of(t);
  return t;
}

}  // namespace

NodeMap node_map_from_json(const nlohmann::json& j) {
  NodeMap m;
  if (!j.is_object() || !j.contains("buffers") || !j["buffers"].is_object()) {
    throw Error(ErrorKind::internal, "the build's node map has no 'buffers' object");
  }
  for (const auto& [name, v] : j["buffers"].items()) {
    NodeMap::Entry e;
    if (v.contains("nodes") && v["nodes"].is_array()) {
      for (const auto& n : v["nodes"]) {
        if (n.is_string()) {
          e.nodes.push_back(n.get<std::string>());
        }
      }
    }
    if (v.contains("why") && v["why"].is_string()) {
      e.why = v["why"].get<std::string>();
    }
    if (v.contains("computes") && v["computes"].is_array()) {
      for (const auto& n : v["computes"]) {
        if (n.is_string()) {
          e.computes.push_back(n.get<std::string>());
        }
      }
    }
    if (v.contains("folded") && v["folded"].is_array()) {
      for (const auto& n : v["folded"]) {
        if (n.is_string()) {
          e.folded.push_back(n.get<std::string>());
        }
      }
    }
    if (v.contains("writes") && v["writes"].is_array()) {
      for (const auto& w : v["writes"]) {
        if (w.is_object() && w.contains("by") && w["by"].is_string()) {
          NodeMap::Write write{w["by"].get<std::string>(), w.value("first", 0), w.value("count", 0)};
          if (write.first >= 0 && write.count >= 0 &&
              static_cast<size_t>(write.first) + static_cast<size_t>(write.count) <= e.nodes.size()) {
            e.writes.push_back(std::move(write));
          }
        }
      }
    }
    m.buffers[name] = std::move(e);
  }
  if (j.contains("notes") && j["notes"].is_array()) {
    for (const auto& n : j["notes"]) {
      if (n.is_string()) {
        m.notes.push_back(n.get<std::string>());
      }
    }
  }
  return m;
}

WriteOrder write_order(const NodeMap& map, const std::map<std::string, int>& returned_by) {
  WriteOrder order;
  for (const auto& [buffer, entry] : map.buffers) {
    if (entry.writes.empty()) {
      continue;
    }
    std::vector<WriteOrder::At> at;
    for (const auto& w : entry.writes) {
      auto r = returned_by.find(w.by);
      if (r == returned_by.end()) {
        at.clear();  // a write no call site shows: which node it holds is not known
        break;
      }
      at.push_back({r->second, w.first, w.count});
    }
    if (at.empty()) {
      continue;
    }
    std::stable_sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.site < b.site; });
    order.writes[buffer] = std::move(at);
    order.own[buffer] = entry.writes.front().first;
  }
  return order;
}

namespace {

// The candidates [first, count) buffer `tensor` holds at `site` (after its
// launch when `after`; `changed`: its bytes changed there).
std::optional<std::pair<int, int>> held_at(const WriteOrder& order, const std::string& tensor, int site, bool after,
                                           bool changed) {
  auto it = order.writes.find(base_tensor_name(tensor));
  if (it == order.writes.end()) {
    return std::nullopt;
  }
  std::pair<int, int> held{0, order.own.at(it->first)};
  for (const auto& w : it->second) {
    if (w.site < site || (after && changed && w.site == site)) {
      held = {w.first, w.count};
    }
  }
  return held;
}

}  // namespace

std::vector<SiteCompare> compare_sites(const Events& events, const ToleranceTable& tolerances,
                                       const std::map<std::string, int>& returned_by, const WriteOrder* order) {
  std::map<int, SiteCompare> by_site;
  std::set<std::string> credited;  // returned buffers already counted as their producer's output
  std::map<std::pair<int, std::string>, std::string> checksum_before;  // (site, tensor) -> its bytes before launch
  for (const auto& e : events.of({EventKind::probe})) {
    int site = e.value("site", 0);
    SiteCompare& s = by_site[site];
    s.site = site;
    s.kernel = e.value("kernel", "");
    std::string tensor = e.value("tensor", "");
    bool after = e.value("phase", "") == "after";
    std::string checksum = e.contains("stats") && e["stats"].is_object() ? e["stats"].value("checksum", "") : "";
    if (!after) {
      checksum_before[{site, tensor}] = checksum;
    }
    std::optional<std::pair<int, int>> segment;
    if (order != nullptr) {
      auto b = checksum_before.find({site, tensor});
      bool changed = b == checksum_before.end() || b->second.empty() || checksum.empty() || b->second != checksum;
      segment = held_at(*order, tensor, site, after, changed);
    }
    auto c = compare_of(e, tolerances, segment);
    if (!c || c->unmatched) {
      continue;
    }
    (c->before ? s.inputs : s.outputs).push_back(*c);
    auto r = returned_by.find(c->tensor);
    if (c->before && r != returned_by.end() && r->second < site && by_site.count(r->second) &&
        credited.insert(c->tensor).second) {
      by_site[r->second].outputs.push_back(*c);  // the value its producer returned
    }
  }
  std::vector<SiteCompare> out;
  for (auto& [site, s] : by_site) {
    std::map<std::string, double> before_ratio;
    for (const auto& in : s.inputs) {
      before_ratio[in.tensor] = in.ratio;
      if (!(in.ratio <= 1.0)) {
        s.inputs_ok = false;
      }
    }
    for (const auto& o : s.outputs) {
      if (!(o.ratio > 1.0)) {
        continue;
      }
      // Outside tolerance after the launch, and not already before it.
      auto b = before_ratio.find(o.tensor);
      bool inherited = b != before_ratio.end() && !(b->second <= 1.0);
      if (!inherited && (!s.introduced || o.ratio > s.introduced->ratio)) {
        s.introduced = o;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<int> first_divergent(const std::vector<SiteCompare>& sites, int lo, int hi) {
  for (const auto& s : sites) {
    if (s.site >= lo && s.site <= hi && s.divergent()) {
      return s.site;
    }
  }
  return std::nullopt;
}

std::optional<HonestError> largest_within(const std::vector<SiteCompare>& sites) {
  std::optional<HonestError> best;
  for (const auto& s : sites) {
    for (const auto* list : {&s.outputs, &s.inputs}) {
      for (const auto& c : *list) {
        if (!(c.ratio <= 1.0) || (best && c.ratio <= best->ratio)) {
          continue;
        }
        best = HonestError{s.site, s.kernel, c.tensor, c.dtype, c.max_abs, c.scale > 0 ? c.max_abs / c.scale : 0.0,
                           c.ratio};
      }
    }
  }
  return best;
}

std::map<int, int> consumer_sites(const Events& trace_events, const std::map<std::string, int>& returned_by) {
  std::map<int, int> out;
  if (returned_by.empty()) {
    return out;  // no extern call returned a buffer: nothing to look for in the site_end lines
  }
  auto range = trace_events.of({EventKind::site_end});
  for (auto at = range.begin(); at != range.end(); ++at) {
    const int site = trace_events.site(at.index());
    SiteEvent e;
    (void)read_site_event(trace_events.line(at.index()), e);
    for (const auto& t : e.tensors) {
      auto r = returned_by.find(t);
      if (r != returned_by.end() && r->second < site && !out.count(r->second)) {
        out[r->second] = site;
      }
    }
  }
  return out;
}

std::vector<UnmappedSite> unmapped_sites(const Events& trace_events, const NodeMap& map, int& mapped,
                                         const std::map<std::string, int>& returned_by) {
  std::vector<UnmappedSite> out;
  std::set<std::string> seen;
  mapped = 0;
  for (const auto& e : trace_events.of({EventKind::site_end})) {
    int site = e.value("site", 0);
    std::vector<std::string> fresh;
    for (const auto& [name, producer] : returned_by) {
      if (producer == site && map.buffers.count(name) && seen.insert(name).second) {
        fresh.push_back(name);  // created by this extern call, shown only where it is read
      }
    }
    for (const auto& t : e.value("tensors", nlohmann::json::array())) {
      if (!t.is_string()) {
        continue;
      }
      std::string name = t.get<std::string>();
      if (seen.insert(name).second && map.buffers.count(name)) {
        fresh.push_back(name);
      }
    }
    bool any = false;
    std::string why;
    for (const auto& name : fresh) {
      const NodeMap::Entry& entry = map.buffers.at(name);
      if (!entry.nodes.empty()) {
        any = true;
        break;
      }
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", name, entry.why.empty() ? "no graph node" : entry.why);
    }
    if (any) {
      ++mapped;
      continue;
    }
    if (map.buffers.empty()) {
      why = map.notes.empty() ? "the build's node map is empty" : "no node map: " + map.notes.front();
    } else if (fresh.empty()) {
      why = "writes no new buffer (updates in place, or only reads)";
    }
    out.push_back({e.value("site", 0), e.value("kernel", ""), why});
  }
  return out;
}

namespace {

const nlohmann::json& info_nodes(const nlohmann::json& node_info) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (node_info.is_object() && node_info.contains("nodes") && node_info["nodes"].is_object()) {
    return node_info["nodes"];
  }
  return empty;
}

GraphNodeRef graph_node_ref(const std::string& name, const nlohmann::json& nodes) {
  GraphNodeRef ref;
  ref.name = name;
  if (nodes.contains(name) && nodes[name].is_object()) {
    const auto& n = nodes[name];
    ref.op = n.value("op", "");
    if (n.contains("source") && n["source"].is_object()) {
      const auto& src = n["source"];
      ref.source = fmt::format("{}:{} in {}", src.value("file", "?"), src.value("line", 0), src.value("function", "?"));
      ref.code = src.value("code", "");
    }
  }
  return ref;
}

}  // namespace

std::vector<GraphNodeRef> computed_nodes(const Events& trace_events, const NodeMap& map, int site,
                                         const nlohmann::json& node_info,
                                         const std::map<std::string, int>& returned_by) {
  // The buffers the site creates: first shown there, or returned by it.
  std::set<std::string> seen;
  std::vector<std::string> fresh;
  for (const auto& e : trace_events.of({EventKind::site_end})) {
    int s = e.value("site", 0);
    for (const auto& [name, producer] : returned_by) {
      if (producer == s && seen.insert(name).second && s == site) {
        fresh.push_back(name);
      }
    }
    for (const auto& t : e.value("tensors", nlohmann::json::array())) {
      if (t.is_string() && seen.insert(t.get<std::string>()).second && s == site) {
        fresh.push_back(t.get<std::string>());
      }
    }
  }
  const nlohmann::json& nodes = info_nodes(node_info);
  std::vector<std::string> names;
  for (const auto& b : fresh) {
    auto it = map.buffers.find(b);
    if (it == map.buffers.end()) {
      continue;
    }
    for (const auto& n : it->second.computes) {
      if (std::find(names.begin(), names.end(), n) == names.end()) {
        names.push_back(n);
      }
    }
  }
  auto order = [&](const std::string& n) {
    return nodes.contains(n) && nodes[n].is_object() ? nodes[n].value("order", 1 << 30) : 1 << 30;
  };
  std::stable_sort(names.begin(), names.end(), [&](const auto& a, const auto& b) { return order(a) < order(b); });
  std::vector<GraphNodeRef> out;
  for (const auto& n : names) {
    out.push_back(graph_node_ref(n, nodes));
  }
  return out;
}

Divergence make_divergence(const SiteCompare& site, const NodeMap& map, const nlohmann::json& node_info) {
  Divergence d;
  if (!site.introduced) {
    return d;
  }
  const TensorCompare& o = *site.introduced;
  d.tensor = o.tensor;
  d.dtype = o.dtype;
  d.max_abs_error = o.nonfinite > 0 ? k_inf : o.max_abs;
  d.max_rel_error = o.nonfinite > 0 ? k_inf : (o.scale > 0 ? o.max_abs / o.scale : 0.0);
  d.scale = o.scale;
  d.nonfinite = o.nonfinite;
  d.atol = o.tolerance.atol;
  d.rtol = o.tolerance.rtol;
  d.worst_index = o.worst;
  d.actual = o.actual;
  d.expected = o.expected;
  d.inputs_compared = static_cast<int>(site.inputs.size());
  for (const auto& in : site.inputs) {
    d.inputs_worst_ratio = std::max(d.inputs_worst_ratio, in.ratio);
  }
  std::vector<std::string> names;
  if (auto it = map.buffers.find(o.tensor); it != map.buffers.end()) {
    names = it->second.nodes;
    d.folded = it->second.folded;
    if (o.candidate >= 0 && static_cast<size_t>(o.candidate) < names.size()) {
      d.compared_with = names[static_cast<size_t>(o.candidate)];
    }
    if (o.held_count > 0 && static_cast<size_t>(o.held_first + o.held_count) <= names.size()) {
      // Written in place by several ops: the node(s) it holds here, not all it ever holds.
      names = std::vector<std::string>(names.begin() + o.held_first, names.begin() + o.held_first + o.held_count);
    }
  }
  const nlohmann::json& nodes = info_nodes(node_info);
  for (const auto& name : names) {
    d.nodes.push_back(graph_node_ref(name, nodes));
  }
  return d;
}

Probe mismatch_answer(const Classification& cls, const std::vector<SiteCompare>& sites, int lo, int hi) {
  Probe p;
  p.runs = 1;
  p.agreeing = 1;
  if (cls.internal || cls.cannot_test) {
    p.verdict = StepVerdict::error;
    p.note = cls.internal.value_or(cls.cannot_test.value_or(""));
  } else if (cls.kind != OutcomeKind::mismatch && cls.kind != OutcomeKind::ok) {
    p.verdict = StepVerdict::error;
    p.note = fmt::format("the run failed differently ({}: {})", outcome_name(cls.kind), cls.first_line);
  } else if (auto site = first_divergent(sites, lo, hi)) {
    p.verdict = StepVerdict::reproduces;
    p.exact = site;
  } else {
    p.verdict = StepVerdict::clean;
  }
  return p;
}

void explain_divergence(Culprit& c, const std::vector<SiteCompare>& evidence, const Events& trace_events,
                        const NodeMap& map, const nlohmann::json& node_info,
                        const std::map<std::string, int>& returned_by) {
  c.graph_nodes = computed_nodes(trace_events, map, c.call_index, node_info, returned_by);
  for (const auto& site : evidence) {
    if (site.site != c.call_index || !site.introduced) {
      continue;
    }
    c.divergence = make_divergence(site, map, node_info);
    const Divergence& d = *c.divergence;
    std::vector<std::string> nodes;
    for (const auto& g : d.nodes) {
      nodes.push_back(g.name);
    }
    // Where NaN/Inf positions differ, that is the difference to say (an
    // error against NaN is no number).
    std::string how =
        d.nonfinite > 0
            ? fmt::format("NaN/Inf differ from eager in {} element{} (at {}: compiled {}, eager {})", d.nonfinite,
                          d.nonfinite == 1 ? "" : "s",
                          "[" +
                              join(
                                  [&] {
                                    std::vector<std::string> v;
                                    for (auto i : d.worst_index) {
                                      v.push_back(std::to_string(i));
                                    }
                                    return v;
                                  }(),
                                  ", ") +
                              "]",
                          d.actual, d.expected)
            : fmt::format("max abs error {} (rel {} of max |eager| {}), allowed {}", number_text(d.max_abs_error),
                          number_text(d.max_rel_error), number_text(d.scale), number_text(d.atol + d.rtol * d.scale));
    const std::string folded =
        d.folded.empty() ? ""
                         : fmt::format(", which holds {}'s value: freezing folded {} into its code", d.folded.back(),
                                       join(d.folded, ", "));
    c.why = fmt::format(
        "output {}{}{} differs from eager: {}; {}", d.tensor, nodes.empty() ? "" : " (" + join(nodes, ", ") + ")",
        folded, how,
        d.inputs_compared == 0 ? "none of its inputs is a mapped buffer of an earlier kernel"
                               : fmt::format("its {} compared input{} within tolerance", d.inputs_compared,
                                             d.inputs_compared == 1 ? " was" : "s were"));
  }
}

}  // namespace aoti_bisect
