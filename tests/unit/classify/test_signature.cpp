#include <doctest/doctest.h>

#include "classify/signature.hpp"

namespace ab = aoti_bisect;

namespace {

// Two kernels as Inductor writes them in two builds of one model: another
// kernel suffix, other buffer numbers in the comment, same code.
const char* k_kernel_a = R"(#include "/tmp/torchinductor_alice/pi/cpi.h"
extern "C"  void cpp_fused_div_log_3(const float* in_ptr0,
                       float* out_ptr0)
{
    // buf7 from arg4_1
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(1L))
        {
            auto tmp0 = in_ptr0[static_cast<int64_t>(x0)];
            auto tmp1 = std::log(tmp0);
            out_ptr0[static_cast<int64_t>(x0)] = tmp1 / 0.5f;
        }
    }
}
extern "C"  void cpp_fused_relu_4(const float* in_ptr0, float* out_ptr0)
{
    out_ptr0[0] = in_ptr0[0];
}
)";

const char* k_kernel_b = R"(#include "/home/bob/.cache/x/cpi.h"
extern "C"  void cpp_fused_div_log_7(const float* in_ptr0, float* out_ptr0)
{
    // buf12 from arg9_1
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(1L))
        {
            auto tmp0 = in_ptr0[static_cast<int64_t>(x0)];
            auto tmp1 = std::log(tmp0);
            out_ptr0[static_cast<int64_t>(x0)] = tmp1 / 0.5f;
        }
    }
}
)";

}  // namespace

TEST_CASE("kernel_base_name drops Inductor's numbering only") {
  CHECK(ab::kernel_base_name("cpp_fused_div_log_3") == "cpp_fused_div_log");
  CHECK(ab::kernel_base_name("triton_poi_fused_add_0_1") == "triton_poi_fused_add");
  CHECK(ab::kernel_base_name("aoti_torch_cpu_addmm_out") == "aoti_torch_cpu_addmm_out");
  CHECK(ab::kernel_base_name("cpp_fused_convolution_relu_12") == "cpp_fused_convolution_relu");
}

TEST_CASE("kernel_definition finds the braced body of one kernel") {
  std::string a = ab::kernel_definition(k_kernel_a, "cpp_fused_div_log_3");
  CHECK(a.find("std::log") != std::string::npos);
  CHECK(a.find("cpp_fused_relu_4") == std::string::npos);
  CHECK(a.back() == '}');
  CHECK(ab::kernel_definition(k_kernel_a, "cpp_fused_relu_4").find("out_ptr0[0] = in_ptr0[0];") != std::string::npos);
  CHECK(ab::kernel_definition(k_kernel_a, "cpp_fused_div_log").empty());  // a prefix is not the name
  CHECK(ab::kernel_definition(k_kernel_a, "missing").empty());
}

TEST_CASE("normalized sources of one kernel in two builds are equal; another kernel's differ") {
  std::string a = ab::normalize_kernel_source(ab::kernel_definition(k_kernel_a, "cpp_fused_div_log_3"));
  std::string b = ab::normalize_kernel_source(ab::kernel_definition(k_kernel_b, "cpp_fused_div_log_7"));
  CHECK(a == b);
  CHECK(a.find("buf") == std::string::npos);   // the comment is gone
  CHECK(a.find("0.5f") != std::string::npos);  // literals stay
  std::string relu = ab::normalize_kernel_source(ab::kernel_definition(k_kernel_a, "cpp_fused_relu_4"));
  CHECK(relu != a);
  // A changed constant is another kernel.
  std::string changed = ab::kernel_definition(k_kernel_b, "cpp_fused_div_log_7");
  changed.replace(changed.find("0.5f"), 4, "0.25f");
  CHECK(ab::normalize_kernel_source(changed) != b);
}

TEST_CASE("normalize_error_line drops paths, addresses and numbers") {
  CHECK(ab::normalize_error_line("Segmentation fault at 0x7ffd1234 in /home/alice/model/x.so") ==
        ab::normalize_error_line("Segmentation fault at 0x55aa00 in /tmp/y/z.so"));
  CHECK(ab::normalize_error_line("index 100000000 is out of bounds for dimension 0 with size 100") ==
        "index N is out of bounds for dimension N with size N");
  CHECK(ab::normalize_error_line("output 0 has 3 NaN") != ab::normalize_error_line("output 0 has 3 Inf"));
}

TEST_CASE("failure_signature: stable across rebuilds, sensitive to kind, kernel, source and flags") {
  ab::SignatureInput a{"nonfinite",
                       "cpp_fused_div_log_3",
                       ab::kernel_definition(k_kernel_a, "cpp_fused_div_log_3"),
                       {},
                       "output 0 has 16 NaN"};
  ab::SignatureInput b{"nonfinite",
                       "cpp_fused_div_log_7",
                       ab::kernel_definition(k_kernel_b, "cpp_fused_div_log_7"),
                       {},
                       "output 1 has 8 NaN"};
  std::string sa = ab::failure_signature(a);
  CHECK(sa.rfind("nonfinite/cpp_fused_div_log/", 0) == 0);
  CHECK(sa.size() == std::string("nonfinite/cpp_fused_div_log/").size() + 12);
  CHECK(sa == ab::failure_signature(b));

  ab::SignatureInput kind = a;
  kind.kind = "crash";
  CHECK(ab::failure_signature(kind) != sa);
  ab::SignatureInput flags = a;
  flags.flags = {{"CUDA_LAUNCH_BLOCKING", "1"}};
  CHECK(ab::failure_signature(flags) != sa);
  ab::SignatureInput other = a;
  other.kernel_source = ab::kernel_definition(k_kernel_a, "cpp_fused_relu_4");
  CHECK(ab::failure_signature(other) != sa);
  ab::SignatureInput no_source = a;
  no_source.kernel_source.clear();
  CHECK(ab::failure_signature(no_source) != sa);
  CHECK(ab::failure_signature(no_source).rfind("nonfinite/cpp_fused_div_log/", 0) == 0);

  // Nothing isolated: the kind and the normalized first line.
  ab::SignatureInput none{"crash", "", "", {}, "Segmentation fault at 0x7ffd1234"};
  ab::SignatureInput none2{"crash", "", "", {}, "Segmentation fault at 0x1"};
  CHECK(ab::failure_signature(none).rfind("crash/-/", 0) == 0);
  CHECK(ab::failure_signature(none) == ab::failure_signature(none2));
  none2.first_line = "Aborted";
  CHECK(ab::failure_signature(none) != ab::failure_signature(none2));
}
