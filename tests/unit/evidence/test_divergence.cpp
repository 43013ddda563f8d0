// The mismatch search's evidence, from hand-written probe events: which call
// site introduces a difference from eager, and which ones only inherit it.

#include <doctest/doctest.h>

#include "config/config.hpp"
#include "evidence/divergence.hpp"

using namespace aoti_bisect;
using json = nlohmann::json;

namespace {

ToleranceTable table() {
  ToleranceTable t;
  t.by_dtype["float32"] = Tolerance{1e-5, 1e-4};
  return t;
}

// A probe of one tensor with its comparison against eager.
json probe(int site, const std::string& tensor, const std::string& phase, double max_abs, double scale,
           bool initialized = true, const std::string& dtype = "float32") {
  return json{{"event", "probe"},
              {"site", site},
              {"kernel", "k" + std::to_string(site)},
              {"phase", phase},
              {"tensor", tensor},
              {"initialized", initialized},
              {"stats", {{"dtype", dtype}}},
              {"compare",
               {{"candidate", 0},
                {"max_abs", max_abs},
                {"scale", scale},
                {"nonfinite", 0},
                {"worst", {1, 2}},
                {"actual", 2.5},
                {"expected", "1.5"}}}};
}

}  // namespace

TEST_SUITE_BEGIN("search/divergence");

TEST_CASE("the first site whose output leaves tolerance with inputs within it; later sites only inherit") {
  std::vector<json> events = {
      // site 1: rounding-size error, fine
      probe(1, "buf0", "after", 1e-7, 1.0),
      // site 2: reads buf0 (fine), writes buf1 with a real error: divergent
      probe(2, "buf0", "before", 1e-7, 1.0),
      probe(2, "buf0", "after", 1e-7, 1.0),
      probe(2, "buf1", "after", 0.5, 1.0),
      // site 3: reads the wrong buf1, writes a wrong buf2: inherited
      probe(3, "buf1", "before", 0.5, 1.0),
      probe(3, "buf2", "after", 0.7, 1.0),
  };
  auto sites = compare_sites(events, table());
  REQUIRE(sites.size() == 3);
  CHECK_FALSE(sites[0].divergent());
  CHECK(sites[1].divergent());
  REQUIRE(sites[1].introduced);
  CHECK(sites[1].introduced->tensor == "buf1");
  CHECK(sites[1].introduced->ratio > 1000);
  CHECK_FALSE(sites[2].divergent());
  CHECK_FALSE(sites[2].inputs_ok);
  CHECK(first_divergent(sites, 1, 3) == 2);
  CHECK(first_divergent(sites, 3, 3) == std::nullopt);  // site 3 alone: inherited, not introduced
  CHECK(first_divergent(sites, 1, 1) == std::nullopt);
}

TEST_CASE("the tolerance scales with the tensor's largest eager magnitude and depends on the dtype") {
  ToleranceTable t = table();
  t.by_dtype["bfloat16"] = Tolerance{1e-2, 3e-2};
  // 1e-3 on a tensor of magnitude 100 is rounding for float32 (allowed 1e-5 + 1e-2).
  auto a = compare_sites({probe(1, "buf0", "after", 1e-3, 100.0)}, t);
  CHECK_FALSE(a[0].divergent());
  // The same error on a tensor of magnitude 1 is not.
  auto b = compare_sites({probe(1, "buf0", "after", 1e-3, 1.0)}, t);
  CHECK(b[0].divergent());
  // bfloat16 allows more.
  auto c = compare_sites({probe(1, "buf0", "after", 1e-3, 1.0, true, "bfloat16")}, t);
  CHECK_FALSE(c[0].divergent());
  // A float32 buffer holding a bfloat16 node's value is judged as bfloat16.
  json wide = probe(1, "buf0", "after", 1e-3, 1.0);
  wide["compare"]["expected_dtype"] = "bfloat16";
  auto w = compare_sites({wide}, t);
  CHECK_FALSE(w[0].divergent());
  // Integers must match exactly.
  auto d = compare_sites({probe(1, "buf0", "after", 1.0, 7.0, true, "int64")}, t);
  CHECK(d[0].divergent());
}

TEST_CASE("a NaN/Inf mismatch is outside any tolerance; an unmatched tensor is not compared") {
  json nan = probe(1, "buf0", "after", 0, 1.0);
  nan["compare"]["max_abs"] = nullptr;
  nan["compare"]["nonfinite"] = 3;
  auto a = compare_sites({nan}, table());
  CHECK(a[0].divergent());
  CHECK(a[0].introduced->nonfinite == 3);

  json unmatched = probe(1, "buf0", "after", 0, 1.0);
  unmatched["compare"] = {{"unmatched", "6 elements, the graph node 12"}};
  auto b = compare_sites({unmatched}, table());
  REQUIRE(b.size() == 1);
  CHECK(b[0].outputs.empty());
  CHECK_FALSE(b[0].divergent());
}

TEST_CASE("a comparison with a sample run alone carries its rows: the sample's rows of a dimension, or the whole") {
  json rows = probe(2, "buf3", "after", 0.5, 1.0);
  rows["compare"]["rows"] = {{"dim", 1}, {"from", 8}, {"count", 4}};
  rows["compare"]["elements"] = 12;
  json whole = probe(1, "buf1", "after", 0, 1.0);
  whole["compare"]["rows"] = {{"whole", true}};
  whole["compare"]["elements"] = 3;
  auto sites = compare_sites({whole, rows}, table());
  REQUIRE(sites.size() == 2);
  REQUIRE(sites[0].outputs.size() == 1);
  CHECK(sites[0].outputs[0].whole_batch);
  CHECK(sites[0].outputs[0].rows_dim == -1);
  CHECK(sites[0].outputs[0].elements == 3);
  CHECK_FALSE(sites[0].divergent());
  REQUIRE(sites[1].introduced);
  CHECK_FALSE(sites[1].introduced->whole_batch);
  CHECK(sites[1].introduced->rows_dim == 1);
  CHECK(sites[1].introduced->elements == 12);
}

TEST_CASE("an in-place update of a tensor that was already wrong is inherited") {
  std::vector<json> events = {probe(4, "buf3", "before", 0.5, 1.0), probe(4, "buf3", "after", 0.9, 1.0)};
  auto sites = compare_sites(events, table());
  CHECK_FALSE(sites[0].divergent());
}

TEST_CASE("the largest in-tolerance difference is the honest-rounding figure") {
  std::vector<json> events = {probe(1, "buf0", "after", 1e-7, 1.0), probe(2, "buf1", "after", 5e-6, 1.0),
                              probe(3, "buf2", "after", 0.5, 1.0)};
  auto h = largest_within(compare_sites(events, table()));
  REQUIRE(h);
  CHECK(h->call_index == 2);
  CHECK(h->tensor == "buf1");
  CHECK(h->ratio == doctest::Approx(5e-6 / (1e-5 + 1e-4)));
}

TEST_CASE("unmapped sites: new buffers that hold no graph node's value are listed with the reason") {
  NodeMap map = node_map_from_json(json::parse(R"({"format": 1, "buffers": {
      "buf0": {"nodes": ["linear"], "why": null},
      "buf1": {"nodes": [], "why": "an internal value of softmax (exp); no graph node holds it"},
      "buf2": {"nodes": ["softmax"], "why": null}}})"));
  std::vector<json> trace = {
      {{"event", "site_end"}, {"site", 1}, {"kernel", "addmm"}, {"tensors", {"buf0", "arg0_1"}}},
      {{"event", "site_end"}, {"site", 2}, {"kernel", "cpp_fused_exp_1"}, {"tensors", {"buf1", "buf0"}}},
      {{"event", "site_end"}, {"site", 3}, {"kernel", "cpp_fused_div_2"}, {"tensors", {"buf2", "buf1"}}},
      {{"event", "site_end"}, {"site", 4}, {"kernel", "cpp_fused_inplace_3"}, {"tensors", {"buf2"}}},
  };
  int mapped = 0;
  auto unmapped = unmapped_sites(trace, map, mapped);
  CHECK(mapped == 2);
  REQUIRE(unmapped.size() == 2);
  CHECK(unmapped[0].call_index == 2);
  CHECK(unmapped[0].why == "buf1: an internal value of softmax (exp); no graph node holds it");
  CHECK(unmapped[1].call_index == 4);
  CHECK(unmapped[1].why.find("writes no new buffer") == 0);
}

TEST_CASE("a buffer an extern call returns counts as that call's output, where a later site shows it") {
  // Site 2 (an extern call) returns buf3, which the printer first shows
  // before site 3's launch. Wrong there: site 2 introduced it.
  std::vector<json> events = {probe(2, "buf1", "before", 1e-7, 1.0), probe(3, "buf3", "before", 0.5, 1.0),
                              probe(3, "buf4", "after", 0.6, 1.0)};
  std::map<std::string, int> returned_by = {{"buf3", 2}};
  auto sites = compare_sites(events, table(), returned_by);
  REQUIRE(sites.size() == 2);
  CHECK(sites[0].site == 2);
  CHECK(sites[0].divergent());
  CHECK(sites[0].introduced->tensor == "buf3");
  CHECK_FALSE(sites[1].divergent());  // inherited
  CHECK(first_divergent(sites, 1, 2) == 2);
  // Without site 2's own probes nothing is credited to it (its inputs are unknown).
  auto alone = compare_sites({events[1], events[2]}, table(), returned_by);
  CHECK(first_divergent(alone, 1, 3) == std::nullopt);

  std::vector<json> trace = {
      {{"event", "site_end"}, {"site", 1}, {"kernel", "k1"}, {"tensors", {"buf1"}}},
      {{"event", "site_end"}, {"site", 2}, {"kernel", "conv"}, {"tensors", {"buf1"}}},
      {{"event", "site_end"}, {"site", 3}, {"kernel", "k3"}, {"tensors", {"buf3", "buf4"}}},
  };
  CHECK(consumer_sites(trace, returned_by) == std::map<int, int>{{2, 3}});
  NodeMap map = node_map_from_json(json::parse(R"({"buffers": {"buf1": {"nodes": ["a"]}, "buf3": {"nodes": ["conv"]},
      "buf4": {"nodes": []}}})"));
  int mapped = 0;
  auto unmapped = unmapped_sites(trace, map, mapped, returned_by);
  CHECK(mapped == 2);  // site 1 (buf1) and site 2 (buf3, returned)
  REQUIRE(unmapped.size() == 1);
  CHECK(unmapped[0].call_index == 3);
}

TEST_CASE("computed_nodes: the graph nodes fused into the buffers a site creates, in graph order") {
  NodeMap map = node_map_from_json(json::parse(R"({"buffers": {
      "buf0": {"nodes": ["linear"], "computes": ["linear"]},
      "buf1": {"nodes": ["log1p"], "computes": ["log1p", "abs_1", "relu"]},
      "buf2": {"nodes": [], "computes": ["softmax"]}}})"));
  json info = json::parse(R"({"nodes": {"linear": {"order": 3}, "relu": {"order": 4, "op": "aten.relu.default"},
      "abs_1": {"order": 5}, "log1p": {"order": 6}, "softmax": {"order": 8}}})");
  std::vector<json> trace = {
      {{"event", "site_end"}, {"site", 1}, {"kernel", "addmm"}, {"tensors", {"buf0", "arg0_1"}}},
      {{"event", "site_end"}, {"site", 2}, {"kernel", "cpp_fused_abs_log1p_relu_1"}, {"tensors", {"buf1", "buf0"}}},
      {{"event", "site_end"}, {"site", 3}, {"kernel", "cpp_fused_softmax_2"}, {"tensors", {"buf2", "buf1"}}},
  };
  auto nodes = computed_nodes(trace, map, 2, info);
  REQUIRE(nodes.size() == 3);
  CHECK(nodes[0].name == "relu");
  CHECK(nodes[0].op == "aten.relu.default");
  CHECK(nodes[1].name == "abs_1");
  CHECK(nodes[2].name == "log1p");
  CHECK(computed_nodes(trace, map, 3, info).size() == 1);
}

TEST_CASE("unmapped sites: an empty node map says why (an Inductor the helper could not read)") {
  NodeMap map =
      node_map_from_json(json::parse(R"j({"buffers": {}, "notes": ["cannot hook Inductor (ImportError: x)"]})j"));
  std::vector<json> trace = {{{"event", "site_end"}, {"site", 1}, {"kernel", "k"}, {"tensors", {"buf0"}}}};
  int mapped = 0;
  auto unmapped = unmapped_sites(trace, map, mapped);
  CHECK(mapped == 0);
  REQUIRE(unmapped.size() == 1);
  CHECK(unmapped[0].why == "no node map: cannot hook Inductor (ImportError: x)");
}

TEST_CASE("make_divergence: figures, worst element and the graph nodes with their source") {
  NodeMap map = node_map_from_json(json::parse(R"({"buffers": {"buf1": {"nodes": ["relu", "linear_1"]}}})"));
  json info = json::parse(R"j({"nodes": {"relu": {"op": "aten.relu.default",
      "source": {"file": "model.py", "line": 12, "function": "forward", "code": "h = F.relu(h)"}}}})j");
  std::vector<json> events = {probe(2, "buf0", "before", 1e-6, 1.0), probe(2, "buf1", "after", 1.0, 0.5)};
  auto sites = compare_sites(events, table());
  Divergence d = make_divergence(sites[0], map, info);
  CHECK(d.tensor == "buf1");
  CHECK(d.max_abs_error == 1.0);
  CHECK(d.max_rel_error == 2.0);
  CHECK(d.worst_index == std::vector<int64_t>{1, 2});
  CHECK(d.actual == "2.5");
  CHECK(d.expected == "1.5");
  CHECK(d.inputs_compared == 1);
  CHECK(d.inputs_worst_ratio < 1);
  REQUIRE(d.nodes.size() == 2);
  CHECK(d.nodes[0].name == "relu");
  CHECK(d.nodes[0].op == "aten.relu.default");
  CHECK(d.nodes[0].source == "model.py:12 in forward");
  CHECK(d.nodes[0].code == "h = F.relu(h)");
  CHECK(d.nodes[1].op.empty());
  CHECK(d.compared_with == "relu");
}

TEST_SUITE_END();
