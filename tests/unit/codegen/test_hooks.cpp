#include <doctest/doctest.h>

#include "codegen/hooks.hpp"

using namespace aoti_bisect;

namespace {

const char* k_wrapper = R"(
extern "C"  void  cpp_fused_log_0(float* in_out_ptr0,
                       const float* in_ptr0,
                       const int64_t ks0);
extern "C"  void  cpp_fused_tanh_1(float* in_out_ptr0);
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    [[maybe_unused]] auto& w0 = constants_->at(0);
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(buf0, w0, arg0_1, buf1, 1L, 1L));
    cpp_fused_log_0((float*)(buf0.data_ptr()), (const float*)(arg0_1.data_ptr()), s0);
    AtenTensorHandle buf2_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_convolution(buf0, w0, nullptr, a, 2, b, 2, c, 2, 0, d, 2, 1L, &buf2_handle));
    cpp_fused_tanh_1((float*)(buf0.data_ptr()));
}
)";

const char* k_shims = R"(
// comment AOTITorchError not_a_decl(
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta, double alpha);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cpu_convolution(AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_, int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_, int64_t groups, AtenTensorHandle* ret0);
AOTI_TORCH_EXPORT AOTITorchError
aoti_torch_cpu_cat(const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim, AtenTensorHandle* ret0);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cpu_bernoulli(AtenTensorHandle self, AtenGeneratorHandle* generator, AtenTensorHandle* ret0);
)";

}  // namespace

TEST_SUITE_BEGIN("codegen/hooks");

TEST_CASE("kernel_declarations: multi-line extern \"C\" declarations and definitions") {
  auto k = kernel_declarations(k_wrapper);
  REQUIRE(k.count("cpp_fused_log_0"));
  const auto& p = k.at("cpp_fused_log_0");
  REQUIRE(p.size() == 3);
  CHECK(p[0].type == "float*");
  CHECK(p[0].name == "in_out_ptr0");
  CHECK(p[1].type == "const float*");
  CHECK(p[2].type == "const int64_t");
  CHECK(k.at("cpp_fused_tanh_1").size() == 1);
  auto def =
      kernel_declarations("extern \"C\" void cpp_fused_x(const bfloat16* in_ptr0,\n  bfloat16* out_ptr0)\n{\n}\n");
  REQUIRE(def.count("cpp_fused_x"));
  CHECK(def.at("cpp_fused_x")[0].type == "const bfloat16*");
}

TEST_CASE("shim_declarations: one per AOTITorchError function, comments ignored, across lines") {
  auto s = shim_declarations(k_shims);
  CHECK(s.count("not_a_decl") == 0);
  REQUIRE(s.count("aoti_torch_cpu_addmm_out"));
  CHECK(s.at("aoti_torch_cpu_addmm_out").size() == 6);
  REQUIRE(s.count("aoti_torch_cpu_cat"));
  CHECK(s.at("aoti_torch_cpu_cat")[0].type == "const AtenTensorHandle*");
  CHECK(s.at("aoti_torch_cpu_convolution").back().name == "ret0");
}

TEST_CASE("generate_hooks: one hook per function a call site calls, with the probes each argument needs") {
  WrapperInfo w = parse_wrapper(k_wrapper);
  REQUIRE(w.call_sites.size() == 4);
  HookLibrary lib = generate_hooks(w, kernel_declarations(k_wrapper), shim_declarations(k_shims));
  REQUIRE(lib.problems.empty());
  // Call-site functions first, then the two that map pointers to tensors.
  CHECK(lib.hooked == std::vector<std::string>{"aoti_torch_cpu_addmm_out", "cpp_fused_log_0",
                                               "aoti_torch_cpu_convolution", "cpp_fused_tanh_1",
                                               "aoti_torch_get_data_ptr", "aoti_torch_delete_tensor_object"});
  CHECK(lib.site_functions == 4);  // what the console's hooks line counts apart from the other two
  const std::string& src = lib.source;
  // A kernel's pointers are void*, its scalars keep their type; each pointer
  // is shown before and after the launch.
  CHECK(src.find("void aoti_bisect_hook_1(void* a0, const void* a1, const int64_t a2)") != std::string::npos);
  CHECK(src.find("aoti_bisect_pointer(a1, 1, 0);") != std::string::npos);
  CHECK(src.find("aoti_bisect_pointer(a1, 1, 1);") != std::string::npos);
  CHECK(src.find("aoti_bisect_pointer(a2") == std::string::npos);
  // An extern call: handles before and after; an optional input when set;
  // the output it creates only after, and only when the call succeeded.
  CHECK(src.find("aoti_bisect_tensor(a3, 3, 0);") != std::string::npos);
  CHECK(src.find("if (a2 && *a2) aoti_bisect_tensor(*a2, 2, 0);") != std::string::npos);
  CHECK(src.find("if (e == 0 && a13 && *a13) aoti_bisect_tensor(*a13, 13, 1);") != std::string::npos);
  CHECK(src.find("aoti_bisect_enter(\"aoti_torch_cpu_convolution\")") != std::string::npos);
  CHECK(src.find("aoti_bisect_data_ptr(a0, *a1)") != std::string::npos);
  CHECK(src.find("aoti_bisect_forget(a0)") != std::string::npos);
  CHECK(src.find("aoti_bisect_hook_count = 6") != std::string::npos);
  CHECK(src.find("#include <torch") == std::string::npos);  // no LibTorch headers
}

TEST_CASE("generate_hooks: a tensor list is shown element by element; other handle types are declared opaque") {
  WrapperInfo w = parse_wrapper(R"(
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_cat(tensors, 2, 0L, &buf0_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_bernoulli(buf0, nullptr, &buf1_handle));
}
)");
  HookLibrary lib = generate_hooks(w, {}, shim_declarations(k_shims));
  REQUIRE(lib.problems.empty());
  CHECK(lib.source.find(
            "for (int64_t i = 0; a0 && i < (int64_t)a1; ++i) if (a0[i]) aoti_bisect_tensor_at(a0[i], 0, (int)i, 0);") !=
        std::string::npos);
  CHECK(lib.source.find("typedef struct AtenGeneratorHandle_opaque* AtenGeneratorHandle;") != std::string::npos);
}

TEST_CASE("generate_hooks: what cannot be hooked is named, and nothing is generated") {
  WrapperInfo w = parse_wrapper(R"(
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    call_triton_poi_fused_0(buf0, arg0_1, 16L, this->device_idx_, stream, kernels, this->cubin_dir_);
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_unknown_op(buf0));
}
)");
  HookLibrary lib = generate_hooks(w, {}, shim_declarations(k_shims));
  CHECK(lib.source.empty());
  CHECK(lib.hooked.empty());
  REQUIRE(lib.problems.size() == 2);
  CHECK(lib.problems[0].find("Triton") != std::string::npos);
  CHECK(lib.problems[1].find("aoti_torch_cpu_unknown_op: no declaration") != std::string::npos);

  WrapperInfo k = parse_wrapper(
      "extern \"C\" void cpp_fused_q_0(float* out_ptr0, const at::Half ks0);\n"
      "void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {\n"
      "    cpp_fused_q_0((float*)(buf0.data_ptr()), h);\n}\n");
  HookLibrary kl = generate_hooks(
      k, kernel_declarations("extern \"C\" void cpp_fused_q_0(float* out_ptr0, const at::Half ks0);"), {});
  REQUIRE(kl.problems.size() == 1);
  CHECK(kl.problems[0].find("cannot declare") != std::string::npos);
}

TEST_SUITE_END();

TEST_CASE("generate_hooks: custom operators share the proxy executor's one hook, which enters each by its operator") {
  // torch 2.13: a TORCH_LIBRARY operator run through the proxy executor.
  WrapperInfo w = parse_wrapper(R"(
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_proxy_executor_call_function(proxy_executor, 0, 0, std::array<int64_t, 0>{}.data(), 2, std::array<AtenTensorHandle, 2>{buf2, buf4}.data()));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_proxy_executor_call_function(proxy_executor, 1, 0, std::array<int64_t, 0>{}.data(), 2, std::array<AtenTensorHandle, 2>{buf4, buf5}.data()));
}
)");
  name_proxy_calls(w, R"({"nodes": [{"name": "buf3", "node": {"target": "myops::scaled_log"}},
                                     {"name": "buf6", "node": {"target": "myops::clamp_all.out"}}]})");
  const char* shims = R"(
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_proxy_executor_call_function(AOTIProxyExecutorHandle proxy_executor, int extern_node_index, int num_ints, int64_t* flatten_int_args, int num_tensors, AtenTensorHandle* flatten_tensor_args);
)";
  HookLibrary lib = generate_hooks(w, {}, shim_declarations(shims));
  REQUIRE(lib.problems.empty());
  CHECK(lib.hooked == std::vector<std::string>{"aoti_torch_proxy_executor_call_function", "aoti_torch_get_data_ptr",
                                               "aoti_torch_delete_tensor_object"});
  CHECK(lib.source.find(
            R"(static const char* const aoti_bisect_proxy_ops[] = {"myops::scaled_log", "myops::clamp_all.out"};)") !=
        std::string::npos);
  CHECK(
      lib.source.find(
          R"(aoti_bisect_enter((a1 >= 0 && a1 < 2 ? aoti_bisect_proxy_ops[a1] : "aoti_torch_proxy_executor_call_function")))") !=
      std::string::npos);
  CHECK(lib.source.find("aoti_bisect_tensor_at(a5[i], 5, (int)i, 1);") != std::string::npos);
}
