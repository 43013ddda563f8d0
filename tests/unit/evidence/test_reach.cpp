#include <doctest/doctest.h>

#include "evidence/producer.hpp"
#include "evidence/reach.hpp"

using namespace aoti_bisect;
using nlohmann::json;

namespace {

// A run built from events: each tensor's bytes are named by `sum` (its checksum).
struct Run {
  std::vector<json> events;
  std::map<int, std::string> kernels;
  void site(int k, const std::string& kernel) {
    kernels[k] = kernel;
    events.push_back({{"event", "site_begin"}, {"site", k}, {"kernel", kernel}});
    events.push_back({{"event", "site_end"}, {"site", k}, {"kernel", kernel}});
  }
  void probe(int k, const std::string& phase, const std::string& tensor, bool initialized, int nan, int inf,
             const std::string& sum, bool constant = false) {
    json st = {{"name", tensor}, {"dtype", "float32"}, {"shape", {4}}, {"numel", 4},  {"nan", nan},
               {"inf", inf},     {"min", 0.0},         {"max", 1.0},   {"mean", 0.5}, {"checksum", sum}};
    json e = {{"event", "probe"},           {"site", k},  {"kernel", kernels[k]}, {"phase", phase}, {"tensor", tensor},
              {"initialized", initialized}, {"stats", st}};
    if (constant) {
      e["constant"] = true;
    }
    events.push_back(e);
  }
  // One launch: reads `in` (name, nan, inf, sum), writes `out` from `before` to `after`.
  void launch(int k, const std::string& kernel, std::vector<std::tuple<std::string, int, int, std::string>> in,
              const std::string& out, int nan, int inf, const std::string& sum) {
    site(k, kernel);
    for (const auto& [name, n, i, s] : in) {
      probe(k, "before", name, true, n, i, s);
      probe(k, "after", name, true, n, i, s);
    }
    probe(k, "before", out, false, 0, 0, "garbage" + std::to_string(k));
    probe(k, "after", out, true, nan, inf, sum);
  }
};

TensorStats output(int nan, int inf, const std::string& sum) {
  TensorStats s;
  s.name = "output0";
  s.numel = 4;
  s.nan_count = nan;
  s.inf_count = inf;
  s.checksum = sum;
  return s;
}

Reach reach(const Run& run, std::vector<TensorStats> outputs, const WrapperInfo& w, std::set<std::string> design = {}) {
  static RunTrace t;
  t = trace_from_events(run.events);
  return trace_to_outputs({&t, std::move(outputs), &w, {}, std::move(design)});
}

}  // namespace

TEST_SUITE_BEGIN("search/reach");

TEST_CASE("trace_to_outputs: NaN made and healed before the outputs do not make a culprit") {
  // log (2) makes NaN, mm (3) spreads them, nan_to_num (4) cleans them; sqrt (6) makes the NaN the output holds.
  Run r;
  r.launch(1, "aoti_torch_cpu_addmm_out", {{"arg0_1", 0, 0, "x"}}, "buf0", 0, 0, "a");
  r.launch(2, "cpp_fused_log_0", {}, "buf1", 12, 0, "b");
  r.launch(3, "aoti_torch_cpu_mm_out", {{"buf1", 12, 0, "b"}}, "buf2", 256, 0, "c");
  r.launch(4, "cpp_fused_nan_to_num_1", {{"buf2", 256, 0, "c"}}, "buf3", 0, 0, "d");
  r.launch(5, "aoti_torch_cpu_addmm_out", {{"buf3", 0, 0, "d"}}, "buf4", 0, 0, "e");
  r.launch(6, "cpp_fused_sqrt_2", {{"buf4", 0, 0, "e"}}, "buf5", 9, 0, "f");
  r.launch(7, "aoti_torch_cpu_addmm_out", {{"buf5", 9, 0, "f"}}, "buf6", 32, 0, "g");
  WrapperInfo w;
  w.outputs = {"buf6"};
  Reach got = reach(r, {output(32, 0, "g")}, w);
  REQUIRE(got.followed);
  REQUIRE(got.culprit.has_value());
  CHECK(*got.culprit == 6);
  CHECK(got.summary == "the NaN in output 0 come from call site 6 cpp_fused_sqrt_2");
  REQUIRE(got.healed.size() == 1);
  CHECK(got.healed[0].call_index == 2);
  CHECK(got.healed[0].tensor == "buf1");
  CHECK(got.healed[0].nan_count == 12);
  REQUIRE(got.healed[0].last_read_by.has_value());
  CHECK(*got.healed[0].last_read_by == 4);
  CHECK(got.healed[0].cleaned);
  CHECK(got.healed[0].note ==
        "call site 2 cpp_fused_log_0 made 12 NaN in buf1, which call site 4 cpp_fused_nan_to_num_1 cleaned: not the "
        "cause");

  SUBCASE("without the cleaning, the first kernel that made them is the culprit") {
    Run plain;
    plain.launch(2, "cpp_fused_log_0", {}, "buf1", 12, 0, "b");
    plain.launch(3, "aoti_torch_cpu_mm_out", {{"buf1", 12, 0, "b"}}, "buf2", 256, 0, "c");
    WrapperInfo w2;
    w2.outputs = {"buf2"};
    Reach p = reach(plain, {output(256, 0, "c")}, w2);
    REQUIRE(p.culprit.has_value());
    CHECK(*p.culprit == 2);
    CHECK(p.healed.empty());
  }
}

TEST_CASE(
    "trace_to_outputs: NaN made from an overflow's Inf come from the overflow, from a mask's -inf from the "
    "site that made them") {
  WrapperInfo w;
  w.outputs = {"buf3"};
  SUBCASE("overflow: an extern call's Inf, turned into NaN by the softmax") {
    Run r;
    r.launch(1, "aoti_torch_cpu_addmm_out", {{"arg0_1", 0, 0, "x"}}, "buf1", 0, 64, "a");
    r.launch(2, "cpp_fused__softmax_0", {{"buf1", 0, 64, "a"}}, "buf2", 64, 0, "b");
    r.launch(3, "aoti_torch_cpu_mm_out", {{"buf2", 64, 0, "b"}}, "buf3", 16, 0, "c");
    Reach got = reach(r, {output(16, 0, "c")}, w);
    REQUIRE(got.culprit.has_value());
    CHECK(*got.culprit == 1);
    CHECK(got.healed.empty());
  }
  SUBCASE("mask: -inf by design, carried by baddbmm; the softmax makes the NaN") {
    Run r;
    r.launch(1, "cpp_fused_masked_fill_0", {}, "buf1", 0, 20, "m");
    r.launch(2, "aoti_torch_cpu_baddbmm_out", {{"buf1", 0, 20, "m"}}, "buf2", 0, 20, "s");
    r.launch(3, "cpp_fused__softmax_1", {{"buf2", 0, 20, "s"}}, "buf3", 8, 0, "p");
    Reach got = reach(r, {output(8, 0, "p")}, w, {"cpp_fused_masked_fill_0"});
    REQUIRE(got.culprit.has_value());
    CHECK(*got.culprit == 3);
    REQUIRE(got.healed.size() == 1);
    CHECK(got.healed[0].call_index == 1);
    CHECK(got.healed[0].by_design);
    REQUIRE(got.healed[0].last_read_by.has_value());
    CHECK(*got.healed[0].last_read_by == 3);
    CHECK(got.healed[0].note.find("from its own infinity literal (by design)") != std::string::npos);
    SUBCASE("the same -inf from a kernel without the literal is an accident: the chain goes on to it") {
      Reach acc = reach(r, {output(8, 0, "p")}, w);
      REQUIRE(acc.culprit.has_value());
      CHECK(*acc.culprit == 1);
    }
  }
}

TEST_CASE("trace_to_outputs: -inf healed by exp before a later 0/0") {
  Run r;
  r.launch(1, "cpp_fused_log_relu_0", {{"arg0_1", 0, 0, "x"}}, "buf1", 0, 30, "lp");
  r.launch(2, "aoti_torch_cpu_mm_out", {{"buf1", 0, 30, "lp"}}, "buf2", 0, 256, "m");
  // exp in place: buf3 is buf2's memory under a reuse name.
  r.site(3, "cpp_fused_exp_1");
  r.probe(3, "before", "buf3", true, 0, 256, "m");
  r.probe(3, "after", "buf3", true, 0, 0, "u");
  r.launch(4, "aoti_torch_cpu_mm_out", {{"buf3", 0, 0, "u"}}, "buf5", 0, 0, "z");
  r.launch(5, "cpp_fused_div_2", {{"buf3", 0, 0, "u"}, {"buf5", 0, 0, "z"}}, "buf7", 256, 0, "y");
  WrapperInfo w;
  w.moves = {{"buf3", "buf2"}};
  w.outputs = {"buf7"};
  Reach got = reach(r, {output(256, 0, "y")}, w);
  REQUIRE(got.culprit.has_value());
  CHECK(*got.culprit == 5);
  REQUIRE(got.healed.size() == 1);
  CHECK(got.healed[0].call_index == 1);
  CHECK(got.healed[0].inf_count == 30);
  REQUIRE(got.healed[0].last_read_by.has_value());
  CHECK(*got.healed[0].last_read_by == 3);  // found through the reuse name
}

TEST_CASE("trace_to_outputs: several non-finite outputs, views and extern calls' returned buffers") {
  Run r;
  // Site 1 is an extern call that creates buf1 (not shown there); site 2 reads it first.
  r.launch(1, "aoti_torch_cpu_convolution", {{"arg0_1", 0, 0, "x"}}, "buf0", 0, 0, "a");
  r.launch(2, "cpp_fused_relu_0", {{"buf1", 0, 8, "conv"}}, "buf2", 0, 8, "r");
  r.launch(3, "cpp_fused_log_1", {{"buf0", 0, 0, "a"}}, "buf3", 4, 0, "l");
  WrapperInfo w;
  w.outputs = {"buf2", "buf3", "arg0_1"};
  RunTrace t = trace_from_events(r.events);
  ReturnedBy returned = {{"buf1", 1}};
  Reach got = trace_to_outputs({&t, {output(0, 8, "r"), output(4, 0, "l"), output(0, 0, "x")}, &w, returned, {}});
  REQUIRE(got.followed);
  REQUIRE(got.culprit.has_value());
  CHECK(*got.culprit == 1);
  CHECK(got.output == 0);
  CHECK(got.others == "output 1's come from call site 3 cpp_fused_log_1");
  CHECK(got.healed.empty());

  SUBCASE("the same origin twice is shared") {
    Run same;
    same.launch(1, "cpp_fused_sqrt_0", {{"arg0_1", 0, 0, "x"}}, "buf0", 4, 0, "s");
    same.launch(2, "cpp_fused_mean_1", {{"buf0", 4, 0, "s"}}, "buf1", 1, 0, "m");
    WrapperInfo w2;
    w2.outputs = {"buf0", "buf1"};
    Reach s = reach(same, {output(4, 0, "s"), output(1, 0, "m")}, w2);
    CHECK(s.others == "output 1 shares it");
  }
}

TEST_CASE("trace_to_outputs: independent origins: the earliest site whose NaN reach an output, the other named") {
  // Output 1's NaN are made early (sqrt at call site 3); output 0's later, by an unrelated log (call site 8).
  Run r;
  r.launch(1, "aoti_torch_cpu_addmm_out", {{"arg0_1", 0, 0, "x"}}, "buf0", 0, 0, "a");
  r.launch(2, "cpp_fused_tanh_0", {{"buf0", 0, 0, "a"}}, "buf1", 0, 0, "t");
  r.launch(3, "cpp_fused_sqrt_1", {{"arg0_1", 0, 0, "x"}}, "buf2", 5, 0, "s");
  r.launch(4, "cpp_fused_mul_2", {{"buf2", 5, 0, "s"}}, "buf3", 5, 0, "m");
  r.launch(5, "aoti_torch_cpu_addmm_out", {{"buf1", 0, 0, "t"}}, "buf4", 0, 0, "b");
  r.launch(6, "cpp_fused_relu_3", {{"buf4", 0, 0, "b"}}, "buf5", 0, 0, "r");
  r.launch(7, "aoti_torch_cpu_addmm_out", {{"buf5", 0, 0, "r"}}, "buf6", 0, 0, "c");
  r.launch(8, "cpp_fused_log_4", {{"buf6", 0, 0, "c"}}, "buf7", 3, 0, "l");
  WrapperInfo w;
  w.outputs = {"buf7", "buf3"};
  Reach got = reach(r, {output(3, 0, "l"), output(5, 0, "m")}, w);
  REQUIRE(got.followed);
  REQUIRE(got.culprit.has_value());
  CHECK(*got.culprit == 3);
  CHECK(got.output == 1);
  REQUIRE(got.other_origins.size() == 1);
  CHECK(got.other_origins[0].site == 8);
  CHECK(got.other_origins[0].kernel == "cpp_fused_log_4");
  CHECK(got.other_origins[0].outputs == std::vector<int>{0});
  CHECK(got.summary ==
        "the NaN in output 1 come from call site 3 cpp_fused_sqrt_1; output 0's come from call site 8 "
        "cpp_fused_log_4");
  Bisection b;
  record_reach(b, got);
  REQUIRE(b.other_origins.size() == 1);
  CHECK(b.other_origins[0].note == "call site 8 cpp_fused_log_4 makes the NaN/Inf of output 0 on its own");
}

TEST_CASE("trace_to_outputs: NaN in the data come from the graph input; a constant's enter at its reader") {
  WrapperInfo w;
  w.outputs = {"buf1"};
  InputSpec in;
  in.index = 0;
  in.name = "arg0_1";
  w.inputs = {in};
  SUBCASE("graph input") {
    Run r;
    r.launch(1, "cpp_fused_tanh_0", {{"arg0_1", 1, 0, "x"}}, "buf1", 1, 0, "t");
    Reach got = reach(r, {output(1, 0, "t")}, w);
    REQUIRE(got.followed);
    CHECK_FALSE(got.culprit.has_value());
    CHECK(got.summary == "the NaN in output 0 come from graph input 0 (arg0_1)");
  }
  SUBCASE("constant") {
    Run r;
    r.site(1, "cpp_fused_layer_norm_0");
    r.probe(1, "before", "norm_weight", true, 0, 1, "w", true);
    r.probe(1, "after", "norm_weight", true, 0, 1, "w", true);
    r.probe(1, "before", "buf1", false, 0, 0, "g");
    r.probe(1, "after", "buf1", true, 0, 4, "t");
    Reach got = reach(r, {output(0, 4, "t")}, w);
    REQUIRE(got.culprit.has_value());
    CHECK(*got.culprit == 1);
  }
  SUBCASE("a value no probe showed written is not guessed at") {
    Run r;
    r.launch(2, "cpp_fused_tanh_0", {{"buf9", 1, 0, "q"}}, "buf1", 1, 0, "t");
    Reach got = reach(r, {output(1, 0, "t")}, w);
    CHECK_FALSE(got.followed);
    CHECK(got.why_not == "call site 2 read buf9 holding NaN/Inf that no probed site was seen writing");
  }
}

TEST_CASE("trace_to_outputs: an in-place kernel reads its in_out buffer even where the probe could not tell") {
  // A level-1 build's probe calls do not say which arguments are in place:
  // tanh (3) works on buf9, a reuse of buf8, and its before-probe says
  // "not written under this name". The wrapper's in_out_ptr says it reads it.
  Run r;
  r.launch(1, "cpp_fused_log_2", {{"arg0_1", 0, 0, "x"}}, "buf7", 151, 0, "l");
  r.launch(2, "aoti_torch_cpu_addmm_out", {{"buf7", 151, 0, "l"}}, "buf8", 256, 0, "a");
  r.site(3, "cpp_fused_tanh_3");
  r.probe(3, "before", "buf9", false, 256, 0, "a");
  r.probe(3, "after", "buf9", true, 256, 0, "t");
  WrapperInfo w;
  w.outputs = {"buf9"};
  w.moves = {{"buf9", "buf8"}};
  for (auto [i, k, args] : std::vector<std::tuple<int, std::string, std::vector<std::string>>>{
           {1, "cpp_fused_log_2", {"arg0_1", "buf7"}},
           {2, "aoti_torch_cpu_addmm_out", {"buf8", "buf7"}},
           {3, "cpp_fused_tanh_3", {"buf9"}}}) {
    CallSite c;
    c.index = i;
    c.kernel = k;
    c.args = args;
    w.call_sites.push_back(c);
  }
  Reach without = reach(r, {output(256, 0, "t")}, w);
  REQUIRE(without.culprit.has_value());
  CHECK(*without.culprit == 3);  // what the probe alone suggests
  w.call_sites[2].in_out = {0};
  Reach got = reach(r, {output(256, 0, "t")}, w);
  REQUIRE(got.culprit.has_value());
  CHECK(*got.culprit == 1);
  CHECK(got.healed.empty());

  SUBCASE("an in_out_ptr holding bytes nothing wrote is scratch (a mean reduced in place), not an input") {
    Run m;
    m.launch(1, "cpp_fused_sqrt_0", {{"arg0_1", 0, 0, "x"}}, "buf5", 256, 0, "s");
    m.site(2, "cpp_fused_mean_1");
    m.probe(2, "before", "buf9", false, 14, 0, "garbage");
    m.probe(2, "before", "buf5", true, 256, 0, "s");
    m.probe(2, "after", "buf9", true, 32, 0, "mean");
    m.probe(2, "after", "buf5", true, 256, 0, "s");
    WrapperInfo mw;
    mw.outputs = {"buf9"};
    CallSite sqrt;
    sqrt.index = 1;
    sqrt.kernel = "cpp_fused_sqrt_0";
    sqrt.args = {"arg0_1", "buf5"};
    CallSite mean;
    mean.index = 2;
    mean.kernel = "cpp_fused_mean_1";
    mean.args = {"buf9", "buf5"};
    mean.in_out = {0};
    mw.call_sites = {sqrt, mean};
    Reach got2 = reach(m, {output(32, 0, "mean")}, mw);
    REQUIRE(got2.followed);
    REQUIRE(got2.culprit.has_value());
    CHECK(*got2.culprit == 1);
  }
}

TEST_CASE("trace_to_outputs: what a level-1 build does not show before a launch is read under its last write") {
  // ResNet-50 through its exported program's build: the NaN made by a
  // log (1) pass through a convolution that creates buf2 (2), an in-place
  // batch norm on buf3 = move(buf2) shown only as "not written under this
  // name" (3), a mean into buf4 (4), and an addmm whose arguments are views,
  // shown only after the call (5). Before, the walk named the addmm or the
  // batch norm as the origin: the wrong kernel.
  Run r;
  r.launch(1, "cpp_fused_log_relu_sub_0", {{"arg0_1", 0, 0, "x"}}, "buf1", 8, 0, "l");
  r.site(2, "aoti_torch_cpu_convolution");
  r.probe(2, "before", "buf1", true, 8, 0, "l");
  r.probe(2, "after", "buf1", true, 8, 0, "l");
  r.site(3, "cpp_fused_batch_norm_add_relu_1");
  r.probe(3, "before", "buf3", false, 16, 0, "conv");
  r.probe(3, "after", "buf3", true, 16, 0, "bn");
  r.launch(4, "cpp_fused_mean_2", {{"buf3", 16, 0, "bn"}}, "buf4", 2, 0, "mean");
  r.site(5, "aoti_torch_cpu_addmm_out");
  r.probe(5, "after", "buf5", true, 2, 0, "fc");
  WrapperInfo w;
  w.outputs = {"buf5"};
  w.constants = {"fc_bias", "fc_weight", "conv_weight"};
  w.moves = {{"buf3", "buf2"}};
  for (auto [i, k, args] : std::vector<std::tuple<int, std::string, std::vector<std::string>>>{
           {1, "cpp_fused_log_relu_sub_0", {"arg0_1", "buf1"}},
           {2, "aoti_torch_cpu_convolution", {"buf1", "conv_weight", "buf2"}},
           {3, "cpp_fused_batch_norm_add_relu_1", {"buf3"}},
           {4, "cpp_fused_mean_2", {"buf4", "buf3"}},
           {5, "aoti_torch_cpu_addmm_out", {"buf5", "fc_bias", "view of buf4", "view of fc_weight"}}}) {
    CallSite c;
    c.index = i;
    c.kernel = k;
    c.args = args;
    w.call_sites.push_back(c);
  }
  w.call_sites[1].returns = {"buf2"};
  w.call_sites[2].in_out = {0};
  RunTrace t = trace_from_events(r.events);
  ReturnedBy returned = {{"buf2", 2}, {"buf3", 2}};
  Reach got = trace_to_outputs({&t, {output(2, 0, "fc")}, &w, returned, {}});
  REQUIRE(got.followed);
  REQUIRE(got.culprit.has_value());
  CHECK(*got.culprit == 1);
  CHECK(got.healed.empty());

  SUBCASE("an argument no probe showed and no probed site wrote: not traced, never the reader's own") {
    Run u;
    u.site(5, "aoti_torch_cpu_addmm_out");
    u.probe(5, "after", "buf5", true, 2, 0, "fc");
    static RunTrace only;
    only = trace_from_events(u.events);
    Reach alone = trace_to_outputs({&only, {output(2, 0, "fc")}, &w, {}, {}});
    CHECK_FALSE(alone.followed);
    CHECK(alone.why_not ==
          "call site 5 reads buf4, which no probe showed before its launch and no probed site was seen writing");
  }
}

TEST_CASE("walk_producer_back: a wild index passed on is the input's; one made from a clamped input is the site's") {
  auto index = [](int64_t lo, int64_t hi) {
    TensorStats st;
    st.dtype = "int64";
    st.numel = 8;
    st.min = static_cast<double>(lo);
    st.max = static_cast<double>(hi);
    return st;
  };
  auto run = [&](int64_t input_max, int64_t written_max) {
    RunTrace t;
    SiteTrace& s = t.sites[2];
    s.site = 2;
    s.kernel = "cpp_fused_add_0";
    s.began = s.ended = true;
    s.touched = {"arg1_1", "buf2"};
    s.tensors.push_back(ProbeStats{"arg1_1", true, index(0, input_max), index(0, input_max)});
    s.tensors.push_back(ProbeStats{"buf2", false, index(0, 0), index(0, written_max)});
    return t;
  };
  WrapperInfo w;
  InputSpec in;
  in.index = 1;
  in.name = "arg1_1";
  w.inputs = {in};
  SUBCASE("passed on: the graph input") {
    RunTrace t = run(1LL << 40, 1LL << 40);
    Producer first = producer_of("buf2", "holds values in [0, 1099511627776], outside [0, 50)", 5, t, w);
    REQUIRE(first.call_index.has_value());
    Producer p = walk_producer_back(first, 50, t, t, w);
    CHECK_FALSE(p.call_index.has_value());
    CHECK(p.tensor == "arg1_1");
    CHECK(p.why ==
          "graph input 1 (arg1_1) holds values in [0, 1099511627776], outside [0, 50) (passed on by call "
          "site 2 cpp_fused_add_0)");
  }
  SUBCASE("a later site that only read it is not its producer") {
    RunTrace t = run(1LL << 40, 1LL << 40);
    TensorStats wild = index(0, 1LL << 40);
    wild.checksum = "w";
    t.sites[2].tensors[1].after->checksum = "w";
    SiteTrace& sort = t.sites[3];
    sort.site = 3;
    sort.kernel = "aoti_torch_cpu_sort_stable";
    sort.began = sort.ended = true;
    sort.touched = {"buf2"};
    sort.tensors.push_back(ProbeStats{"buf2", true, wild, wild});
    Producer first = producer_of("buf2", "holds them", 5, t, w);
    REQUIRE(first.call_index.has_value());
    CHECK(*first.call_index == 3);
    Producer p = walk_producer_back(first, 50, t, t, w);
    CHECK_FALSE(p.call_index.has_value());
    CHECK(p.why.find("(passed on by call site 2 cpp_fused_add_0)") != std::string::npos);
  }
  SUBCASE("made from a clamped input: the site") {
    RunTrace t = run(1LL << 41, 49LL << 38);
    Producer first = producer_of("buf2", "holds them", 5, t, w);
    Producer p = walk_producer_back(first, 50, t, t, w);
    REQUIRE(p.call_index.has_value());
    CHECK(*p.call_index == 2);
  }
}

TEST_SUITE_END();
