// The culprit kernel with every intermediate probed (lib/repro/intermediates.hpp):
// which statements get a probe, with which operands, loop variables, lanes
// and store. The end-to-end tests (tests/e2e/test_cause.cpp) build and run
// it on real packages.

#include <string>

#include <doctest/doctest.h>

#include "repro/intermediates.hpp"

using namespace aoti_bisect;

namespace {

// torch 2.13's layer_norm kernel of the nan_midway example: a vectorized
// reduction (an accumulator updated from itself), loads, a scalar tail of
// the normalization (`1 / std::sqrt(tmp8)`), vector stores.
const std::string k_layer_norm = R"(#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  cpp_fused_native_layer_norm_0(float* in_out_ptr0,
                       const float* in_ptr0,
                       const float* in_ptr1,
                       const float* in_ptr2,
                       float* out_ptr1,
                       float* out_ptr2)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr0 = in_out_ptr0;
    {
        #pragma GCC ivdep
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(8L); x0+=static_cast<int64_t>(1L))
        {
            {
                float tmp_acc0 = 0;
                at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            tmp_acc0_vec = tmp_acc0_vec + tmp0;
                        }
                    }
                }
                tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                in_out_ptr0[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
            }
        }
    }
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(8L); x0+=static_cast<int64_t>(16L))
        {
            {
                if(C10_LIKELY(x0 >= static_cast<int64_t>(0L) && x0 < static_cast<int64_t>(8L)))
                {
                    auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(8L));
                    auto tmp1 = static_cast<float>(16.0);
                    auto tmp2 = at::vec::Vectorized<float>(tmp1);
                    auto tmp3 = tmp0 / tmp2;
                    tmp3.store(in_out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(8L));
                }
            }
        }
    }
    {
        #pragma GCC ivdep
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(8L); x0+=static_cast<int64_t>(1L))
        {
            {
                float tmp_acc0 = 0;
                at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp1 = in_out_ptr0[static_cast<int64_t>(x0)];
                            auto tmp2 = at::vec::Vectorized<float>(tmp1);
                            auto tmp3 = tmp0 - tmp2;
                            auto tmp4 = tmp3 * tmp3;
                            tmp_acc0_vec = tmp_acc0_vec + tmp4;
                        }
                    }
                }
                tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                out_ptr1[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
            }
        }
    }
    {
        #pragma GCC ivdep
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(8L); x0+=static_cast<int64_t>(1L))
        {
            for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
            {
                {
                    if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                    {
                        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                        auto tmp1 = in_out_ptr0[static_cast<int64_t>(x0)];
                        auto tmp4 = out_ptr1[static_cast<int64_t>(x0)];
                        auto tmp12 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                        auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr2 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                        auto tmp2 = at::vec::Vectorized<float>(tmp1);
                        auto tmp3 = tmp0 - tmp2;
                        auto tmp5 = static_cast<float>(16.0);
                        auto tmp6 = tmp4 / tmp5;
                        auto tmp7 = static_cast<float>(1e-05);
                        auto tmp8 = float(tmp6 + tmp7);
                        auto tmp9 = 1 / std::sqrt(tmp8);
                        auto tmp10 = at::vec::Vectorized<float>(tmp9);
                        auto tmp11 = tmp3 * tmp10;
                        auto tmp13 = tmp11 * tmp12;
                        auto tmp15 = tmp13 + tmp14;
                        tmp15.store(out_ptr2 + static_cast<int64_t>(x1 + 16L*x0));
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}

)";

const TracedStatement* statement(const TracedKernel& tk, const std::string& target, int nth = 0) {
  for (const auto& s : tk.statements) {
    if (s.target == target && nth-- == 0) {
      return &s;
    }
  }
  return nullptr;
}

}  // namespace

TEST_SUITE_BEGIN("repro/intermediates");

TEST_CASE("trace_intermediates: a probe after each computed intermediate, none after loads") {
  TracedKernel tk = trace_intermediates(k_layer_norm, "cpp_fused_native_layer_norm_0", "// PROBES\n");
  REQUIRE(tk.problem.empty());
  // The probe header and the statement table come before the kernel, after its includes.
  size_t include = tk.source.find("#include <torch/csrc/inductor/cpp_prefix.h>");
  size_t probes = tk.source.find("// PROBES");
  size_t table = tk.source.find("const Statement k_statements[] = {");
  size_t kernel = tk.source.find("extern \"C\"  void  cpp_fused_native_layer_norm_0(");
  REQUIRE(include != std::string::npos);
  CHECK(include < probes);
  CHECK(probes < table);
  CHECK(table < kernel);
  CHECK(tk.source.find("Hit g_hits[" + std::to_string(tk.statements.size()) + "][2];") != std::string::npos);

  // Loads are the kernel's inputs: not probed.
  for (const auto& s : tk.statements) {
    CHECK_MESSAGE(s.text.find("loadu") == std::string::npos, s.text);
    CHECK_MESSAGE(s.text.find("_ptr") == std::string::npos, s.text);
  }
  // The normalization's scalar chain, in the kernel's own order.
  const TracedStatement* div = statement(tk, "tmp6");
  const TracedStatement* rsqrt = statement(tk, "tmp9");
  REQUIRE(div != nullptr);
  REQUIRE(rsqrt != nullptr);
  CHECK(div->id < rsqrt->id);
  CHECK(div->text == "tmp6 = tmp4 / tmp5");
  CHECK(div->operands == std::vector<std::string>{"tmp4", "tmp5"});
  CHECK(rsqrt->text == "tmp9 = 1 / std::sqrt(tmp8)");
  CHECK(rsqrt->operands == std::vector<std::string>{"tmp8"});
  CHECK(rsqrt->loops == std::vector<std::string>{"x0", "x1"});
  CHECK(rsqrt->vector_loop == 1);  // x1 steps by 16: a vector's lanes run along it
  CHECK(tk.source.find("aoti_trace::probe(" + std::to_string(rsqrt->id) +
                       ", aoti_trace::loop(std::min<int64_t>(static_cast<int64_t>(16), "
                       "static_cast<int64_t>(static_cast<int64_t>(16L)) - static_cast<int64_t>(x1)), x0, x1), "
                       "aoti_trace::store(out_ptr2 + static_cast<int64_t>(x1 + 16L*x0), true), tmp9, tmp8);") !=
        std::string::npos);

  // An accumulator updated from itself: its value from before the statement is the operand.
  const TracedStatement* acc = statement(tk, "tmp_acc0_vec");
  REQUIRE(acc != nullptr);
  CHECK(acc->text == "tmp_acc0_vec = tmp_acc0_vec + tmp0");
  std::string old = "aoti_trace_old_" + std::to_string(acc->id);
  size_t copy = tk.source.find("auto " + old + " = tmp_acc0_vec;");
  size_t update = tk.source.find("tmp_acc0_vec = tmp_acc0_vec + tmp0;", copy);
  size_t probe = tk.source.find("tmp_acc0_vec, " + old + ", tmp0);", update);
  CHECK(copy != std::string::npos);
  CHECK(update != std::string::npos);
  CHECK(probe != std::string::npos);
  // The reduced value is stored by a scalar store (no lanes); its address needs only x0.
  const TracedStatement* reduced = statement(tk, "tmp_acc0");
  REQUIRE(reduced != nullptr);
  CHECK(reduced->stored);
  CHECK(reduced->vector_loop == -1);
  CHECK(tk.source.find("aoti_trace::store(in_out_ptr0 + (static_cast<int64_t>(x0)), false), tmp_acc0") !=
        std::string::npos);
  // Starting values (`float tmp_acc0 = 0;`) are not computed: no probe.
  for (const auto& s : tk.statements) {
    CHECK(s.text.find("= 0") != s.text.size() - 3);
  }
}

TEST_CASE("trace_intermediates: what it cannot trace, it says") {
  CHECK(trace_intermediates(k_layer_norm, "cpp_fused_nope", "").problem ==
        "the definition of cpp_fused_nope was not found in the kernel source");
  std::string copy =
      "#include <x.h>\nextern \"C\" void cpp_fused_copy_0(const float* in_ptr0, float* out_ptr0)\n{\n"
      "    out_ptr0[0] = in_ptr0[0];\n}\n";
  CHECK(trace_intermediates(copy, "cpp_fused_copy_0", "").problem.find("computes no intermediate") !=
        std::string::npos);
}

TEST_CASE("trace_intermediates: a masked tail, a lambda, an if without braces") {
  std::string k = R"(#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  cpp_fused_div_0(const float* in_ptr0, float* out_ptr0, const int64_t ks0)
{
    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(16L))
    {
        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(std::min(static_cast<int64_t>(16L), ks0 - x0)));
        auto tmp1 = [&]
        {
            auto tmp2 = tmp0 * tmp0;
            return tmp2;
        }
        ;
        auto tmp3 = tmp0 / tmp1();
        if(x0 > 3)
            tmp3 = tmp3 + tmp0;
        tmp3.store(out_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(std::min(static_cast<int64_t>(16L), ks0 - x0)));
    }
}
)";
  TracedKernel tk = trace_intermediates(k, "cpp_fused_div_0", "");
  REQUIRE(tk.problem.empty());
  REQUIRE(tk.statements.size() == 2);  // tmp2 (inside the lambda) and tmp3; not the lambda, not the unbraced update
  CHECK(tk.statements[0].text == "tmp2 = tmp0 * tmp0");
  CHECK(tk.statements[1].text == "tmp3 = tmp0 / tmp1()");
  CHECK(tk.statements[1].operands ==
        std::vector<std::string>{"tmp0", "tmp1"});  // the lambda: an operand of unknown value
  // The tail: lanes past the loop's end are not elements.
  CHECK(tk.source.find("aoti_trace::loop(std::min<int64_t>(static_cast<int64_t>(16), "
                       "static_cast<int64_t>(static_cast<int64_t>(ks0)) - static_cast<int64_t>(x0)), x0)") !=
        std::string::npos);
  // The store follows from tmp3 and its address needs only x0.
  CHECK(tk.statements[1].stored);
  // The unbraced `tmp3 = tmp3 + tmp0;` keeps its place as the if's one statement.
  CHECK(tk.source.find("if(x0 > 3)\n            tmp3 = tmp3 + tmp0;\n") != std::string::npos);
}

TEST_SUITE_END();
