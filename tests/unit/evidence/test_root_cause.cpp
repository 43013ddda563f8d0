#include <doctest/doctest.h>

#include "evidence/root_cause.hpp"

using namespace aoti_bisect;

namespace {

TensorStats st(const std::string& dtype, std::vector<int64_t> shape, double min, double max, int64_t nan = 0,
               int64_t inf = 0) {
  TensorStats s;
  s.dtype = dtype;
  s.shape = shape;
  s.numel = 1;
  for (auto d : shape) {
    s.numel *= d;
  }
  s.min = min;
  s.max = max;
  s.nan_count = nan;
  s.inf_count = inf;
  return s;
}

ProbeStats arg(const std::string& name, std::optional<TensorStats> before, std::optional<TensorStats> after = {},
               bool initialized = true) {
  ProbeStats p;
  p.tensor = name;
  p.initialized = initialized;
  p.before = before;
  p.after = after;
  return p;
}

WrapperInfo wrapper_with(std::vector<ConstantInfo> constants) {
  WrapperInfo w;
  w.constant_info = std::move(constants);
  InputSpec x;
  x.index = 0;
  x.name = "arg7_1";
  InputSpec ids;
  ids.index = 1;
  ids.name = "arg8_1";
  w.inputs = {x, ids};
  return w;
}

const char* k_gather = R"(extern "C"  void  cpp_fused_add_embedding_tanh_1(const float* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       float* out_ptr0)
{
    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(8L); x0+=static_cast<int64_t>(1L))
    {
        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
        auto tmp1 = in_ptr1[static_cast<int64_t>(x0)];
        auto tmp2 = decltype(tmp1)(tmp1 + 0);
        auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1 + 16L*tmp2), static_cast<int64_t>(16));
        auto tmp4 = tmp0 + tmp3;
        tmp4.store(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0));
    }
}
)";

// BERT's embeddings: position ids (0..63) index the token-type ids (all 0),
// which index a 2-row table. The 2-row table's index is in_ptr3's value; a
// later loop body reuses the name tmp9 for a value made from tmp5.
const char* k_double_gather = R"(extern "C"  void  cpp_fused_add_embedding_0(const int64_t* in_ptr2,
                       const int64_t* in_ptr3,
                       const float* in_ptr4,
                       float* out_ptr0)
{
    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(12L); x1+=static_cast<int64_t>(1L))
    {
        auto tmp5 = in_ptr2[static_cast<int64_t>(x1)];
        auto tmp9 = in_ptr3[static_cast<int64_t>(tmp5)];
        auto tmp10 = tmp9;
        auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr4 + static_cast<int64_t>(x2 + 32L*tmp9), static_cast<int64_t>(16));
        tmp13.store(out_ptr0 + static_cast<int64_t>(x2 + 32L*x1));
    }
    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(12L); x1+=static_cast<int64_t>(1L))
    {
        auto tmp8 = tmp5 + 1;
        auto tmp9 = 1 / std::sqrt(tmp8);
    }
}
)";

}  // namespace

TEST_SUITE_BEGIN("search/root_cause");

TEST_CASE("wild_index: an index loaded through another index is the loaded tensor's, not the address's") {
  Culprit c;
  c.kernel = "cpp_fused_add_embedding_0";
  c.kind = "cpp";
  c.args = {arg("position_ids", st("int64", {1, 64}, 0, 63)), arg("token_type_ids", st("int64", {1, 64}, 0, 0)),
            arg("type_weight", st("float32", {2, 32}, -2, 2)), arg("buf4", std::nullopt, std::nullopt, false)};
  CallSite site;
  site.kernel = c.kernel;
  site.args = {"position_ids", "token_type_ids", "type_weight", "buf4"};
  // Before: 63 (position_ids' max) was taken for the 2-row table's index.
  CHECK_FALSE(wild_index(c, k_double_gather, &site).has_value());
  c.args[1].before = st("int64", {1, 64}, 0, 5);
  auto wild = wild_index(c, k_double_gather, &site);
  REQUIRE(wild.has_value());
  CHECK(wild->index_tensor == "token_type_ids");
  CHECK(wild->value == 5);
  CHECK(wild->bound == 2);
}

TEST_CASE("wild_index: the index compared with the rows of the tensor it indexes, from the kernel's source") {
  Culprit c;
  c.kernel = "cpp_fused_add_embedding_tanh_1";
  c.kind = "cpp";
  c.args = {arg("buf2", st("float32", {8, 16}, -1, 1)), arg("arg8_1", st("int64", {8}, 0, 100000000)),
            arg("emb_weight", st("float32", {100, 16}, -2, 2)), arg("buf3", std::nullopt, std::nullopt, false)};
  CallSite site;
  site.kernel = c.kernel;
  site.args = {"buf2", "arg8_1", "emb_weight", "buf3"};
  auto wild = wild_index(c, k_gather, &site);
  REQUIRE(wild.has_value());
  CHECK(wild->index_tensor == "arg8_1");
  CHECK(wild->value == 100000000);
  CHECK(wild->indexed_tensor == "emb_weight");
  CHECK(wild->bound == 100);
  WrapperInfo w = wrapper_with({{0, "emb_weight", "emb.weight", "parameter", {100, 16}}});
  annotate_origins(c, w);
  CHECK(c.args[2].fqn == "emb.weight");
  CHECK(c.args[2].origin == "parameter emb.weight");
  CHECK(c.args[1].origin == "graph input 1");
  RootCause cause = root_cause(c, Predicate::fault, wild, w, std::nullopt);
  CHECK(cause.sentence == "index 100000000 ≥ 100 rows of parameter emb.weight, from graph input 1 (arg8_1)");
  CHECK(cause.basis == "index");

  // In range: nothing to say; a negative index past the rows is named too.
  c.args[1].before = st("int64", {8}, 0, 99);
  CHECK_FALSE(wild_index(c, k_gather, &site).has_value());
  c.args[1].before = st("int64", {8}, -101, 5);
  REQUIRE(wild_index(c, k_gather, &site).has_value());
  CHECK(wild_index(c, k_gather, &site)->value == -101);
  // Without the source or the call site's arguments, no claim.
  CHECK_FALSE(wild_index(c, "", &site).has_value());
  CHECK_FALSE(wild_index(c, k_gather, nullptr).has_value());
}

// No cause is ever picked from a kernel's or a constant's name: a kernel
// called "log" or "batch_norm" reading negative values, a constant named
// "running_var" holding negatives, give no sentence. What the probes
// measure does: a constant holding NaN/Inf, an extern call's Inf from
// finite inputs (overflow), an index past its bound.
TEST_CASE("root_cause: measured facts only, never from names") {
  WrapperInfo w = wrapper_with(
      {{0, "bn_running_var", "bn.running_var", "buffer", {32}}, {1, "norm_weight", "norm.weight", "parameter", {32}}});
  Culprit bn;
  bn.kernel = "cpp_fused__native_batch_norm_legit_no_training_mean_relu_sqrt_var_1";
  bn.kind = "cpp";
  bn.args = {arg("buf3", st("float32", {2, 32, 8, 8}, -4, 4)), arg("bn_running_var", st("float32", {32}, -3, 2)),
             arg("buf5", std::nullopt, st("float32", {2, 32}, 0, 1, 8), false)};
  annotate_origins(bn, w);
  CHECK(bn.args[1].origin == "buffer bn.running_var");
  CHECK(root_cause(bn, Predicate::nonfinite, std::nullopt, w, std::nullopt).sentence.empty());

  Culprit log;
  log.kernel = "cpp_fused_log_2";
  log.kind = "cpp";
  log.args = {arg("buf4", st("float32", {8, 32}, -2.5, 3)),
              arg("buf5", std::nullopt, st("float32", {8, 32}, 0, 1, 120), false)};
  CHECK(root_cause(log, Predicate::nonfinite, std::nullopt, w, std::nullopt).sentence.empty());

  // A cpp kernel whose output holds Inf from finite inputs: no overflow is claimed (1/0 is not one).
  Culprit div = log;
  div.kernel = "cpp_fused_div_overflow_3";
  div.args[1].after = st("float32", {8, 32}, 0, 1, 0, 4);
  CHECK(root_cause(div, Predicate::nonfinite, std::nullopt, w, std::nullopt).sentence.empty());

  Culprit ln;
  ln.kernel = "cpp_fused_gelu_native_layer_norm_0";
  ln.kind = "cpp";
  ln.args = {arg("buf2", st("float32", {8, 32}, -1, 1)), arg("norm_weight", st("float32", {32}, 0, 1, 0, 1)),
             arg("buf4", std::nullopt, st("float32", {8, 32}, 0, 1, 0, 8), false)};
  annotate_origins(ln, w);
  RootCause c = root_cause(ln, Predicate::nonfinite, std::nullopt, w, std::nullopt);
  CHECK(c.basis == "constant");
  CHECK(c.sentence == "reads parameter norm.weight, which holds 1 Inf before the launch (a constant of the package)");

  // An extern call: its ATen op (the comment's, the one the shim is for), its inputs' ranges, and "overflowed"
  // only for Inf (no NaN) out of finite inputs.
  Culprit mm;
  mm.kernel = "aoti_torch_cpu_bmm_out";
  mm.kind = "extern";
  mm.aten_ops = "[aten.view, aten.bmm]";
  mm.args = {arg("buf3", st("float16", {4, 8, 8}, -1, 1), st("float16", {4, 8, 8}, 0, 1, 0, 40)),
             arg("view of buf1", st("float16", {4, 8, 8}, -500, 480)),
             arg("view of buf2", st("float16", {4, 8, 8}, -3, 3))};
  mm.args[0].initialized = false;
  c = root_cause(mm, Predicate::nonfinite, std::nullopt, w, std::nullopt);
  CHECK(c.basis == "extern_inputs");
  CHECK(c.op == "aten.bmm");
  CHECK(c.operation == "overflow");
  CHECK(c.sentence ==
        "aten.bmm overflowed float16: it wrote 40 Inf into buf3 from finite inputs (view of buf1 in "
        "[-500, 480], view of buf2 in [-3, 3]); the largest finite float16 is 65504");
  mm.args[0].after = st("float16", {4, 8, 8}, 0, 1, 6, 40);  // NaN too: no overflow claimed
  c = root_cause(mm, Predicate::nonfinite, std::nullopt, w, std::nullopt);
  CHECK(c.operation.empty());
  CHECK(c.sentence ==
        "aten.bmm wrote 6 NaN and 40 Inf into buf3 from finite inputs (view of buf1 in [-500, 480], "
        "view of buf2 in [-3, 3])");
  mm.args[1].before = st("float16", {4, 8, 8}, -500, 480, 0, 2);  // an input with Inf: not from finite inputs
  CHECK(root_cause(mm, Predicate::nonfinite, std::nullopt, w, std::nullopt).sentence.empty());

  // A fault with a bound in its error line: the index against that bound.
  Culprit nll;
  nll.kernel = "cpp_fused_nll_loss_1";
  nll.kind = "cpp";
  nll.args = {arg("arg8_1", st("int64", {8}, 0, 7))};
  nll.producer = Producer{"arg8_1", std::nullopt, "", "graph input 1 (arg8_1) holds values in [0, 7], outside [0, 5)"};
  CHECK(root_cause(nll, Predicate::fault, std::nullopt, w, 5).sentence ==
        "index 7 outside [0, 5) (the bound the error names), from graph input 1 (arg8_1)");
  // Nothing to say: no sentence.
  Culprit plain;
  plain.kernel = "cpp_fused_tanh_3";
  plain.args = {arg("buf1", st("float32", {4}, -1, 1))};
  CHECK(root_cause(plain, Predicate::nonfinite, std::nullopt, w, std::nullopt).sentence.empty());
}

namespace {
IntermediateHit hit(const std::string& text, const std::string& kind,
                    std::vector<std::pair<std::string, std::string>> ops) {
  IntermediateHit h;
  h.text = text;
  h.kind = kind;
  h.value = kind == "nan" ? "nan" : "inf";
  h.target = text.substr(0, text.find(' '));
  h.operands = std::move(ops);
  h.element = {{"x0", 3}, {"x1", 12}};
  h.output_tensor = "buf7";
  h.output_index = {3, 12};
  h.count = 12;
  return h;
}
std::string operation(const std::string& text, const std::string& kind,
                      std::vector<std::pair<std::string, std::string>> ops) {
  RootCause r;
  Culprit c;
  IntermediateHit h = hit(text, kind, std::move(ops));
  explain_intermediate(r, {&h}, c);
  return r.operation;
}
}  // namespace

TEST_CASE("explain_intermediate: the expression, the element, the operands, and what they make of it") {
  Culprit c;
  c.aten_ops = "[aten.sub, aten.div, aten.sum]";
  RootCause r;
  IntermediateHit div = hit("tmp9 = tmp5 / tmp8", "nan", {{"tmp5", "0"}, {"tmp8", "0"}});
  explain_intermediate(r, {&div}, c);
  CHECK(r.basis == "intermediate");
  REQUIRE(r.intermediates.size() == 1);
  CHECK(r.intermediates[0].expression == "tmp9 = tmp5 / tmp8");
  CHECK(r.operation == "0/0");
  CHECK(r.op == "aten.div");
  CHECK(r.intermediates[0].elements == 12);
  CHECK(r.sentence ==
        "`tmp9 = tmp5 / tmp8` made NaN at x0=3, x1=12 (buf7[3, 12]) from tmp5 = 0, tmp8 = 0: 0/0, in "
        "aten.div (12 times)");
  // A fact about a constant found before is kept in front.
  r = RootCause{};
  r.basis = "constant";
  r.sentence = "reads parameter w, which holds 1 Inf before the launch (a constant of the package)";
  IntermediateHit mul = hit("tmp4 = tmp2 * tmp3", "nan", {{"tmp2", "0"}, {"tmp3", "inf"}});
  explain_intermediate(r, {&mul}, Culprit{});
  CHECK(r.operation == "0 × inf");
  CHECK(r.sentence.rfind("reads parameter w, which holds 1 Inf before the launch (a constant of the package); "
                         "`tmp4 = tmp2 * tmp3` made NaN",
                         0) == 0);

  CHECK(operation("tmp7 = tmp6.log()", "inf", {{"tmp6", "0"}}) == "log of 0");
  CHECK(operation("tmp7 = tmp6.log()", "nan", {{"tmp6", "-0.5"}}) == "log of a negative value");
  CHECK(operation("tmp7 = std::log(tmp6)", "nan", {{"tmp6", "-0.5"}}) == "log of a negative value");
  CHECK(operation("tmp3 = tmp2.sqrt()", "nan", {{"tmp2", "-1e-07"}}) == "square root of a negative value");
  CHECK(operation("tmp9 = 1 / std::sqrt(tmp8)", "inf", {{"tmp8", "0"}}) == "1/sqrt(0)");
  CHECK(operation("tmp2 = tmp0 - tmp1", "nan", {{"tmp0", "-inf"}, {"tmp1", "-inf"}}) == "inf - inf");
  CHECK(operation("tmp2 = tmp0 + tmp1", "nan", {{"tmp0", "-inf"}, {"tmp1", "inf"}}) == "inf + (-inf)");
  CHECK(operation("tmp2 = tmp0 * tmp1", "inf", {{"tmp0", "3e+20"}, {"tmp1", "2e+20"}}) ==
        "a product of finite values overflows");
  CHECK(operation("tmp2 = tmp1.exp()", "inf", {{"tmp1", "120"}}) == "exp of a finite value overflows");
  CHECK(operation("tmp2 = tmp0 / tmp1", "inf", {{"tmp0", "1"}, {"tmp1", "0"}}) == "division by zero");
  CHECK(operation("tmp3 = float(tmp0 * tmp2)", "nan", {{"tmp0", "0"}, {"tmp2", "-inf"}}) == "0 × inf");
  CHECK(operation("tmp8 = tmp7.acosh()", "nan", {{"tmp7", "0.999996185"}}) == "acosh of a value below 1");
  CHECK(operation("tmp6 = at::vec::convert<at::Half,1,float,2>(tmp5)", "inf", {{"tmp5", "2410422.25"}}) ==
        "a finite value past float16's range (largest 65504) converted to it");
  CHECK(operation("tmp6 = static_cast<c10::BFloat16>(tmp5)", "inf", {{"tmp5", "1e+39"}}) ==
        "a finite value past bfloat16's range (largest 3.39e38) converted to it");
  // A shape it does not know, or values that explain nothing: the expression and values only.
  CHECK(operation("tmp5 = decltype(tmp4)::blendv(tmp3, tmp4, tmp2)", "nan", {{"tmp2", "1"}}).empty());
  CHECK(operation("tmp7 = tmp6.log()", "nan", {{"tmp6", "0.5"}}).empty());
  // Several ops of that name in the kernel: none is named.
  c.aten_ops = "[aten.div, aten.div]";
  r = RootCause{};
  explain_intermediate(r, {&div}, c);
  CHECK(r.op.empty());
  // The package's provenance names the post-grad node.
  c.aten_ops.clear();
  c.post_grad_nodes = {"sub", "exp", "sum_1", "div_1"};
  explain_intermediate(r, {&div}, c);
  CHECK(r.op == "graph node div_1");
  // NaN made of an Inf an earlier statement made: both, the Inf's first.
  IntermediateHit exp = hit("tmp4 = tmp3.exp()", "inf", {{"tmp3", "120"}});
  IntermediateHit sub = hit("tmp7 = tmp5 - tmp6", "nan", {{"tmp5", "inf"}, {"tmp6", "inf"}});
  r = RootCause{};
  explain_intermediate(r, {&exp, &sub}, Culprit{});
  REQUIRE(r.intermediates.size() == 2);
  CHECK(r.operation == "exp of a finite value overflows");
  CHECK(r.intermediates[1].operation == "inf - inf");
  CHECK(r.sentence.find("exp of a finite value overflows (12 times); then `tmp7 = tmp5 - tmp6` made NaN") !=
        std::string::npos);
}

TEST_CASE("first_introducer: a parameter holding Inf enters at its first reader only when asked") {
  // Without constant sources, site 3 is the first to make something new:
  // NaN from inputs that held Inf but no NaN. The evidence run's trace from
  // the outputs (search/reach) then follows that Inf to site 2.
  RunTrace t;
  auto add = [&](int site, ProbeStats p) {
    t.sites[site].site = site;
    t.sites[site].tensors.push_back(std::move(p));
  };
  add(1, arg("buf0", st("float32", {4}, 0, 1), st("float32", {4}, 0, 1)));
  ProbeStats w = arg("norm_weight", st("float32", {4}, 0, 1, 0, 1), st("float32", {4}, 0, 1, 0, 1));
  w.origin = "constant";
  add(2, w);
  add(2, arg("buf2", std::nullopt, st("float32", {4}, 0, 1, 0, 2), false));
  add(3, arg("buf2", st("float32", {4}, 0, 1, 0, 2), st("float32", {4}, 0, 1, 0, 2)));
  add(3, arg("buf3", std::nullopt, st("float32", {4}, 0, 1, 3, 0), false));
  CHECK(first_introducer(t, 1, 3) == 3);
  CHECK_FALSE(first_introducer(t, 1, 2).has_value());
  REQUIRE(first_introducer(t, 1, 3, {}, true).has_value());
  CHECK(*first_introducer(t, 1, 3, {}, true) == 2);
}
