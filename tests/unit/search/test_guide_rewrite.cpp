// Guide mode through the wrapper rewrite: the package's own wrapper with
// level-2 print calls around one range's call sites only, and the printed
// blocks of such a build mapped to that range's sites (sites outside it
// print nothing, whatever kernel they launch).

#include <cmath>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "codegen/rewrite.hpp"
#include "package_fixture.hpp"
#include "search/guide_printer.hpp"

using namespace aoti_bisect;

namespace {

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// nan_plain launches: 1 addmm (buf0, arg4_1), 2 cpp_fused_log_relu_sub_0
// (buf1, buf2), 3 addmm (buf3, buf2, buf1), 4 cpp_fused_tanh_1 (buf4).
const std::string k_addmm_out = "aoti_torch_cpu_addmm_out";
const std::string k_log_relu = "cpp_fused_log_relu_sub_0";
const std::string k_tanh = "cpp_fused_tanh_1";

PrintedTensor printed_tensor(const std::string& phase, const std::string& kernel, const std::string& tensor, double v) {
  PrintedTensor t;
  t.phase = phase;
  t.kernel = kernel;
  t.tensor = tensor;
  t.min = t.max = t.mean = v;
  t.has_nonfinite = !std::isfinite(v);
  return t;
}

}  // namespace

TEST_SUITE_BEGIN("search/guide_rewrite");

TEST_CASE("insert_probes, print=true with `only`: level-2 print calls around the range's call sites, none elsewhere") {
  std::string plain = fixture::text("nan_plain.wrapper.cpp");
  WrapperInfo w = parse_wrapper(plain);
  REQUIRE(w.call_sites.size() == 4);
  std::set<int> only = {2, 3};
  std::string rewritten = insert_probes(plain, w, ProbeText{&only, true});

  // The printer's own text (what Inductor writes at level 2), nothing of level 1.
  CHECK(rewritten.find("    aoti_torch_print_tensor_handle(buf1, \"before_launch - " + k_log_relu + " - buf1\");\n") !=
        std::string::npos);
  CHECK(rewritten.find("aoti_torch_print_tensor_handle(buf3, \"after_launch - " + k_addmm_out + " - buf3\");") !=
        std::string::npos);
  CHECK(count_of(rewritten, "aoti_torch_save_tensor_handle(") == 0);
  // Site 2: buf1, buf2 before and after; site 3: buf3, buf2, buf1 before and after.
  CHECK(count_of(rewritten, "aoti_torch_print_tensor_handle(") == 10);
  // Sites 1 and 4 are outside the range: buf0, arg4_1 and buf4 never print.
  CHECK(count_of(rewritten, " - buf0\"") == 0);
  CHECK(count_of(rewritten, " - arg4_1\"") == 0);
  CHECK(count_of(rewritten, k_tanh + " - ") == 0);
  // The print calls come before the launch they watch and after it.
  size_t before = rewritten.find("\"before_launch - " + k_log_relu + " - buf1\"");
  size_t launch = rewritten.find("    " + k_log_relu + "((float*)(buf1.data_ptr())");
  size_t after = rewritten.find("\"after_launch - " + k_log_relu + " - buf1\"");
  REQUIRE(launch != std::string::npos);
  CHECK(before < launch);
  CHECK(launch < after);

  // The rewritten wrapper launches the same sites; the printing sites, read
  // back from its text as for an Inductor level-2 build, are the range's.
  WrapperInfo r = parse_wrapper(rewritten);
  CHECK(r.printer_level == 2);
  REQUIRE(r.call_sites.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(r.call_sites[i].kernel == w.call_sites[i].kernel);
  }
  std::vector<std::string> expected = {"", k_log_relu, k_addmm_out, ""};
  CHECK(range_printing(w, only) == expected);
  CHECK(printing_kernels(rewritten, r.call_sites) == expected);

  SUBCASE("one site") {
    std::set<int> one = {4};
    std::string t = insert_probes(plain, w, ProbeText{&one, true});
    CHECK(count_of(t, "aoti_torch_print_tensor_handle(") == 2);
    CHECK(range_printing(w, one) == std::vector<std::string>{"", "", "", k_tanh});
  }
  SUBCASE("without `only`, every site prints") {
    std::string t = insert_probes(plain, w, ProbeText{nullptr, true});
    CHECK(count_of(t, "aoti_torch_print_tensor_handle(") == 4 + 4 + 6 + 2);
  }
}

TEST_CASE("range printing: blocks map to the range's sites, not to an earlier site of the same kernel") {
  WrapperInfo w = parse_wrapper(fixture::text("nan_plain.wrapper.cpp"));
  std::set<int> only = {2, 3};
  std::vector<std::string> printing = range_printing(w, only);
  // What the rewritten build of sites 2-3 prints: site 2 turns buf2 into
  // NaN, site 3 (the second addmm) reads it.
  std::vector<PrintedTensor> printed = {printed_tensor("before_launch", k_log_relu, "buf1", 1),
                                        printed_tensor("before_launch", k_log_relu, "buf2", 0),
                                        printed_tensor("after_launch", k_log_relu, "buf1", 1),
                                        printed_tensor("after_launch", k_log_relu, "buf2", NAN),
                                        printed_tensor("before_launch", k_addmm_out, "buf3", 0),
                                        printed_tensor("before_launch", k_addmm_out, "buf2", NAN),
                                        printed_tensor("before_launch", k_addmm_out, "buf1", 1),
                                        printed_tensor("after_launch", k_addmm_out, "buf3", NAN),
                                        printed_tensor("after_launch", k_addmm_out, "buf2", NAN),
                                        printed_tensor("after_launch", k_addmm_out, "buf1", 1)};
  SiteMapping m = map_printed_sites(printed, printing);
  CHECK(m.problem == "");
  REQUIRE(m.sites.size() == 2);
  CHECK(m.sites[0].site == 2);
  CHECK(m.sites[1].site == 3);  // the first addmm group printed is site 3's: site 1 does not print
  CHECK(m.sites[1].initialized.count("buf2") == 1);

  Classification nonfinite;
  nonfinite.kind = OutcomeKind::nonfinite;
  Probe p = guide_answer(Predicate::nonfinite, OutcomeKind::nonfinite, nonfinite, m, 2, 3);
  CHECK(p.verdict == StepVerdict::reproduces);
  CHECK(p.exact == 2);

  SUBCASE("taking every site as printing would misread the addmm group as site 1's") {
    SiteMapping all = map_printed_sites(printed, {k_addmm_out, k_log_relu, k_addmm_out, k_tanh});
    REQUIRE(all.sites.size() == 2);
    CHECK(all.sites[1].site == 1);
  }
  SUBCASE("a fault: the range's site printed before launch and never after") {
    std::vector<PrintedTensor> cut(printed.begin(), printed.begin() + 7);
    SiteMapping f = map_printed_sites(cut, printing);
    CHECK(trace_from_printer(f).unfinished == 3);
    Classification crash;
    crash.kind = OutcomeKind::crash;
    crash.first_line = "SIGSEGV";
    Probe q = guide_answer(Predicate::fault, OutcomeKind::crash, crash, f, 2, 3);
    CHECK(q.verdict == StepVerdict::reproduces);
    CHECK(q.exact == 3);
  }
}

TEST_SUITE_END();
