#pragma once
// The mismatch search's evidence: which call site's outputs first differ
// from eager beyond tolerance while its inputs are within it (design.md
// "Wrong values"). Torch-free: it reads the runner's probe events, whose
// `compare` objects the runner computed against the per-node reference.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bisect/bisect.hpp"
#include "classify/classify.hpp"
#include "protocol/events.hpp"
#include "protocol/values.hpp"
#include "report/report.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// The build helper's node map: which exported-program node(s) each buffer
// of the generated code holds, or why none.
struct NodeMap {
  // Another op's write into the buffer (a oneDNN binary post-op convolution
  // writes its result into its `other` operand): the op, by the buffer its
  // call returns, and its graph nodes, nodes[first, first + count).
  struct Write {
    std::string by;
    int first = 0;
    int count = 0;
  };
  struct Entry {
    std::vector<std::string> nodes;     // its own value's node(s) first, then each write's, in write order
    std::string why;                    // when nodes is empty
    std::vector<std::string> computes;  // every graph node the code writing it computes (fused in)
    std::vector<Write> writes;          // written in place by other ops, in order
    // Nodes freezing folded into the code writing it (a batch norm into a
    // convolution's weights): `nodes` then names the last of them.
    std::vector<std::string> folded;
  };
  std::map<std::string, Entry> buffers;
  std::vector<std::string> notes;
};
NodeMap node_map_from_json(const nlohmann::json& j);  // throws Error(internal) when malformed

// One tensor's comparison at one site, as read from a probe event.
struct TensorCompare {
  std::string tensor;
  std::string dtype;
  bool before = false;  // the before-launch probe (an input)
  bool initialized = true;
  std::optional<std::string> unmatched;  // why it could not be compared (element counts)
  int candidate = 0;
  // For a buffer that holds several graph nodes in turn: the nodes it holds
  // at this site, [first, first + count) of its map entry's; count 0: all.
  int held_first = 0;
  int held_count = 0;
  double max_abs = 0;
  double scale = 0;
  int64_t nonfinite = 0;
  int64_t differ = -1;  // elements not equal to the reference; -1: not said
  std::vector<int64_t> worst;
  std::string actual;
  std::string expected;
  std::optional<double> actual_value;  // the same, as numbers where they are
  std::optional<double> expected_value;
  double ratio = 0;  // error / allowed error (> 1: outside tolerance; inf for NaN/Inf mismatches)
  Tolerance tolerance;
  // Against a run of one sample alone (job/batch_dependence.hpp): the
  // elements compared, and whether they were the whole tensor (no dimension
  // scales with the batch: a value over the whole batch) or the sample's
  // rows of dimension `rows_dim`.
  int64_t elements = 0;
  bool whole_batch = false;
  int rows_dim = -1;
};

struct SiteCompare {
  int site = 0;
  std::string kernel;
  std::vector<TensorCompare> inputs;        // before launch, written earlier (compared)
  std::vector<TensorCompare> outputs;       // after launch (compared)
  bool inputs_ok = true;                    // every compared input within tolerance
  std::optional<TensorCompare> introduced;  // the worst output that went outside tolerance here
  bool divergent() const { return introduced.has_value() && inputs_ok; }
};

// Which graph node a buffer holds at each call site, for buffers that hold
// several in turn (NodeMap::Entry::writes): each write's call site (the one
// returning the writing op's buffer) and its nodes. A buffer not here, or
// one with a write no call site returns, is compared with its closest node.
struct WriteOrder {
  struct At {
    int site = 0;
    int first = 0;
    int count = 0;
  };
  std::map<std::string, std::vector<At>> writes;  // buffer -> its writes by other ops, in site order
  std::map<std::string, int> own;                 // buffer -> how many of its nodes are its own value's
};
// `returned_by`: buffer -> the call site returning it (wrapper/wrapper.hpp returned_buffers).
WriteOrder write_order(const NodeMap& map, const std::map<std::string, int>& returned_by);

// Per site, in site order, from one run's probe events. `returned_by` maps
// a buffer an extern call creates (never shown at that call) to its site:
// its first comparison, before a later site's launch, counts as an output
// of the site that returned it, when that site was probed too. With `order`,
// a buffer written in place by several ops is compared at each site with
// the node it holds there: after its launch, the node of the write the site
// makes (when its bytes changed), else that of the last write before it.
std::vector<SiteCompare> compare_sites(const Events& events, const ToleranceTable& tolerances,
                                       const std::map<std::string, int>& returned_by = {},
                                       const WriteOrder* order = nullptr);

// The first divergent site in [lo, hi].
std::optional<int> first_divergent(const std::vector<SiteCompare>& sites, int lo, int hi);

// The largest in-tolerance difference among the sites (outputs and inputs).
std::optional<HonestError> largest_within(const std::vector<SiteCompare>& sites);

// Call sites whose new buffers name no graph node (from a trace run's
// site_end events and the map). `mapped` is set to the count of the others.
std::vector<UnmappedSite> unmapped_sites(const Events& trace_events, const NodeMap& map, int& mapped,
                                         const std::map<std::string, int>& returned_by = {});

// For each site that returns a buffer: the first later site that shows it
// (from a trace run), whose before-launch probe is where it can be seen.
std::map<int, int> consumer_sites(const Events& trace_events, const std::map<std::string, int>& returned_by);

// The report's divergence for a site's introduced output; node details come
// from the helper's node info ({"nodes": {name: {op, source}}}).
Divergence make_divergence(const SiteCompare& site, const NodeMap& map, const nlohmann::json& node_info);

// The graph nodes a call site computes: those fused into the buffers it
// creates (from a trace run, returned buffers included), in graph order.
std::vector<GraphNodeRef> computed_nodes(const Events& trace_events, const NodeMap& map, int site,
                                         const nlohmann::json& node_info,
                                         const std::map<std::string, int>& returned_by = {});

// One run's answer to "is the first divergent site in [lo, hi]?".
Probe mismatch_answer(const Classification& cls, const std::vector<SiteCompare>& sites, int lo, int hi);

// Fills a mismatch culprit's graph nodes, divergence and why from the
// evidence run's comparisons and the trace run's events.
void explain_divergence(Culprit& culprit, const std::vector<SiteCompare>& evidence, const Events& trace_events,
                        const NodeMap& map, const nlohmann::json& node_info,
                        const std::map<std::string, int>& returned_by);

}  // namespace aoti_bisect
