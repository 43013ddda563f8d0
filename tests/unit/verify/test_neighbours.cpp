// The neighbours planned from a package's dynamic sizes and index checks,
// the count and status judged from two reports, and the checked indices
// read from a kernel.
#include <doctest/doctest.h>

#include "verify/index_bounds.hpp"
#include "verify/neighbours.hpp"
#include "verify/verify_summary.hpp"

using namespace aoti_bisect;

namespace {

const Neighbour* find(const NeighbourPlan& p, const std::string& name) {
  for (const auto& n : p.cases) {
    if (n.name == name) {
      return &n;
    }
  }
  return nullptr;
}

NeighbourFacts batch_of(int64_t n, std::optional<int64_t> min, std::optional<int64_t> max) {
  NeighbourFacts f;
  f.shapes = {{n, 16}};
  f.batch.kind = BatchDimension::Kind::dynamic;
  f.batch.inputs = {0};
  f.batch.min = min;
  f.batch.max = max;
  f.dims = {{"s0", {{0, 0}}, min, max}};
  return f;
}

}  // namespace

TEST_CASE("neighbours of a batch of 8 compiled for 2..64") {
  NeighbourFacts f = batch_of(8, 2, 64);
  f.failing_samples = {3, 5};
  f.minimal_file = true;
  NeighbourPlan p = plan_neighbours(f);
  REQUIRE(p.cases.front().name == "original");
  REQUIRE(find(p, "minimal") != nullptr);
  CHECK(find(p, "minimal")->base == Neighbour::Base::minimal);
  // Several failing samples: each alone too.
  REQUIRE(find(p, "sample-5") != nullptr);
  CHECK(find(p, "sample-5")->cut.takes[0].rows == std::vector<int64_t>{4});
  const Neighbour* one = find(p, "batch-1");
  REQUIRE(one != nullptr);
  CHECK(one->cut.takes[0].rows == std::vector<int64_t>{7});  // the last sample: a loader's last batch
  CHECK(one->note.find("below the package's compiled minimum 2") != std::string::npos);
  CHECK(find(p, "batch-min")->cut.takes[0].rows.size() == 2);
  CHECK(find(p, "batch-minus-1")->cut.takes[0].rows.size() == 7);
  CHECK(find(p, "batch-double")->cut.takes[0].rows.size() == 16);
  CHECK(find(p, "batch-double")->cut.takes[0].rows[8] == 0);  // repeated from the start
  CHECK(find(p, "batch-max")->cut.takes[0].rows.size() == 64);
  CHECK(p.notes.empty());
}

TEST_CASE("no neighbour twice, and none past the growth limit") {
  // A batch of 2 compiled for 2..2048: batch-min is the original, batch-1
  // is one fewer, the maximum is 1024x.
  NeighbourFacts f = batch_of(2, 2, 2048);
  NeighbourPlan p = plan_neighbours(f);
  CHECK(find(p, "batch-min") == nullptr);
  CHECK(find(p, "batch-minus-1") == nullptr);
  CHECK(find(p, "batch-1") != nullptr);
  CHECK(find(p, "batch-max") == nullptr);
  REQUIRE(p.notes.size() == 1);
  CHECK(p.notes[0] == "batch-max (2048): not made: 1024x the original 2 along that dimension (the limit is 16x)");
  // No compiled maximum: twice the batch still.
  CHECK(find(plan_neighbours(batch_of(4, std::nullopt, std::nullopt)), "batch-double") != nullptr);
}

TEST_CASE("a sequence length cuts every tensor that shares it; checked indices get 0 and bound - 1") {
  NeighbourFacts f;
  f.shapes = {{2, 16}, {2, 16}, {16}};  // ids, mask, positions
  f.batch.kind = BatchDimension::Kind::fixed;
  f.batch.size = 2;
  f.dims = {{"s1", {{0, 1}, {1, 1}, {2, 0}}, 2, 64}};
  f.bounds = {{0, 50, 1, "cpp_fused_embedding_0"}};
  NeighbourPlan p = plan_neighbours(f);
  const Neighbour* longest = find(p, "input0-dim1-max");
  REQUIRE(longest != nullptr);
  REQUIRE(longest->cut.takes.size() == 2);  // dimension 0 of the positions, dimension 1 of ids and mask
  CHECK(longest->cut.takes[0].dim == 0);
  CHECK(longest->cut.takes[0].inputs == std::vector<int>{2});
  CHECK(longest->cut.takes[1].inputs == std::vector<int>{0, 1});
  CHECK(longest->cut.takes[1].rows.size() == 64);
  CHECK(longest->what.find("inputs 0, 1, 2 cut with it") != std::string::npos);
  CHECK(find(p, "input0-dim1-min")->cut.takes[1].rows == std::vector<int64_t>{0, 1});
  REQUIRE(find(p, "input0-index-49") != nullptr);
  CHECK(find(p, "input0-index-49")->cut.fills[0].value == 49);
  CHECK(find(p, "input0-index-0")->cut.fills[0].value == 0);
  CHECK(find(p, "batch-1") == nullptr);
  CHECK(p.notes[0] == "the package takes only batch 2: no neighbours of another batch size");
}

TEST_CASE("count_change names the output and whether samples were dropped") {
  CHECK(count_change({{8, 4}}, {{8, 4}}, 8) == "");
  CHECK(count_change({{8, 4}}, {{7, 4}}, 8) == "output 0: 8 rows before, 7 now: samples were dropped");
  CHECK(count_change({{8, 4}}, {{9, 4}}, 3) == "output 0: 8 rows before, 9 now: rows were added");
  CHECK(count_change({{2}, {8, 4}}, {{2}, {8, 5}}, 8) == "output 1: shape [8, 4] before, [8, 5] now");
  CHECK(count_change({{8}}, {{8}, {8}}, 8) == "1 output before, 2 now");
}

namespace {

Report report_with(Verdict v, std::optional<OutcomeKind> kind, std::vector<int64_t> shape) {
  Report r;
  r.verdict = v;
  RunRecord run;
  run.id = "baseline";
  TensorStats o;
  o.shape = std::move(shape);
  o.nan_count = kind == OutcomeKind::nonfinite ? 4 : 0;
  run.outputs.push_back(o);
  run.outcome = kind.value_or(OutcomeKind::ok);
  r.runs.push_back(run);
  if (kind) {
    r.failure = Failure{};
    r.failure->kind = *kind;
    r.failure->signature = "nonfinite/cpp_fused_add_div_0/abc";
  }
  return r;
}

}  // namespace

TEST_CASE("judge_case: a renamed kernel at the earlier call site reproduces; a mask and a count change fail") {
  const std::vector<EarlierFailureSite> earlier = {{"nonfinite/cpp_fused_div_0/xyz", "nonfinite", 1}};
  Report fixed = report_with(Verdict::isolated, OutcomeKind::nonfinite, {1, 4});
  fixed.culprit = Culprit{};
  fixed.culprit->call_index = 1;
  fixed.culprit->kernel = "cpp_fused_add_div_0";
  Report before = report_with(Verdict::not_isolated, OutcomeKind::nonfinite, {1, 4});
  VerifyCase c;
  judge_case(c, fixed, &before, earlier, 1);
  CHECK(c.status == "reproduces");
  CHECK(c.why == "NaN at call site 1 cpp_fused_add_div_0, as before the fix");
  fixed.culprit->call_index = 2;
  VerifyCase elsewhere;
  judge_case(elsewhere, fixed, nullptr, earlier, 1);
  CHECK(elsewhere.status == "new_failure");

  Report clean = report_with(Verdict::clean, std::nullopt, {7, 4});
  Report eight = report_with(Verdict::not_isolated, OutcomeKind::nonfinite, {8, 4});
  VerifyCase dropped;
  judge_case(dropped, clean, &eight, earlier, 8);
  CHECK(dropped.status == "count_changed");

  Report masked = report_with(Verdict::clean, std::nullopt, {8, 4});
  HealedSite h;
  h.note = "call site 1 cpp_fused_div_0 makes 16 NaN in buf1, which call site 3 cpp_fused_nan_to_num_1 cleans";
  masked.masked = std::vector<HealedSite>{h};
  VerifyCase m;
  judge_case(m, masked, &eight, earlier, 8);
  CHECK(m.status == "masked");
  CHECK(m.why == "the outputs are clean, but " + h.note);

  VerifySummary s;
  s.cases = {c};
  s.cases[0].status = "clean";
  CHECK(verify_exit_code(s) == 0);
  s.cases.push_back(m);
  CHECK(verify_exit_code(s) == 1);
  s.cases = {VerifyCase{}};
  s.cases[0].status = "could_not_test";
  CHECK(verify_exit_code(s) == 4);
}

TEST_CASE("index_bounds: the check's bound followed back to the kernel parameter it was read from") {
  const std::string kernel = R"(
extern "C"  void cpp_fused_embedding_0(const int64_t* in_ptr0, const float* in_ptr1, float* out_ptr0)
{
    {
        auto tmp0 = in_ptr0[static_cast<int64_t>(x0)];
        auto tmp1 = 50L;
        auto tmp2 = c10::convert<int64_t>(tmp1);
        auto tmp3 = decltype(tmp0)(tmp0 + tmp2);
        auto tmp4 = tmp0 < 0;
        auto tmp5 = tmp4 ? tmp3 : tmp0;
        AOTI_TORCH_CHECK((0 <= tmp5) & (tmp5 < 50L), "index out of bounds: 0 <= tmp5 < 50L");
        auto tmp7 = in_ptr1[static_cast<int64_t>(x1 + 8L*tmp5)];
    }
}
)";
  auto checked = checked_parameters(kernel);
  REQUIRE(checked.size() == 1);
  CHECK(checked[0].first == "in_ptr0");
  CHECK(checked[0].second == 50);
}

TEST_CASE("table_reads: without a check, the index's load from a table, with its row stride") {
  // An Embedding(50, 16) built with assert_indirect_indexing=False: the
  // wrapped index reads row tmp5 of in_ptr1, 16 floats a row.
  const std::string kernel = R"(
extern "C"  void cpp_fused_embedding_0(const int64_t* in_ptr0, const float* in_ptr1, float* out_ptr0)
{
    {
        auto tmp0 = in_ptr0[static_cast<int64_t>(x0)];
        auto tmp1 = 50L;
        auto tmp3 = decltype(tmp0)(tmp0 + tmp1);
        auto tmp4 = tmp0 < 0;
        auto tmp5 = tmp4 ? tmp3 : tmp0;
        auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1 + 16L*tmp5), static_cast<int64_t>(16));
    }
}
)";
  CHECK(checked_parameters(kernel).empty());
  auto reads = table_reads(kernel);
  REQUIRE(reads.size() == 1);
  CHECK(reads[0].index_param == "in_ptr0");
  CHECK(reads[0].table_param == "in_ptr1");
  CHECK(reads[0].stride == 16);

  // The call site gives in_ptr0 the graph input, in_ptr1 a [50, 16] constant.
  WrapperInfo w;
  CallSite site;
  site.index = 1;
  site.kernel = "cpp_fused_embedding_0";
  site.kind = KernelKind::cpp;
  site.args = {"arg0_1", "tok_weight", "buf0"};
  w.call_sites.push_back(site);
  InputSpec in;
  in.index = 0;
  in.name = "arg0_1";
  w.inputs.push_back(in);
  ConstantInfo table;
  table.name = "tok_weight";
  table.fqn = "tok.weight";
  table.shape = {50, 16};
  w.constant_info.push_back(table);
  auto bounds = index_bounds(w, kernel);
  REQUIRE(bounds.size() == 1);
  CHECK(bounds[0].input == 0);
  CHECK(bounds[0].bound == 50);
  CHECK(bounds[0].table == "tok.weight");
  // A stride that is not one row of it says nothing of its rows.
  w.constant_info[0].shape = {25, 32};
  CHECK(index_bounds(w, kernel).empty());
}
