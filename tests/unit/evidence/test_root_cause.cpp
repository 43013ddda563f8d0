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

}  // namespace

TEST_SUITE_BEGIN("search/root_cause");

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
  CHECK(root_cause(c, Predicate::fault, wild, w, std::nullopt) ==
        "index 100000000 ≥ 100 rows of parameter emb.weight, from graph input 1 (arg8_1)");

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

TEST_CASE("root_cause: a negative running variance, a non-finite parameter, a log of negatives, an overflow") {
  WrapperInfo w = wrapper_with({{0, "bn_running_var", "bn.running_var", "buffer", {32}},
                                {1, "norm_weight", "norm.weight", "parameter", {32}}});
  Culprit bn;
  bn.kernel = "cpp_fused__native_batch_norm_legit_no_training_mean_relu_1";
  bn.kind = "cpp";
  bn.args = {arg("buf3", st("float32", {2, 32, 8, 8}, -4, 4)), arg("bn_running_var", st("float32", {32}, -3, 2)),
             arg("buf5", std::nullopt, st("float32", {2, 32}, 0, 1, 8), false)};
  annotate_origins(bn, w);
  CHECK(root_cause(bn, Predicate::nonfinite, std::nullopt, w, std::nullopt) ==
        "reads buffer bn.running_var, min -3: square root of a negative variance");

  Culprit ln;
  ln.kernel = "cpp_fused_gelu_native_layer_norm_0";
  ln.kind = "cpp";
  ln.args = {arg("buf2", st("float32", {8, 32}, -1, 1)), arg("norm_weight", st("float32", {32}, 0, 1, 0, 1)),
             arg("buf4", std::nullopt, st("float32", {8, 32}, 0, 1, 0, 8), false)};
  annotate_origins(ln, w);
  CHECK(root_cause(ln, Predicate::nonfinite, std::nullopt, w, std::nullopt) ==
        "reads parameter norm.weight, which holds 1 Inf: the non-finite values come from the model's weights");

  Culprit log;
  log.kernel = "cpp_fused_log_2";
  log.kind = "cpp";
  log.args = {arg("buf4", st("float32", {8, 32}, -2.5, 3)), arg("buf5", std::nullopt, st("float32", {8, 32}, 0, 1, 120), false)};
  annotate_origins(log, w);
  CHECK(root_cause(log, Predicate::nonfinite, std::nullopt, w, std::nullopt) ==
        "log of negative values: buf4 holds values down to -2.5");

  Culprit mm;
  mm.kernel = "aoti_torch_cpu_bmm_out";
  mm.kind = "extern";
  mm.args = {arg("buf3", st("float16", {4, 8, 8}, -1, 1), st("float16", {4, 8, 8}, 0, 1, 0, 40)),
             arg("view of buf1", st("float16", {4, 8, 8}, -500, 480)), arg("view of buf2", st("float16", {4, 8, 8}, -3, 3))};
  mm.args[0].initialized = false;
  CHECK(root_cause(mm, Predicate::nonfinite, std::nullopt, w, std::nullopt) ==
        "aoti_torch_cpu_bmm_out overflows float16 (largest finite 65504): its inputs are finite, up to |x| = 500, "
        "and buf3 holds 40 Inf");

  // A fault with a bound in its error line: the index against that bound.
  Culprit nll;
  nll.kernel = "cpp_fused_nll_loss_1";
  nll.kind = "cpp";
  nll.args = {arg("arg8_1", st("int64", {8}, 0, 7))};
  nll.producer = Producer{"arg8_1", std::nullopt, "", "graph input 1 (arg8_1) holds values in [0, 7], outside [0, 5)"};
  CHECK(root_cause(nll, Predicate::fault, std::nullopt, w, 5) ==
        "index 7 outside [0, 5) (the bound the error names), from graph input 1 (arg8_1)");
  // Nothing to say: no sentence.
  Culprit plain;
  plain.kernel = "cpp_fused_tanh_3";
  plain.args = {arg("buf1", st("float32", {4}, -1, 1))};
  CHECK(root_cause(plain, Predicate::nonfinite, std::nullopt, w, std::nullopt).empty());
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
