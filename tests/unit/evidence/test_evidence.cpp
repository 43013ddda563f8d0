#include <doctest/doctest.h>

#include "evidence/evidence.hpp"
#include "evidence/inf_literal.hpp"
#include "evidence/wrapper_layout.hpp"
#include "package_fixture.hpp"
#include "wrapper/wrapper.hpp"

using namespace aoti_bisect;
using nlohmann::json;

namespace {

json stats(const std::string& name, int nan, int inf = 0, const std::string& dtype = "float32") {
  return {{"name", name}, {"dtype", dtype}, {"shape", {4}}, {"numel", 4},  {"nan", nan},
          {"inf", inf},   {"min", 0.0},     {"max", 1.0},   {"mean", 0.5}, {"checksum", "x"}};
}

json probe(int site, const std::string& phase, const std::string& tensor, bool initialized, int nan, int inf = 0) {
  return {{"event", "probe"},
          {"site", site},
          {"kernel", "k" + std::to_string(site)},
          {"phase", phase},
          {"tensor", tensor},
          {"initialized", initialized},
          {"stats", stats(tensor, nan, inf)}};
}

// A probe under the poison variant: `unwritten` elements still hold the poison.
json poisoned(int site, const std::string& phase, const std::string& tensor, bool initialized, int nan, int unwritten) {
  json p = probe(site, phase, tensor, initialized, nan);
  p["stats"]["unwritten"] = unwritten;
  p["stats"]["checksum"] = "c" + std::to_string(nan) + "_" + std::to_string(unwritten);  // bytes differ with counts
  return p;
}

json touching(int site, std::vector<std::string> tensors) {
  return {{"event", "site_end"}, {"site", site}, {"kernel", "k" + std::to_string(site)}, {"tensors", tensors}};
}

json begin(int site) {
  return {{"event", "site_begin"}, {"site", site}, {"kernel", "k" + std::to_string(site)}};
}
json end(int site) {
  return {{"event", "site_end"}, {"site", site}, {"kernel", "k" + std::to_string(site)}};
}

}  // namespace

TEST_SUITE_BEGIN("search/evidence");

TEST_CASE("trace_from_events: the site that began and never ended is the fault") {
  auto ev = trace_from_events({begin(1), end(1), begin(2), end(2), begin(3)});
  REQUIRE(ev.unfinished.has_value());
  CHECK(*ev.unfinished == 3);
  CHECK(ev.launched == 3);
  CHECK_FALSE(trace_from_events({begin(1), end(1)}).unfinished.has_value());
}

TEST_CASE("call_sites_differ: the first call site that differs, else the counts, else nothing") {
  auto wrapper = [](std::vector<std::string> kernels) {
    WrapperInfo w;
    for (const auto& k : kernels) {
      CallSite c;
      c.kernel = k;
      w.call_sites.push_back(c);
    }
    return w;
  };
  auto pkg = wrapper({"cpp_fused_0", "aoti_torch_cpu_addmm_out", "cpp_fused_1"});
  CHECK(call_sites_differ(pkg, wrapper({"cpp_fused_0", "aoti_torch_cpu_addmm_out", "cpp_fused_1"}), "x").empty());
  CHECK(call_sites_differ(pkg, wrapper({"cpp_fused_0", "cpp_fused_1", "aoti_torch_cpu_addmm_out"}), "rebuild") ==
        "call site 2 is aoti_torch_cpu_addmm_out in the package but cpp_fused_1 in the rebuild");
  CHECK(call_sites_differ(pkg, wrapper({"cpp_fused_0", "aoti_torch_cpu_addmm_out"}), "rebuild") ==
        "the package launches 3 call sites, the rebuild 2");
}

TEST_CASE("slow_not_stuck: a timed-out run names its launch only where it had run half the limit") {
  auto at = [](int site, double t) {
    json e = begin(site);
    e["clock"] = t;
    return e;
  };
  // Stopped at 110.0 with a 10 s limit: site 3 began at 101.0 (9 s in it): stuck there.
  auto stuck = trace_from_events({at(1, 100.0), end(1), at(2, 100.5), end(2), at(3, 101.0)});
  CHECK(stuck.site(3)->began_at == doctest::Approx(101.0));
  CHECK_FALSE(slow_not_stuck(OutcomeKind::timeout, stuck, 110.0, 10.0).has_value());
  // Site 3 began at 108.0: 2 s of a 10 s limit. The model was slow, not stuck.
  auto slow = trace_from_events({at(1, 100.0), end(1), at(2, 104.0), end(2), at(3, 108.0)});
  auto why = slow_not_stuck(OutcomeKind::timeout, slow, 110.0, 10.0);
  REQUIRE(why.has_value());
  CHECK(why->find("call site 3 (k3) had run 2.00 s") != std::string::npos);
  CHECK(why->find("raise --timeout") != std::string::npos);
  // Half of a tiny limit is not enough: a launch is called stuck after 1 s at least.
  auto tiny = trace_from_events({at(1, 100.0), end(1), at(2, 100.004)});
  REQUIRE(slow_not_stuck(OutcomeKind::timeout, tiny, 100.05, 0.01).has_value());
  CHECK(slow_not_stuck(OutcomeKind::timeout, tiny, 100.05, 0.01)->find("had run 0.05 s") != std::string::npos);
  // Without a time (an older runner) nothing is claimed; other failures are not judged.
  CHECK(slow_not_stuck(OutcomeKind::timeout, trace_from_events({begin(1)}), 110.0, 10.0).has_value());
  CHECK_FALSE(slow_not_stuck(OutcomeKind::crash, slow, 110.0, 10.0).has_value());
  // No launch began: nothing to name, nothing to refuse here.
  CHECK_FALSE(slow_not_stuck(OutcomeKind::timeout, trace_from_events({}), 110.0, 10.0).has_value());
}

TEST_CASE("answer_step: a run stopped inside a launch names it; stopped between launches, no heap hint") {
  Classification cls;
  cls.kind = OutcomeKind::timeout;
  auto inside = answer_step(Predicate::fault, OutcomeKind::timeout, cls,
                            trace_from_events({begin(1), end(1), begin(2)}), 1, 3, {}, false, {});
  CHECK(inside.verdict == StepVerdict::reproduces);
  CHECK(inside.exact == 2);
  auto between = answer_step(Predicate::fault, OutcomeKind::timeout, cls,
                             trace_from_events({begin(1), end(1), begin(2), end(2)}), 1, 3, {}, false, {});
  CHECK(between.verdict == StepVerdict::error);
  CHECK(between.note.find("after call site 2 returned, outside any launch") != std::string::npos);
  CHECK(between.note.find("memory corruption") == std::string::npos);
}

TEST_CASE("first_introducer: the first site in range that introduces NaN, not the ones that propagate it") {
  std::vector<json> events = {
      begin(4), probe(4, "before", "buf6", false, 0), end(4), probe(4, "after", "buf6", true, 0),
      // Site 5 writes NaN into buf7, which held garbage NaN before (not initialized): it introduces.
      begin(5), probe(5, "before", "buf7", false, 3), end(5), probe(5, "after", "buf7", true, 151),
      // Site 6 reads buf7 (already NaN) and writes NaN into buf8: it only propagates.
      begin(6), probe(6, "before", "buf8", false, 0), probe(6, "before", "buf7", true, 151), end(6),
      probe(6, "after", "buf8", true, 256), probe(6, "after", "buf7", true, 151)};
  RunTrace t = trace_from_events(events);
  CHECK(first_introducer(t, 4, 6) == 5);
  CHECK_FALSE(first_introducer(t, 6, 6).has_value());
  CHECK_FALSE(first_introducer(t, 4, 4).has_value());
}

TEST_CASE(
    "first_introducer under the poison variant: the kernel that reads memory no kernel wrote, not the one "
    "that left it unwritten") {
  std::vector<json> events = {
      // Site 1 writes 3 of buf0's 4 elements: the fourth still holds the poison (a NaN, not made by a kernel).
      begin(1), poisoned(1, "before", "buf0", false, 4, 4), touching(1, {"buf0"}),
      poisoned(1, "after", "buf0", true, 1, 1),
      // Site 2 reduces all of buf0 into buf1: NaN from the unwritten element.
      begin(2), poisoned(2, "before", "buf0", true, 1, 1), poisoned(2, "before", "buf1", false, 4, 4), end(2),
      poisoned(2, "after", "buf0", true, 1, 1), poisoned(2, "after", "buf1", true, 4, 0),
      // Site 3 reads buf1's NaN (made by site 2): it propagates them.
      begin(3), poisoned(3, "before", "buf1", true, 4, 0), poisoned(3, "before", "buf2", false, 4, 4), end(3),
      poisoned(3, "after", "buf2", true, 4, 0)};
  RunTrace t = trace_from_events(events);
  CHECK(t.poisoned);
  CHECK(first_introducer(t, 1, 3) == 2);
  CHECK(first_introducer(t, 1, 1) == std::nullopt);
  CHECK(first_introducer(t, 3, 3) == std::nullopt);
  // Without the poison counts, site 1 would be called the introducer.
  RunTrace plain =
      trace_from_events({begin(1), probe(1, "before", "buf0", false, 4), end(1), probe(1, "after", "buf0", true, 1)});
  CHECK(first_introducer(plain, 1, 1) == 1);
  WrapperInfo w;
  Culprit c = build_culprit({2, Predicate::nonfinite, &t, &t, &w, "", {}});
  CHECK(c.unwritten ==
        "reads memory no kernel wrote: 1 of the 4 elements of buf0 (4 float32) it reads still hold the poison they "
        "were allocated with");
  CHECK(c.why.rfind(c.unwritten + "; introduced 4 NaN and 0 Inf in buf1", 0) == 0);
  REQUIRE(c.producer.has_value());
  CHECK(c.producer->call_index == 1);
  CHECK(c.producer->why == "buf0 was left with 1 of its 4 elements unwritten");
}

TEST_CASE("build_culprit under the poison variant: a kernel that writes part of a buffer and reads all of it") {
  std::vector<json> events = {begin(1),
                              probe(1, "before", "arg0_1", true, 0),
                              poisoned(1, "before", "buf0", false, 4, 4),
                              poisoned(1, "before", "buf1", false, 4, 4),
                              end(1),
                              poisoned(1, "after", "buf0", true, 2, 2),
                              poisoned(1, "after", "buf1", true, 4, 0)};
  RunTrace t = trace_from_events(events);
  CHECK(first_introducer(t, 1, 1) == 1);
  WrapperInfo w;
  Culprit c = build_culprit({1, Predicate::nonfinite, &t, &t, &w, "", {}});
  CHECK(c.unwritten ==
        "reads memory no kernel wrote: 2 of the 4 elements of buf0 (4 float32) still hold, after its launch, the "
        "poison they were allocated with");
  CHECK_FALSE(c.producer.has_value());
}

TEST_CASE("first_introducer: an initialized tensor that gains Inf is introduced there") {
  std::vector<json> events = {begin(2), probe(2, "before", "arg0_1", true, 0), probe(2, "before", "buf1", true, 0),
                              end(2), probe(2, "after", "buf1", true, 0, 64)};
  CHECK(first_introducer(trace_from_events(events), 1, 3) == 2);
}

TEST_CASE("first_introducer: the -inf an attention mask writes from its own literal is not introduced there") {
  // Site 3 writes the causal mask (where(le, 0, -inf)) into buf7: Inf by
  // design. Site 19 makes NaN from finite inputs (sqrt of negatives).
  std::vector<json> events = {begin(3),
                              probe(3, "before", "buf4", true, 0),
                              probe(3, "before", "buf7", false, 0),
                              end(3),
                              probe(3, "after", "buf7", true, 0, 240),
                              begin(19),
                              probe(19, "before", "buf30", true, 0),
                              end(19),
                              probe(19, "after", "buf30", true, 2048)};
  RunTrace t = trace_from_events(events);
  CHECK(first_introducer(t, 1, 19) == 3);
  std::set<std::string> masks = {"k3"};
  CHECK(first_introducer(t, 1, 19, {}, false, masks) == 19);
  CHECK_FALSE(first_introducer(t, 3, 3, {}, false, masks).has_value());
  SUBCASE("NaN from such a kernel still counts") {
    std::vector<json> nan = {begin(3), probe(3, "before", "buf4", true, 0), end(3),
                             probe(3, "after", "buf4", true, 5, 240)};
    CHECK(first_introducer(trace_from_events(nan), 1, 3, {}, false, masks) == 3);
  }
}

TEST_CASE(
    "writes_infinity_literal: a value computed from an infinity literal and stored, not a reduction's initial "
    "value or an isinf test") {
  CHECK(
      writes_infinity_literal("extern \"C\" void k(const float* in_ptr0, float* out_ptr0) {\n"
                              "  auto tmp8 = -std::numeric_limits<float>::infinity();\n"
                              "  auto tmp9 = tmp7 ? tmp6 : tmp8;\n"
                              "  out_ptr0[static_cast<int64_t>(x0)] = tmp9;\n}\n"));
  CHECK(
      writes_infinity_literal("auto tmp3 = at::vec::Vectorized<float>(-std::numeric_limits<float>::infinity());\n"
                              "auto tmp4 = decltype(tmp3)::blendv(tmp2, tmp3, tmp1);\n"
                              "tmp4.store(out_ptr0 + static_cast<int64_t>(x0));"));
  // Computed, never stored.
  CHECK_FALSE(
      writes_infinity_literal("  auto tmp8 = -std::numeric_limits<float>::infinity();\n"
                              "  auto tmp9 = tmp7 ? tmp6 : tmp8;\n"));
  // A softmax's isinf test (torch 2.13: `abs(x) != inf`): a mask, not a value.
  CHECK_FALSE(writes_infinity_literal(
      "auto tmp5 = tmp3.abs();\n"
      "auto tmp6 = std::numeric_limits<float>::infinity();\n"
      "auto tmp7 = at::vec::Vectorized<float>(tmp6);\n"
      "auto tmp8 = at::vec::VecMask<float,1>(tmp5 != tmp7);\n"
      "auto tmp13 = tmp12.template cast<float,1>();\n"
      "tmp_acc0_vec = any_masked_reduce(tmp_acc0_vec, tmp13, static_cast<int64_t>(8L));\n"
      "tmp18.store(local_buffer_data_0 + static_cast<int64_t>(x1), static_cast<int64_t>(8L));\n"));
  CHECK_FALSE(
      writes_infinity_literal("  float tmp_acc0 = -std::numeric_limits<float>::infinity();\n"
                              "  at::vec::Vectorized<float> tmp_acc0_vec = "
                              "at::vec::Vectorized<float>(-std::numeric_limits<float>::infinity());\n"
                              "  auto tmp1 = std::exp(tmp0);\n"));
  CHECK_FALSE(writes_infinity_literal(""));
}

TEST_CASE("trace_from_events: a long trace (read in chunks, by several threads) is every site's own, in order") {
  // 5,000 call sites of 4 lines each: 20,001 lines, two chunks each read by more than one thread. Each
  // site's counts are its own number, so a line read into another site's place would show.
  std::vector<json> lines;
  const int sites = 5000;
  for (int k = 1; k <= sites; ++k) {
    lines.push_back(begin(k));
    lines.back()["clock"] = 100.0 + k;
    lines.push_back(probe(k, "before", "buf" + std::to_string(k), k % 3 != 0, 0));
    lines.push_back(probe(k, "after", "buf" + std::to_string(k), true, k, k % 7));
    lines.push_back(touching(k, {"buf" + std::to_string(k)}));
  }
  lines.push_back(begin(sites + 1));  // never ended
  RunTrace t = trace_from_events(Events(lines));
  REQUIRE(t.sites.size() == static_cast<size_t>(sites + 1));
  CHECK(t.launched == sites + 1);
  REQUIRE(t.unfinished.has_value());
  CHECK(*t.unfinished == sites + 1);
  int wrong = 0;
  for (int k = 1; k <= sites; ++k) {
    const SiteTrace* s = t.site(k);
    const ProbeStats* p = s ? s->find("buf" + std::to_string(k)) : nullptr;
    bool right = s != nullptr && s->kernel == "k" + std::to_string(k) && s->began && s->began_at == 100.0 + k &&
                 s->ended && p != nullptr &&
                 p->before && p->after && p->after->nan_count == k && p->after->inf_count == k % 7 &&
                 p->before->nan_count == 0 && p->initialized == (k % 3 != 0) && s->touched.size() == 1 &&
                 s->tensors.size() == 1;
    wrong += right ? 0 : 1;
  }
  CHECK(wrong == 0);
}

TEST_CASE("trace_from_events: the site whose sync found the device error") {
  json err = {{"event", "sync_error"}, {"site", 7}, {"kernel", "k7"}, {"message", "CUDA error"}};
  auto ev = trace_from_events({begin(7), err});
  REQUIRE(ev.sync_error.has_value());
  CHECK(*ev.sync_error == 7);
}

TEST_CASE("index_bound_of: the bound of AOTI's index check") {
  CHECK(index_bound_of("index out of bounds: 0 <= tmp21 < 5L") == 5);
  CHECK(index_bound_of("Error: index out of bounds: 0 <= tmp35 < 1000") == 1000);
  // ATen's own checks inside extern calls.
  CHECK(index_bound_of("Index 5 of input takes value 65 which is not in the valid range [0, 60)") == 60);
  CHECK(index_bound_of("index 7 is out of bounds for dimension 0 with size 5") == 5);
  CHECK_FALSE(index_bound_of("killed by SIGSEGV").has_value());
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("search/evidence");

TEST_CASE("blind_spots: unprobed call sites, by the probed site they follow") {
  WrapperInfo w;
  w.printer_level = 1;
  auto site = [](const std::string& k, bool probed) { return CallSite{0, k, KernelKind::cpp, 0, "", {}, probed}; };
  w.call_sites = {site("a", true),  site("b", true), site("c", true), site("x", false),
                  site("y", false), site("d", true), site("z", false)};
  auto spots = blind_spots(w);
  REQUIRE(spots.size() == 2);
  CHECK(spots[0].after == 3);
  CHECK(spots[0].kernels == std::vector<std::string>{"x", "y"});
  CHECK(describe(spots[0]) == "between call sites 3 and 4 (x, y)");
  CHECK(spots[1].after == 4);
  SUBCASE("an uninstrumented wrapper has none to speak of") {
    w.printer_level = 0;
    CHECK(blind_spots(w).empty());
  }
}

TEST_CASE("settle_branches: an extern call in the branch that ran is not taken for its twin in the other branch") {
  // Wrapper: addmm, then torch.cond with addmm + a in the true branch and
  // addmm + b in the false branch, then c. The false branch ran; the
  // runner, matching each call as it came, took the run's second addmm for
  // the true branch's (site 2).
  WrapperInfo w;
  auto site = [](int i, const std::string& k, const std::string& branch) {
    CallSite c{i, k, k.rfind("aoti_", 0) == 0 ? KernelKind::extern_call : KernelKind::cpp, 0, "", {}, true};
    c.branch = branch;
    return c;
  };
  w.call_sites = {site(1, "aoti_torch_cpu_addmm_out", ""), site(2, "aoti_torch_cpu_addmm_out", "true_graph_0"),
                  site(3, "cpp_a", "true_graph_0"),        site(4, "aoti_torch_cpu_addmm_out", "false_graph_0"),
                  site(5, "cpp_b", "false_graph_0"),       site(6, "cpp_c", "")};
  RunTrace t;
  auto ran = [&](int k, const std::string& kernel, int at) {
    SiteTrace s;
    s.site = k;
    s.kernel = kernel;
    s.wrapper_site = at;
    t.sites[k] = s;
  };
  ran(1, "aoti_torch_cpu_addmm_out", 1);
  ran(2, "aoti_torch_cpu_addmm_out", 2);
  ran(3, "cpp_b", 5);
  ran(4, "cpp_c", 6);
  settle_branches(t, w);
  CHECK(t.sites[1].wrapper_site == 1);
  CHECK(t.sites[2].wrapper_site == 4);
  CHECK(t.sites[3].wrapper_site == 5);
  CHECK(t.sites[4].wrapper_site == 6);
  SUBCASE("no kernel of its own tells which branch ran: left as the runner matched it") {
    w.call_sites[4].kernel = "cpp_a";  // both branches: addmm, cpp_a
    RunTrace u;
    std::swap(u, t);
    u.sites[2].wrapper_site = 2;
    u.sites[3].kernel = "cpp_a";
    u.sites[3].wrapper_site = 3;
    settle_branches(u, w);
    CHECK(u.sites[2].wrapper_site == 2);
    CHECK(u.sites[3].wrapper_site == 3);
  }
}

TEST_CASE("build_culprit: the wrapper's call site that ran gives kind and source nodes, not the run's number") {
  // A branch skipped the wrapper's sites 2 and 3: the run's site 2 is the
  // wrapper's site 4 (interposition reports it as "static").
  WrapperInfo w;
  for (int i = 1; i <= 4; ++i) {
    CallSite cs;
    cs.index = i;
    cs.kernel = i == 4 ? "k2" : "other" + std::to_string(i);
    cs.kind = KernelKind::cpp;
    cs.source_nodes = "[node" + std::to_string(i) + "]";
    w.call_sites.push_back(cs);
  }
  json b = begin(2);
  b["static"] = 4;
  RunTrace t = trace_from_events(
      {begin(1), end(1), b, probe(2, "before", "buf1", true, 0), end(2), probe(2, "after", "buf1", true, 3)});
  REQUIRE(t.site(2) != nullptr);
  CHECK(t.site(2)->wrapper_site == 4);
  Culprit c = build_culprit({2, Predicate::nonfinite, &t, &t, &w, "", {}});
  CHECK(c.call_index == 2);
  CHECK(c.kernel == "k2");
  CHECK(c.source_nodes == "[node4]");
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("search/evidence");

TEST_CASE("first_introducer: an extern call is credited with the Inf in the buffer it created") {
  // Site 4 (a convolution) creates buf7, never shown there; site 5 reads it
  // (moved to buf8) and shows Inf before its launch; site 5 only propagates.
  std::vector<json> events = {begin(4),
                              probe(4, "before", "buf4", true, 0),
                              end(4),
                              probe(4, "after", "buf4", true, 0),
                              begin(5),
                              probe(5, "before", "buf9", false, 0),
                              probe(5, "before", "buf8", true, 0, 64),
                              end(5),
                              probe(5, "after", "buf9", true, 0, 2),
                              probe(5, "after", "buf8", true, 0, 64)};
  RunTrace t = trace_from_events(events);
  ReturnedBy returned = {{"buf7", 4}, {"buf8", 4}};
  CHECK(first_introducer(t, 4, 5, returned) == 4);
  CHECK(first_introducer(t, 4, 4, returned) == 4);
  CHECK_FALSE(first_introducer(t, 5, 5, returned).has_value());
  SUBCASE("without knowing who created buf8, nothing in range introduced it (never site 5)") {
    CHECK_FALSE(first_introducer(t, 4, 5).has_value());
  }
  SUBCASE("the culprit's evidence names what it created") {
    WrapperInfo w;
    Culprit c = build_culprit({4, Predicate::nonfinite, &t, &t, &w, "", returned});
    CHECK(c.why == "created buf8 holding 0 NaN and 64 Inf from finite inputs (shown where call site 5 reads it)");
    REQUIRE(c.args.size() == 2);
    CHECK(c.args[1].tensor == "buf8");
    CHECK(c.args[1].after->inf_count == 64);
  }
}

TEST_CASE("inf_by_design_kernels: Triton kernels by the source the wrapper quotes") {
  std::string wrapper = fixture::text("cuda211_fp16_overflow.wrapper.cpp");
  WrapperInfo w = parse_wrapper(wrapper);
  REQUIRE_FALSE(w.call_sites.empty());
  // The softmax pads its reduction block with -inf (`tl.where(xmask, tmp4,
  // float("-inf"))`): not a value the kernel writes on purpose.
  std::string softmax = triton_kernel_source(wrapper, "triton_per_fused__softmax_add_exp_prepare_softmax_online_sub_1");
  REQUIRE(softmax.find("float(\"-inf\")") != std::string::npos);
  CHECK_FALSE(triton_writes_infinity_literal(softmax));
  CHECK(inf_by_design_kernels("", wrapper, w.call_sites).empty());
  CHECK(triton_writes_infinity_literal("    tmp3 = float(\"-inf\")\n    tmp4 = tl.where(tmp2, tmp3, tmp1)\n"));
  CHECK_FALSE(triton_writes_infinity_literal("    _tmp3 = tl.full([XBLOCK, R0_BLOCK], float(\"-inf\"), tl.float32)\n"));
  SUBCASE("a mask kernel quoted in the wrapper") {
    std::string masked = wrapper;
    std::string head = "async_compile.triton('triton_poi_fused_mul_sigmoid_0', '''";
    size_t at = masked.find(head);
    REQUIRE(at != std::string::npos);
    masked.insert(at + head.size(), "\n    tmp9 = float(\"-inf\")\n");
    CHECK(inf_by_design_kernels("", masked, w.call_sites) == std::set<std::string>{"triton_poi_fused_mul_sigmoid_0"});
  }
}

TEST_SUITE_END();
