#include <cmath>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "package_fixture.hpp"
#include "search/guide_printer.hpp"

using namespace aoti_bisect;

namespace {

// Real level-2 output of torch 2.13 (CPU), captured from the example models:
//  - nan_level2_filtered: nan_midway rebuilt with the filter
//    "cpp_fused_log_2,aoti_torch_cpu_addmm_out"; the log kernel (site 5)
//    makes NaN. The wrapper is that build's (compile commands cut off).
//  - class_index_level2_fault: class_index filtered to its nll_loss kernel
//    (site 5), which stopped with "index out of bounds: 0 <= tmp21 < 5L".
const std::string k_addmm = "aoti_torch_cpu_addmm_out";
const std::string k_log = "cpp_fused_log_2";
const std::string k_nll = "cpp_fused__log_softmax_mul_nll_loss_forward_2";

// nan_midway launches 9 sites; with the filter above, sites 2, 4, 6, 8
// (addmm) and 5 (log) print.
std::vector<std::string> nan_printing() {
  return {"", k_addmm, "", k_addmm, k_log, k_addmm, "", k_addmm, ""};
}

SiteMapping nan_mapping() {
  return map_printed_sites(parse_printer_output(fixture::text("nan_level2_filtered.stdout.txt")), nan_printing());
}

PrintedTensor block(const std::string& phase, const std::string& kernel, const std::string& tensor, double v) {
  PrintedTensor t;
  t.phase = phase;
  t.kernel = kernel;
  t.tensor = tensor;
  t.min = t.max = t.mean = v;
  t.has_nonfinite = !std::isfinite(v);
  return t;
}

Classification outcome(OutcomeKind kind, const std::string& line = "") {
  Classification c;
  c.kind = kind;
  c.first_line = line;
  return c;
}

}  // namespace

TEST_SUITE_BEGIN("search/guide_mode");

TEST_CASE("parse_printer_output: every block of a real level-2 run, in order") {
  auto blocks = parse_printer_output(fixture::text("nan_level2_filtered.stdout.txt"));
  REQUIRE(blocks.size() == 21);
  CHECK(blocks[0].phase == "aoti_model_inputs");
  CHECK(blocks[0].kernel == "");
  CHECK(blocks[0].tensor == "arg10_1");
  CHECK(blocks[0].numel == 128);
  CHECK(blocks[0].dtype == "float32");
  CHECK(blocks[0].shape == std::vector<int64_t>{8, 16});
  REQUIRE(blocks[0].min.has_value());
  CHECK(*blocks[0].min == doctest::Approx(-2.93058));
  CHECK(*blocks[0].max == doctest::Approx(2.81017));
  CHECK(*blocks[0].mean == doctest::Approx(-0.0219383));
  CHECK_FALSE(blocks[0].has_nonfinite);

  CHECK(blocks[1].phase == "before_launch");
  CHECK(blocks[1].kernel == k_addmm);
  CHECK(blocks[1].tensor == "buf4");

  // The log kernel's after-launch block: "-nan" for min, max and mean.
  const PrintedTensor& log_after = blocks[10];
  CHECK(log_after.phase == "after_launch");
  CHECK(log_after.kernel == k_log);
  CHECK(log_after.tensor == "buf7");
  REQUIRE(log_after.min.has_value());
  CHECK(std::isnan(*log_after.min));
  CHECK(log_after.has_nonfinite);
  CHECK_FALSE(blocks[9].has_nonfinite);  // its before-launch block

  // Small tensors print their elements first: they are not fields.
  const PrintedTensor& small = blocks.back();
  CHECK(small.tensor == "buf9");
  CHECK(blocks[15].tensor == "buf11");
  CHECK(blocks[15].numel == 32);
  CHECK(blocks[15].shape == std::vector<int64_t>{8, 4});
}

TEST_CASE("parse_printer_output: integer and scalar tensors of a run that faulted") {
  auto blocks = parse_printer_output(fixture::text("class_index_level2_fault.stdout.txt"));
  REQUIRE(blocks.size() == 8);
  CHECK(blocks[1].phase == "aoti_model_inputs");
  CHECK(blocks[1].tensor == "arg11_1");
  CHECK(blocks[1].dtype == "int64");  // printed as "long int"
  CHECK(*blocks[1].max == 7);
  CHECK(*blocks[1].min == 0);
  const PrintedTensor& last = blocks.back();
  CHECK(last.phase == "before_launch");
  CHECK(last.kernel == k_nll);
  CHECK(last.tensor == "buf11");
  CHECK(last.shape.empty());  // "Size: []"
  CHECK(last.numel == 1);
}

TEST_CASE("parse_printer_output: Inf, noise lines, no trailing newline") {
  SUBCASE("inf and -inf are non-finite") {
    auto blocks = parse_printer_output(
        "hello from the model\n[  after_launch - k - buf1  ]:\nNumber of elements: 4\nMean value: inf\n"
        "Min value: -inf\nMax value: inf");
    REQUIRE(blocks.size() == 1);
    CHECK(std::isinf(*blocks[0].min));
    CHECK(*blocks[0].min < 0);
    CHECK(blocks[0].has_nonfinite);
  }
  SUBCASE("a bracketed line that is no header is ignored") {
    auto blocks = parse_printer_output("[ CPUFloatType{8,4} ]\n[ something else ]:\n");
    CHECK(blocks.empty());
  }
  SUBCASE("lines after a block's blank line belong to no block") {
    auto blocks = parse_printer_output("[  before_launch - k - buf1  ]:\nMin value: 1\n\nMax value: nan\n");
    REQUIRE(blocks.size() == 1);
    CHECK_FALSE(blocks[0].max.has_value());
    CHECK_FALSE(blocks[0].has_nonfinite);
  }
}

TEST_CASE("printing_kernels: the sites of a level-2 wrapper that print, by the filter") {
  std::string source = fixture::text("nan_level2_filtered.wrapper.cpp");
  WrapperInfo w = parse_wrapper(source);
  CHECK(w.printer_level == 2);
  REQUIRE(w.call_sites.size() == 9);
  CHECK(w.call_sites[4].kernel == k_log);
  CHECK(printing_kernels(source, w.call_sites) == nan_printing());
}

TEST_CASE("map_printed_sites: groups belong to sites by occurrence of their kernel name") {
  SiteMapping m = nan_mapping();
  CHECK(m.problem == "");
  REQUIRE(m.sites.size() == 5);
  CHECK(m.sites[0].site == 2);
  CHECK(m.sites[1].site == 4);
  CHECK(m.sites[2].site == 5);
  CHECK(m.sites[2].kernel == k_log);
  CHECK(m.sites[3].site == 6);
  CHECK(m.sites[4].site == 8);
  CHECK(m.sites[4].before.size() == 3);
  CHECK(m.sites[4].after.size() == 3);
  // buf7 was printed after the log kernel's launch, so site 6 reads written
  // data; its output buf8 was never printed after a launch: unwritten.
  CHECK(m.sites[3].initialized.count("buf7") == 1);
  CHECK(m.sites[3].initialized.count("buf8") == 0);
}

TEST_CASE("map_printed_sites: consecutive sites of one kernel, and more groups than sites") {
  using V = std::vector<PrintedTensor>;
  V two = {block("before_launch", "k", "buf1", 1), block("after_launch", "k", "buf1", 1),
           block("before_launch", "k", "buf2", 1), block("after_launch", "k", "buf2", 1)};
  SUBCASE("a before block after an after block starts the next site") {
    SiteMapping m = map_printed_sites(two, {"k", "k"});
    REQUIRE(m.sites.size() == 2);
    CHECK(m.sites[1].site == 2);
    CHECK(m.sites[1].before[0].tensor == "buf2");
  }
  SUBCASE("a site that prints nothing is skipped in the numbering") {
    SiteMapping m = map_printed_sites(two, {"k", "", "k"});
    REQUIRE(m.sites.size() == 2);
    CHECK(m.sites[1].site == 3);
  }
  SUBCASE("more groups than printing sites is a problem, not a guess") {
    SiteMapping m = map_printed_sites(two, {"k", "x"});
    CHECK(m.problem.find("2 groups for k") != std::string::npos);
  }
}

TEST_CASE("trace_from_printer + first_introducer: the first site in range whose output turned non-finite") {
  RunTrace t = trace_from_printer(nan_mapping());
  CHECK(t.counts_are_flags);
  SUBCASE("the log kernel, whose before-launch data was finite") {
    CHECK(first_introducer(t, 1, 9) == 5);
    CHECK(first_introducer(t, 5, 5) == 5);
    const ProbeStats* buf7 = t.site(5)->find("buf7");
    REQUIRE(buf7 != nullptr);
    REQUIRE(buf7->after.has_value());
    CHECK(buf7->after->nan_count == 1);
  }
  SUBCASE("sites outside the range print too (same name) but do not count") {
    CHECK_FALSE(first_introducer(t, 1, 4).has_value());
    CHECK_FALSE(first_introducer(t, 4, 4).has_value());
  }
  SUBCASE("a site whose written input was already NaN only propagates it") {
    CHECK_FALSE(first_introducer(t, 6, 6).has_value());
  }
  SUBCASE("an unwritten output holding NaN garbage before launch still counts") {
    std::vector<PrintedTensor> v = {block("before_launch", "k", "buf3", NAN), block("before_launch", "k", "arg0_1", 1),
                                    block("after_launch", "k", "buf3", NAN), block("after_launch", "k", "arg0_1", 1)};
    RunTrace g = trace_from_printer(map_printed_sites(v, {"k"}));
    CHECK(first_introducer(g, 1, 1) == 1);
    CHECK_FALSE(g.site(1)->find("buf3")->initialized);
    CHECK(g.site(1)->find("arg0_1")->initialized);
  }
}

TEST_CASE("guide_answer, NaN/Inf: exact site, clean, or an error that is not clean") {
  SiteMapping m = nan_mapping();
  Classification nonfinite = outcome(OutcomeKind::nonfinite);
  Probe p = guide_answer(Predicate::nonfinite, OutcomeKind::nonfinite, nonfinite, m, 1, 5);
  CHECK(p.verdict == StepVerdict::reproduces);
  CHECK(p.exact == 5);
  CHECK(guide_answer(Predicate::nonfinite, OutcomeKind::nonfinite, nonfinite, m, 1, 4).verdict == StepVerdict::clean);
  Probe ok = guide_answer(Predicate::nonfinite, OutcomeKind::nonfinite, outcome(OutcomeKind::ok), m, 1, 4);
  CHECK(ok.verdict == StepVerdict::error);
  CHECK(ok.note == "the failure did not reproduce in this run");
  Classification broken = nonfinite;
  broken.internal = "runner died";
  CHECK(guide_answer(Predicate::nonfinite, OutcomeKind::nonfinite, broken, m, 1, 5).verdict == StepVerdict::error);
  SiteMapping bad = m;
  bad.problem = "mismatch";
  CHECK(guide_answer(Predicate::nonfinite, OutcomeKind::nonfinite, nonfinite, bad, 1, 5).note == "mismatch");
}

TEST_CASE("guide_answer, fault: the site printed before launch and never after") {
  std::vector<std::string> printing(9, "");
  printing[4] = k_nll;
  SiteMapping m =
      map_printed_sites(parse_printer_output(fixture::text("class_index_level2_fault.stdout.txt")), printing);
  REQUIRE(m.problem == "");
  CHECK(trace_from_printer(m).unfinished == 5);
  Classification assert_ = outcome(OutcomeKind::device_assert, "index out of bounds: 0 <= tmp21 < 5L");
  Probe p = guide_answer(Predicate::fault, OutcomeKind::device_assert, assert_, m, 5, 5);
  CHECK(p.verdict == StepVerdict::reproduces);
  CHECK(p.exact == 5);
  CHECK(guide_answer(Predicate::fault, OutcomeKind::device_assert, assert_, m, 1, 4).verdict == StepVerdict::clean);
  CHECK(guide_answer(Predicate::fault, OutcomeKind::device_assert, assert_, m, 6, 9).verdict == StepVerdict::error);
  // Nothing unfinished among the printed sites: it stopped at an unprinted one.
  SiteMapping none;
  CHECK(guide_answer(Predicate::fault, OutcomeKind::device_assert, assert_, none, 1, 4).verdict == StepVerdict::clean);
  CHECK(guide_answer(Predicate::fault, OutcomeKind::device_assert, outcome(OutcomeKind::crash, "SIGSEGV"), none, 1, 4)
            .verdict == StepVerdict::error);
}

TEST_SUITE_END();
