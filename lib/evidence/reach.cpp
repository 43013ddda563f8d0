// Which call site's NaN/Inf reach the model's outputs: a walk over a run that probed every call site,
// labelling each non-finite value written with the sites or graph inputs it comes from.

#include "evidence/reach.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bisect/bisect.hpp"
#include "classify/classify.hpp"
#include "common/text.hpp"
#include "evidence/reach_args.hpp"
#include "evidence/unwritten.hpp"
#include "wrapper/provenance.hpp"

namespace aoti_bisect {

namespace {

constexpr int k_unknown = 0;  // an origin no probe showed

// Where the NaN and the Inf a value holds come from: call sites (> 0),
// graph inputs (< 0, -1 - position in ReachWalk::m_inputs), unknown (0).
struct Taint {
  std::set<int> nan;
  std::set<int> inf;
  bool empty() const { return nan.empty() && inf.empty(); }
};

struct Written {
  std::string checksum;
  Taint taint;
};

struct Made {  // what an origin site made
  std::string tensor;
  int64_t nan = 0;
  int64_t inf = 0;
  bool constant = false;  // read from a constant (its NaN/Inf enter the run there), not made
};

class ReachWalk {
 public:
  explicit ReachWalk(const ReachInput& in) : m_in(in) {}
  Reach run();

 private:
  void visit(const SiteTrace& s);
  // visit's steps, in order.
  void read_unseen_buffers(const SiteTrace& s, Taint& in);
  void read_unprobed_inputs(const SiteTrace& s, Taint& in);
  std::set<const ProbeStats*> reads_in_place(const SiteTrace& s) const;
  void read_probed_inputs(const SiteTrace& s, const std::set<const ProbeStats*>& read_in_place, Taint& in);
  std::set<int> write_site_outputs(const SiteTrace& s, const std::set<const ProbeStats*>& read_in_place,
                                   const Taint& in);
  void spread_to_aliases(const std::string& tensor, const Taint& w);
  void note_last_readers(const SiteTrace& s, const Taint& in, const std::set<int>& carried);
  Taint input_taint(const SiteTrace& s, const ProbeStats& p);
  std::optional<Taint> lookup(const std::string& name, const TensorStats& seen, int site);
  std::optional<Taint> by_name(const std::string& name, const std::string& checksum, bool& same_bytes);
  Taint write(int site, const std::string& kernel, const Taint& in, const TensorStats& after);
  int input_origin(const std::string& name);
  std::string describe(int origin) const;
  std::string kernel_of(int site) const;
  void note_healed(Reach& r, const std::set<int>& reached) const;

  const ReachInput& m_in;
  std::unordered_map<std::string, Written> m_by_name;    // latest write under a name (looked up, never walked)
  std::unordered_map<std::string, Taint> m_by_checksum;  // latest write of these bytes
  std::map<int, Taint> m_site_inputs;           // what each site read (for the buffers externs return)
  std::map<int, Made> m_made;                   // origin sites
  std::map<int, std::string> m_constant_reads;  // sites whose NaN/Inf entered from a constant they read
  std::set<int> m_design;                       // origins whose Inf is by design
  std::map<int, int> m_last_reader;             // origin -> the last site that read values made there
  std::set<std::pair<int, int>> m_carried;      // (origin, site): the site wrote values made there on
  std::vector<std::string> m_inputs;            // graph inputs that held NaN/Inf
  std::string m_unknown_why;                    // the first value whose writer no probe showed
};

std::string ReachWalk::kernel_of(int site) const {
  const SiteTrace* s = m_in.trace->site(site);
  return s ? s->kernel : "";
}

int ReachWalk::input_origin(const std::string& name) {
  auto it = std::find(m_inputs.begin(), m_inputs.end(), name);
  if (it == m_inputs.end()) {
    m_inputs.push_back(name);
    it = m_inputs.end() - 1;
  }
  return -1 - static_cast<int>(it - m_inputs.begin());
}

std::string ReachWalk::describe(int origin) const {
  if (origin > 0) {
    return fmt::format("call site {} {}", origin, kernel_of(origin));
  }
  if (origin < 0) {
    std::string name = m_inputs[static_cast<size_t>(-1 - origin)];
    for (const auto& in : m_in.wrapper->inputs) {
      if (in.name == name) {
        return fmt::format("graph input {} ({})", in.index, name);
      }
    }
    return "graph input " + name;
  }
  return "a value no probe showed written";
}

// The taint of the latest write under `name` or a name it was moved or
// reused from; `same_bytes` tells whether that write's checksum is the one read.
std::optional<Taint> ReachWalk::by_name(const std::string& name, const std::string& checksum, bool& same_bytes) {
  std::vector<std::string> todo = {base_tensor_name(name)};
  std::set<std::string> seen;
  while (!todo.empty() && seen.size() < 64) {
    std::string n = todo.front();
    todo.erase(todo.begin());
    if (!seen.insert(n).second) {
      continue;
    }
    if (auto it = m_by_name.find(n); it != m_by_name.end()) {
      same_bytes = !checksum.empty() && it->second.checksum == checksum;
      return it->second.taint;
    }
    for (const auto& moves : {&m_in.wrapper->moves, &m_in.wrapper->value_moves}) {
      for (const auto& [to, from] : *moves) {
        if (to == n) {
          todo.push_back(from);
        }
      }
    }
    for (const auto& [view, base] : m_in.wrapper->aliases) {
      if (view == n || base == n) {
        todo.push_back(view == n ? base : view);  // the same bytes under another name
      }
    }
  }
  return std::nullopt;
}

// A value read at `site` (or returned as an output), by name, by bytes, or
// as what an extern call before `site` created and returned.
std::optional<Taint> ReachWalk::lookup(const std::string& name, const TensorStats& seen, int site) {
  bool same_bytes = false;
  auto named = by_name(name, seen.checksum, same_bytes);
  if (named && same_bytes) {
    return named;
  }
  if (!seen.checksum.empty()) {
    if (auto it = m_by_checksum.find(seen.checksum); it != m_by_checksum.end()) {
      return it->second;
    }
  }
  if (named) {
    return named;  // a view of part of it, or bytes the probe did not hash alike
  }
  std::string base = base_tensor_name(name);
  if (auto r = m_in.returned_by.find(base); r != m_in.returned_by.end() && r->second < site) {
    // Created by an extern call, shown first here: written there from what it read.
    auto in = m_site_inputs.find(r->second);
    TensorStats created = seen;
    created.name = base;
    return write(r->second, kernel_of(r->second), in == m_site_inputs.end() ? Taint{} : in->second, created);
  }
  return std::nullopt;
}

// The taint of a value written by `site` from inputs tainted `in`.
Taint ReachWalk::write(int site, const std::string& kernel, const Taint& in, const TensorStats& after) {
  Taint w;
  std::set<int> accidental;  // Inf origins not by design
  for (int o : in.inf) {
    if (m_design.count(o) == 0) {
      accidental.insert(o);
    }
  }
  if (after.nan_count > 0) {
    w.nan = !in.nan.empty() ? in.nan : !accidental.empty() ? accidental : std::set<int>{site};
  }
  if (after.inf_count > 0) {
    w.inf = !in.inf.empty() ? in.inf : std::set<int>{site};
    // Its own infinity literal's Inf, whatever NaN it read elsewhere (a mask
    // kernel beside a layer that already went NaN): by design.
    if (in.inf.empty() && after.nan_count == 0 && m_in.inf_by_design.count(kernel) > 0) {
      m_design.insert(site);
    }
  }
  if (w.nan.count(site) || w.inf.count(site)) {
    Made& m = m_made[site];
    if (after.nonfinite() > m.nan + m.inf) {
      m = Made{after.name, after.nan_count, after.inf_count};
    }
  }
  return w;
}

Taint ReachWalk::input_taint(const SiteTrace& s, const ProbeStats& p) {
  const TensorStats& st = *p.before;
  if (auto t = lookup(p.tensor, st, s.site); t && !t->empty()) {
    return *t;
  }
  std::string base = base_tensor_name(p.tensor);
  Taint t;
  int origin = k_unknown;
  if (p.origin == "constant") {
    origin = s.site;  // a parameter's NaN/Inf enter the run where it is read
    Made& m = m_made[s.site];
    m = Made{p.tensor, st.nan_count, st.inf_count, true};
    m_constant_reads.emplace(s.site, p.tensor);
  } else if (is_graph_input_name(base)) {
    origin = input_origin(base);
  } else if (m_unknown_why.empty()) {
    m_unknown_why =
        fmt::format("call site {} read {} holding NaN/Inf that no probed site was seen writing", s.site, p.tensor);
  }
  if (st.nan_count > 0) {
    t.nan.insert(origin);
  }
  if (st.inf_count > 0) {
    t.inf.insert(origin);
  }
  return t;
}

// What an unseen buffer held is its last write by name; one no probed site
// was seen writing makes what this site writes of unknown origin, never
// its own (it may have read NaN made earlier).
void ReachWalk::read_unseen_buffers(const SiteTrace& s, Taint& in) {
  for (const auto& name : unseen_buffers(s, *m_in.wrapper)) {
    bool same_bytes = false;
    if (auto t = by_name(name, "", same_bytes)) {
      in.nan.insert(t->nan.begin(), t->nan.end());
      in.inf.insert(t->inf.begin(), t->inf.end());
      continue;
    }
    in.nan.insert(k_unknown);
    in.inf.insert(k_unknown);
    if (m_unknown_why.empty()) {
      m_unknown_why = fmt::format(
          "call site {} reads {}, which no probe showed before its launch and no probed site "
          "was seen writing",
          s.site, name);
    }
  }
}

// The graph inputs holding NaN/Inf that the site reads without a probe of
// them: their NaN/Inf come from those inputs.
void ReachWalk::read_unprobed_inputs(const SiteTrace& s, Taint& in) {
  for (const auto& [name, st] : unprobed_bad_inputs(s, m_in)) {
    int origin = input_origin(name);
    if (st->nan_count > 0) {
      in.nan.insert(origin);
    }
    if (st->inf_count > 0) {
      in.inf.insert(origin);
    }
  }
}

// An in_out_ptr argument the probe did not call written (a level-1 build's
// probe calls do not say which arguments are in place) is read when its
// bytes are a value written before; otherwise it is scratch the kernel
// writes first (a mean reduced in place).
std::set<const ProbeStats*> ReachWalk::reads_in_place(const SiteTrace& s) const {
  std::set<std::string> in_place = in_place_names(s, *m_in.wrapper);
  std::set<const ProbeStats*> read_in_place;
  for (const auto& p : s.tensors) {
    auto returned = m_in.returned_by.find(base_tensor_name(p.tensor));
    if (!p.initialized && p.before && in_place.count(p.tensor) > 0 &&
        (m_by_checksum.count(p.before->checksum) > 0 || m_by_name.count(base_tensor_name(p.tensor)) > 0 ||
         (returned != m_in.returned_by.end() && returned->second < s.site))) {
      // (the last: an extern call's output, moved to this name for reuse, that no probe showed before)
      read_in_place.insert(&p);
    }
  }
  return read_in_place;
}

// The origins of the NaN/Inf the site read through its probed arguments.
void ReachWalk::read_probed_inputs(const SiteTrace& s, const std::set<const ProbeStats*>& read_in_place, Taint& in) {
  for (const auto& p : s.tensors) {
    bool read = p.initialized || read_in_place.count(&p) > 0;
    if (!read || !p.before || p.before->nonfinite() == 0) {
      continue;
    }
    Taint t = input_taint(s, p);
    if (p.before->nan_count > 0) {
      in.nan.insert(t.nan.begin(), t.nan.end());
      if (t.nan.empty()) {
        in.nan.insert(t.inf.begin(), t.inf.end());
      }
    }
    if (p.before->inf_count > 0) {
      in.inf.insert(t.inf.begin(), t.inf.end());
    }
  }
}

// Records what the site wrote, tainted from `in`, under its names and
// checksums; returns the origins it carried on.
std::set<int> ReachWalk::write_site_outputs(const SiteTrace& s, const std::set<const ProbeStats*>& read_in_place,
                                            const Taint& in) {
  std::set<int> carried;
  for (const auto& p : s.tensors) {
    bool read = p.initialized || read_in_place.count(&p) > 0;
    bool written =
        p.after && (!read || !p.before || p.before->checksum != p.after->checksum || p.after->checksum.empty());
    if (!written) {
      continue;  // read only: its value stays what it was, under its old write
    }
    Taint w = write(s.site, s.kernel, in, *p.after);
    carried.insert(w.nan.begin(), w.nan.end());
    carried.insert(w.inf.begin(), w.inf.end());
    m_by_name[base_tensor_name(p.tensor)] = Written{p.after->checksum, w};
    if (!p.after->checksum.empty()) {
      m_by_checksum[p.after->checksum] = w;
    }
    spread_to_aliases(p.tensor, w);
  }
  return carried;
}

// Written through a view of a live buffer (or into the buffer a view
// shows): the other name's bytes hold these values too, beside what
// was written there before.
void ReachWalk::spread_to_aliases(const std::string& tensor, const Taint& w) {
  for (const auto& [view, base] : m_in.wrapper->aliases) {
    const std::string name = base_tensor_name(tensor);
    if (view != name && base != name) {
      continue;
    }
    Written& other = m_by_name[view == name ? base : view];
    other.checksum.clear();
    other.taint.nan.insert(w.nan.begin(), w.nan.end());
    other.taint.inf.insert(w.inf.begin(), w.inf.end());
  }
}

// The site is the last reader of each origin it read, and carried those it
// wrote on.
void ReachWalk::note_last_readers(const SiteTrace& s, const Taint& in, const std::set<int>& carried) {
  for (const auto& set : {&in.nan, &in.inf}) {
    for (int o : *set) {
      if (o > 0) {
        m_last_reader[o] = s.site;
        if (carried.count(o) > 0) {
          m_carried.insert({o, s.site});
        }
      }
    }
  }
}

void ReachWalk::visit(const SiteTrace& s) {
  Taint in;
  read_unseen_buffers(s, in);
  read_unprobed_inputs(s, in);
  std::set<const ProbeStats*> read_in_place = reads_in_place(s);
  read_probed_inputs(s, read_in_place, in);
  m_site_inputs[s.site] = in;
  std::set<int> carried = write_site_outputs(s, read_in_place, in);
  note_last_readers(s, in, carried);
}

void ReachWalk::note_healed(Reach& r, const std::set<int>& reached) const {
  for (const auto& [site, made] : m_made) {
    if (reached.count(site) > 0) {
      continue;
    }
    HealedSite h;
    h.call_index = site;
    h.kernel = kernel_of(site);
    h.tensor = made.tensor;
    h.nan_count = made.nan;
    h.inf_count = made.inf;
    // An infinity literal makes Inf by design, never NaN (a fully masked row's
    // softmax: -inf - -inf).
    h.by_design = m_design.count(site) > 0 && made.nan == 0;
    std::string what = made.nan && made.inf ? fmt::format("{} NaN and {} Inf", made.nan, made.inf)
                       : made.nan           ? fmt::format("{} NaN", made.nan)
                                            : fmt::format("{} Inf", made.inf);
    std::string how = h.by_design ? " from its own infinity literal (by design)" : "";
    std::string then;
    if (auto c = m_last_reader.find(site); c != m_last_reader.end()) {
      h.last_read_by = c->second;
      h.last_read_kernel = kernel_of(c->second);
      h.cleaned = m_carried.count({site, c->second}) == 0;
      then = fmt::format(
          ", which call site {} {} {}", c->second, h.last_read_kernel,
          h.cleaned ? (h.by_design ? "consumed" : "cleaned") : "read last (what it wrote from them reaches no output)");
    } else {
      then = ", which no later probed site read";
    }
    h.note =
        fmt::format("call site {} {} made {} in {}{}{}: not the cause", site, h.kernel, what, made.tensor, how, then);
    if (made.constant) {
      // A constant's NaN/Inf enter the run where they are read: nothing was made.
      auto c = m_last_reader.find(site);
      bool passed_on = c != m_last_reader.end() && m_carried.count({site, c->second}) > 0;
      h.note = c == m_last_reader.end() || (c->second == site && !passed_on)
                   ? fmt::format(
                         "call site {} {} read {} (a constant) holding {} and wrote none of them on: not the "
                         "cause",
                         site, h.kernel, made.tensor, what)
                   : fmt::format(
                         "call site {} {} read {} (a constant) holding {}; what it made of them, call site {} "
                         "{} {}: not the cause",
                         site, h.kernel, made.tensor, what, c->second, h.last_read_kernel,
                         h.cleaned ? "cleaned" : "read last, and it reaches no output");
    }
    r.healed.push_back(std::move(h));
  }
}

Reach ReachWalk::run() {
  Reach r;
  for (const auto& [k, s] : m_in.trace->sites) {
    if (k > 0 && s.began) {
      visit(s);
    }
  }
  std::set<int> reached;
  for (size_t i = 0; i < m_in.outputs.size(); ++i) {
    const TensorStats& out = m_in.outputs[i];
    if (out.nonfinite() == 0) {
      continue;
    }
    std::string name = i < m_in.wrapper->outputs.size() ? m_in.wrapper->outputs[i] : "";
    OutputOrigin o;
    o.output = static_cast<int>(i);
    std::optional<Taint> t = lookup(name.empty() ? "\x01" : name, out, m_in.trace->launched + 1);
    if (!t && is_graph_input_name(name)) {
      t = Taint{{input_origin(name)}, {}};
    }
    if (!t || t->empty()) {
      r.why_not = fmt::format("output {} holds NaN/Inf, but no probed call site was seen writing it", i);
      return r;
    }
    const std::set<int>& chain = out.nan_count > 0 && !t->nan.empty() ? t->nan : t->inf;
    for (int origin : chain) {
      if (origin == k_unknown) {
        r.why_not = m_unknown_why.empty() ? "a value on the way to the outputs was never seen written" : m_unknown_why;
        return r;
      }
      if (origin > 0) {
        o.sites.insert(origin);
      } else {
        o.inputs.push_back(describe(origin));
      }
    }
    reached.insert(t->nan.begin(), t->nan.end());
    reached.insert(t->inf.begin(), t->inf.end());
    r.origins.push_back(std::move(o));
  }
  if (r.origins.empty()) {
    r.why_not = "no output holds NaN/Inf in this run";
    note_healed(r, reached);  // a mask leaves the outputs clean (search/mask_scan.hpp)
    return r;
  }
  r.followed = true;
  // Several outputs may hold NaN/Inf from independent sites: the culprit is
  // the earliest in run order whose values reach an output, whichever
  // output that is; its output is the first it reaches.
  const OutputOrigin* first = &r.origins.front();
  for (const auto& o : r.origins) {
    if (!o.sites.empty() && (!r.culprit || *o.sites.begin() < *r.culprit)) {
      r.culprit = *o.sites.begin();
      first = &o;
    }
  }
  r.output = first->output;
  if (auto c = r.culprit ? m_constant_reads.find(*r.culprit) : m_constant_reads.end(); c != m_constant_reads.end()) {
    r.culprit_constant = c->second;
  }
  // Every other origin, with the outputs it reaches.
  std::map<int, std::vector<int>> reaches;
  for (const auto& o : r.origins) {
    if (!o.sites.empty() && *o.sites.begin() != r.culprit) {
      reaches[*o.sites.begin()].push_back(o.output);
    }
  }
  for (const auto& [site, outputs] : reaches) {
    const SiteTrace* st = m_in.trace->site(site);
    const CallSite* cs = st ? wrapper_site_of(*st, *m_in.wrapper) : nullptr;
    r.other_origins.push_back({site, kernel_of(site), outputs, cs ? source_text(source_lines(cs->python_stacks)) : ""});
  }
  std::vector<std::string> others;
  for (const auto& o : r.origins) {
    if (&o == first) {
      continue;
    }
    std::string from = !o.sites.empty() ? describe(*o.sites.begin()) : o.inputs.empty() ? "?" : o.inputs.front();
    others.push_back(r.culprit && !o.sites.empty() && *o.sites.begin() == *r.culprit
                         ? fmt::format("output {} shares it", o.output)
                         : fmt::format("output {}'s come from {}", o.output, from));
  }
  r.others = join(others, "; ");
  const TensorStats& out = m_in.outputs[static_cast<size_t>(first->output)];
  std::string what = out.nan_count > 0 ? "NaN" : "Inf";
  std::string from = r.culprit ? describe(*r.culprit) : join(first->inputs, ", ");
  r.summary = fmt::format("the {} in output {} come from {}{}", what, first->output, from,
                          r.others.empty() ? "" : "; " + r.others);
  note_healed(r, reached);
  return r;
}

}  // namespace

void record_reach(Bisection& bis, const Reach& r) {
  bis.reach = r.followed ? r.summary : "not traced: " + r.why_not;
  bis.healed = r.healed;
  bis.other_origins.clear();
  for (const auto& o : r.other_origins) {
    OtherOrigin other;
    other.call_index = o.site;
    other.kernel = o.kernel;
    other.outputs = o.outputs;
    other.source = o.source;
    other.note = fmt::format("call site {}{} makes the NaN/Inf of output{} {} on its own{}", o.site,
                             other.kernel.empty() ? "" : " " + other.kernel, o.outputs.size() == 1 ? "" : "s",
                             fmt::join(o.outputs, ", "), o.source.empty() ? "" : " (" + o.source + ")");
    bis.other_origins.push_back(std::move(other));
  }
}

std::optional<std::string> reach_check(Bisection& bis, int k, const Reach& r, int launched) {
  if (r.culprit && *r.culprit == k) {
    bis.self_check = fmt::format(
        "passed: one run probed call sites 1-{}; the output's NaN/Inf trace back to call "
        "site {}, which {}{}",
        launched, k,
        r.culprit_constant.empty() ? std::string("made them from inputs without them")
                                   : "read them from " + r.culprit_constant + " (a constant)",
        r.healed.empty() ? "" : fmt::format(" ({} site(s) passed over)", r.healed.size()));
    return std::nullopt;
  }
  if (!r.culprit) {
    bis.status = search_status_name(SearchResult::Status::not_found);
    bis.self_check = fmt::format("one run probed call sites 1-{}: {}", launched, r.summary);
    bis.message = bis.self_check;
    return fmt::format("not isolated: {}, not from a call site: check the data first", r.summary);
  }
  bis.status = "self_check_failed";
  bis.self_check = fmt::format("failed: the evidence run for call site {} showed {}", k, r.summary);
  bis.message = bis.self_check;
  return fmt::format(
      "not isolated: the evidence runs disagree on where the outputs' NaN/Inf come from (call site {}, "
      "then {})",
      k, r.summary);
}

std::optional<std::string> nonfinite_from_inputs(Bisection& bis, const SearchResult& sr,
                                                 const std::vector<TensorStats>& input_stats) {
  std::string data = bad_inputs_text(input_stats);
  bool none_made = std::all_of(sr.steps.begin(), sr.steps.end(),
                               [](const SearchStep& st) { return st.probe.verdict == StepVerdict::clean; });
  if (data.empty() || !none_made || sr.status == SearchResult::Status::found) {
    return std::nullopt;
  }
  bis.status = search_status_name(SearchResult::Status::not_found);
  bis.reach = "no call site made NaN/Inf from values without them: they come from the inputs (" + data + ")";
  return fmt::format("no call site made the NaN/Inf: they come from the inputs ({}); check the data first", data);
}

Reach trace_to_outputs(const ReachInput& in) {
  if (in.trace == nullptr || in.wrapper == nullptr) {
    Reach r;
    r.why_not = "no run to trace";
    return r;
  }
  if (in.trace->poisoned) {
    // Under the poison variant, elements that still hold the poison are
    // memory no kernel wrote, not NaN a kernel made: the walk follows the
    // NaN computed from them, which start at the kernel that reads them.
    RunTrace made = without_poison(*in.trace);
    ReachInput copy = in;
    copy.trace = &made;
    return ReachWalk(copy).run();
  }
  return ReachWalk(in).run();
}

}  // namespace aoti_bisect
