#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "package_fixture.hpp"
#include "wrapper/wrapper.hpp"

using namespace aoti_bisect;

TEST_SUITE_BEGIN("wrapper/wrapper");

TEST_CASE("parse_wrapper: call sites of a plain torch 2.13 CPU wrapper, in launch order") {
  WrapperInfo w = parse_wrapper(fixture::text("nan_plain.wrapper.cpp"));
  REQUIRE(w.found);
  CHECK_FALSE(w.instrumented);
  CHECK(w.printer_level == 0);
  REQUIRE(w.call_sites.size() == 4);
  CHECK(w.call_sites[0].kernel == "aoti_torch_cpu_addmm_out");
  CHECK(w.call_sites[0].kind == KernelKind::extern_call);
  CHECK(w.call_sites[1].kernel == "cpp_fused_log_relu_sub_0");
  CHECK(w.call_sites[1].kind == KernelKind::cpp);
  CHECK(w.call_sites[2].kernel == "aoti_torch_cpu_addmm_out");
  CHECK(w.call_sites[3].kernel == "cpp_fused_tanh_1");
  CHECK(w.call_sites[3].index == 4);
  CHECK(w.call_sites[0].source_nodes == "[linear]");
}

TEST_CASE("parse_wrapper: a level-1 build has the same call sites and is instrumented") {
  WrapperInfo plain = parse_wrapper(fixture::text("nan_plain.wrapper.cpp"));
  WrapperInfo w = parse_wrapper(fixture::text("nan_level1.wrapper.cpp"));
  CHECK(w.instrumented);
  CHECK(w.printer_level == 1);
  REQUIRE(w.call_sites.size() == plain.call_sites.size());
  for (size_t i = 0; i < w.call_sites.size(); ++i) {
    CHECK(w.call_sites[i].kernel == plain.call_sites[i].kernel);
  }
}

TEST_CASE("parse_wrapper: inputs from the generated input checks") {
  WrapperInfo w = parse_wrapper(fixture::text("nan_plain.wrapper.cpp"));
  REQUIRE(w.num_inputs.has_value());
  CHECK(*w.num_inputs == 1);
  REQUIRE(w.inputs.size() == 1);
  CHECK(w.inputs[0].name == "arg4_1");
  CHECK(w.inputs[0].dtype == "float32");
  REQUIRE(w.inputs[0].shape.size() == 2);
  CHECK(w.inputs[0].shape[0] == 4);
  CHECK(w.inputs[0].shape[1] == 8);
  CHECK(w.inputs[0].strides[0] == 8);
  CHECK(w.inputs[0].device_type == 0);
}

TEST_CASE("parse_wrapper: triton, proxy-executor and dynamic-dim lines") {
  std::string src = R"(
static void check_input_0(AtenTensorHandle* input_handles) {
    int32_t arg0_1_expected_dtype = aoti_torch_dtype_int64();
    if (arg0_1_size[0] < 2) {
    }
    if (arg0_1_size[0] > 64) {
    }
    if (16 != arg0_1_size[1]) {
    }
}
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    auto inputs = steal_from_raw_handles_to_raii_handles(input_handles, 1);
    auto arg0_1 = std::move(inputs[0]);
    // Topologically Sorted Source Nodes: [embedding], Original ATen: [aten.embedding]
    call_triton_poi_fused_embedding_0(buf0, arg0_1, 16L, this->device_idx_, stream, kernels, this->cubin_dir_);
    aoti_torch_save_tensor_handle(buf0, "buf0", "after_launch", "triton_poi_fused_embedding_0");
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(buf1, buf0, w));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_proxy_executor_call_function(proxy_executor, 0, 1, int_args, 2, tensor_args));
    kernels.triton_per_fused_sum_1(buf1, stream);
}
)";
  WrapperInfo w = parse_wrapper(src);
  REQUIRE(w.call_sites.size() == 4);
  CHECK(w.call_sites[0].kernel == "triton_poi_fused_embedding_0");
  CHECK(w.call_sites[0].kind == KernelKind::triton);
  CHECK(w.call_sites[0].source_nodes == "[embedding]");
  CHECK(w.call_sites[1].kernel == "aoti_torch_cuda_mm_out");
  CHECK(w.call_sites[2].kernel == "aoti_torch_proxy_executor_call_function");
  CHECK(w.call_sites[3].kernel == "triton_per_fused_sum_1");
  CHECK(w.instrumented);
  REQUIRE(w.inputs.size() == 1);
  CHECK(w.inputs[0].dtype == "int64");
  REQUIRE(w.inputs[0].shape.size() == 2);
  CHECK_FALSE(w.inputs[0].shape[0].has_value());
  CHECK(w.inputs[0].shape[1] == 16);
  CHECK(w.inputs[0].dim_min[0] == 2);
  CHECK(w.inputs[0].dim_max[0] == 64);
  CHECK_FALSE(w.inputs[0].dim_min[1].has_value());
}

TEST_CASE("parse_wrapper: buffers an extern call creates and returns") {
  std::string src = R"(
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_convolution(buf0, buf1, &temporary_reference(buf2.get()), std::array<int64_t, 2>{1L, 1L}.cbegin(), 2, 0, 1L, &buf3_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(buf4, bias, buf3, w, 1L, 1L));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu__scaled_dot_product_flash_attention(q, k, v, 0.0, 0, 0, &buf5_handle, &buf6_handle));
}
)";
  WrapperInfo w = parse_wrapper(src);
  REQUIRE(w.call_sites.size() == 3);
  CHECK(w.call_sites[0].returns == std::vector<std::string>{"buf3"});
  CHECK(w.call_sites[1].returns.empty());
  CHECK(w.call_sites[2].returns == std::vector<std::string>{"buf5", "buf6"});
  CHECK(returned_buffers(w.call_sites) == std::map<std::string, int>{{"buf3", 1}, {"buf5", 3}, {"buf6", 3}});
}

TEST_CASE("parse_wrapper: empty source finds nothing") {
  WrapperInfo w = parse_wrapper("");
  CHECK_FALSE(w.found);
  CHECK(w.call_sites.empty());
  CHECK_FALSE(w.num_inputs.has_value());
}

TEST_SUITE_END();

TEST_CASE("parse_wrapper: call sites inside torch.cond branches are not probed at printer level 1") {
  WrapperInfo w = parse_wrapper(fixture::text("cond_level1.wrapper.cpp"));
  REQUIRE(w.printer_level == 1);
  std::vector<std::string> kernels;
  std::vector<bool> probed;
  for (const auto& s : w.call_sites) {
    kernels.push_back(s.kernel);
    probed.push_back(s.probed);
  }
  CHECK(kernels == std::vector<std::string>{"cpp_fused_0", "aoti_torch_cpu_addmm_out", "cpp_fused_gt_relu_sum_1",
                                            "aoti_torch_cpu_addmm_out", "cpp_fused_gt_log_mul_relu_sub_sum_2",
                                            "aoti_torch_cpu_addmm_out", "cpp_fused_add_gt_relu_sum_tanh_3",
                                            "cpp_fused_4", "aoti_torch_cpu_addmm_out", "cpp_fused_sigmoid_5"});
  CHECK(probed == std::vector<bool>{true, true, true, false, false, false, false, true, true, true});
}

TEST_CASE("parse_wrapper: every call site of a level-1 build outside control flow is probed") {
  WrapperInfo w = parse_wrapper(fixture::text("nan_level1.wrapper.cpp"));
  REQUIRE(w.printer_level == 1);
  REQUIRE_FALSE(w.call_sites.empty());
  for (const auto& s : w.call_sites) {
    CAPTURE(s.kernel);
    CHECK(s.probed);
  }
  for (const auto& s : parse_wrapper(fixture::text("nan_plain.wrapper.cpp")).call_sites) {
    CHECK_FALSE(s.probed);
  }
}

TEST_CASE("returned_buffers: a buffer an extern call creates keeps its creator when moved to a new name") {
  std::string src = R"(
void AOTInductorModel::run_impl(
    AtenTensorHandle* input_handles) {
    AtenTensorHandle buf7_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_convolution(buf4, buf5, nullptr, 1L, &buf7_handle));
    RAIIAtenTensorHandle buf7(buf7_handle);
    auto buf8 = std::move(buf7);  // reuse
    auto buf9 = std::move(buf8);  // reuse
    auto buf2 = std::move(buf1);  // reuse
} // AOTInductorModel::run_impl
)";
  WrapperInfo w = parse_wrapper(src);
  REQUIRE(w.call_sites.size() == 1);
  CHECK(w.moves ==
        std::vector<std::pair<std::string, std::string>>{{"buf8", "buf7"}, {"buf9", "buf8"}, {"buf2", "buf1"}});
  CHECK(returned_buffers(w) == std::map<std::string, int>{{"buf7", 1}, {"buf8", 1}, {"buf9", 1}});
}

TEST_CASE("parse_wrapper: a reinterpret_tensor_wrapper view of a dead buffer is a reuse, not a value move") {
  // torch 2.13, BERT's layer: addmm writes buf36; gelu runs in place on a
  // view of it under a new name. What gelu reads is buf36's value.
  std::string src = R"(
void AOTInductorModel::run_impl(
    AtenTensorHandle* input_handles) {
    AtenTensorHandle buf7_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_convolution(buf4, buf5, nullptr, 1L, &buf7_handle));
    RAIIAtenTensorHandle buf7(buf7_handle);
    auto buf8 = std::move(buf7);  // reuse
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(buf36, bias, buf8, weight, 1L, 1L));
    auto buf37 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf36, 3, int_array_17, int_array_18, 0L)); buf36.reset();  // reuse
    cpp_fused_gelu_view_3((float*)(buf37.data_ptr()));
    auto buf40 = reinterpret_tensor_wrapper(buf8, 2, int_array_1, int_array_2, 0L);
    auto tmp_tensor_handle_0 = reinterpret_tensor_wrapper(buf37, 2, int_array_1, int_array_2, 0L);
} // AOTInductorModel::run_impl
)";
  WrapperInfo w = parse_wrapper(src);
  CHECK(w.moves ==
        std::vector<std::pair<std::string, std::string>>{{"buf8", "buf7"}, {"buf37", "buf36"}, {"buf40", "buf8"}});
  CHECK(w.value_moves.empty());
  // Through reuse: what an in-place kernel reads under buf8 is the call's output.
  CHECK(returned_buffers(w) == std::map<std::string, int>{{"buf7", 1}, {"buf8", 1}, {"buf40", 1}});
  // The names whose graph node the call computed: buf7 alone (buf8 holds the
  // next in-place kernel's node once it ran).
  CHECK(returned_buffers(w, false) == std::map<std::string, int>{{"buf7", 1}});
}

TEST_CASE("parse_wrapper: an extern call the printer labels with its ATen op (at::_ops::OP::call) is probed") {
  // Inductor's level-1 printer on CPU scaled_dot_product_attention (torch 2.13).
  std::string src = R"(
void AOTInductorModel::run_impl(
    AtenTensorHandle* input_handles) {
    aoti_torch_save_tensor_handle(buf11, "buf11", "before_launch", "at::_ops::_scaled_dot_product_flash_attention_for_cpu::call");
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(buf11, buf12, buf13, 0.0, 0, &temporary_reference(buf14.get()), &var_0, &buf16_handle, &buf17_handle));
    aoti_torch_save_tensor_handle(buf11, "buf11", "after_launch", "at::_ops::_scaled_dot_product_flash_attention_for_cpu::call");
    aoti_torch_save_tensor_handle(buf16, "buf16", "before_launch", "at::_ops::addmm::call");
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mm_out(buf18, buf16, w0));
} // AOTInductorModel::run_impl
)";
  WrapperInfo w = parse_wrapper(src);
  REQUIRE(w.call_sites.size() == 2);
  CHECK(w.call_sites[0].kernel == "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu");
  CHECK(w.call_sites[0].probed);
  CHECK_FALSE(w.call_sites[1].probed);  // another op's label
}

TEST_CASE("parse_wrapper: what each call-site argument names, and the constants' names") {
  WrapperInfo w = parse_wrapper(fixture::text("nan_plain.wrapper.cpp"));
  REQUIRE(w.call_sites.size() == 4);
  // aoti_torch_cpu_addmm_out(buf0, l1_bias, arg4_1, wrap(reinterpret_tensor_wrapper(l1_weight, ...)), 1L, 1L)
  CHECK(w.call_sites[0].args == std::vector<std::string>{"buf0", "l1_bias", "arg4_1", "view of l1_weight", "", ""});
  // cpp_fused_log_relu_sub_0((float*)(buf1.data_ptr()), (float*)(buf2.data_ptr()))
  CHECK(w.call_sites[1].args == std::vector<std::string>{"buf1", "buf2"});
  CHECK(w.call_sites[3].args == std::vector<std::string>{"buf4"});
  CHECK(w.constants.size() >= 3);
  CHECK(w.constants[0] == "l1_weight");
  CHECK(w.constants[2] == "l2_weight");
  CHECK(base_tensor_name("view of l1_weight") == "l1_weight");
  CHECK(base_tensor_name("buf3") == "buf3");
}

TEST_CASE("parse_wrapper: an extern call's created output and a call spread over lines") {
  std::string src = R"(
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    AtenTensorHandle buf3_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_convolution(arg0_1, w0,
        nullptr, int_array_0, 2, int_array_1, 2, int_array_2, 2, 0, int_array_3, 2, 1L, &buf3_handle));
}
)";
  WrapperInfo w = parse_wrapper(src);
  REQUIRE(w.call_sites.size() == 1);
  const auto& args = w.call_sites[0].args;
  REQUIRE(args.size() == 14);
  CHECK(args[0] == "arg0_1");
  CHECK(args[1] == "w0");
  CHECK(args[2] == "");
  CHECK(args[13] == "buf3");
  CHECK(w.call_sites[0].returns == std::vector<std::string>{"buf3"});
}

TEST_CASE("graph input and buffer names, also inside subgraphs") {
  CHECK(is_graph_input_name("arg4_1"));
  CHECK(is_graph_input_name("true_graph_0_arg0_1"));
  CHECK_FALSE(is_graph_input_name("arg4"));
  CHECK_FALSE(is_graph_input_name("buf3"));
  CHECK_FALSE(is_graph_input_name("target_arg4_1x"));
  CHECK(is_tensor_variable_name("buf3"));
  CHECK(is_tensor_variable_name("false_graph_0_buf12"));
  CHECK(is_tensor_variable_name("arg0_1"));
  CHECK_FALSE(is_tensor_variable_name("l1_weight"));
  CHECK_FALSE(is_tensor_variable_name("buffer"));
  CHECK_FALSE(is_tensor_variable_name("mybuf3"));
  CHECK_FALSE(is_tensor_variable_name("view of true_graph_0_arg1_1"));
}

#include "package_fixture.hpp"
#include "wrapper/wrapper_text.hpp"

TEST_CASE("wrapper_text: comments dropped, strings kept; the closing bracket skips strings") {
  using namespace aoti_bisect::wrapper_text;
  CHECK(without_comments("a(x); // c\nb(\"//y\");") == "a(x); \nb(\"//y\");");
  CHECK(without_comments("int/*c*/x;") == "int x;");
  CHECK(without_comments("f(/*a\nb*/1)") == "f(\n1)");
  std::string call = "k(a, \")\", g(b), {1, 2});";
  CHECK(closing_bracket(call, 1) == call.size() - 2);
  CHECK(closing_bracket(call, call.find('{')) == call.find('}'));
  CHECK(closing_bracket("k(a", 1) == std::string::npos);
}

TEST_CASE("parse_wrapper: what each output is released from") {
  SUBCASE("a buffer") {
    WrapperInfo w = parse_wrapper(fixture::text("nan_plain.wrapper.cpp"));
    REQUIRE(w.outputs.size() == 1);
    CHECK(w.outputs[0] == "buf4");
  }
  SUBCASE("a view of a buffer, a graph input, and text that names nothing plain") {
    WrapperInfo w = parse_wrapper(
        "void AOTInductorModel::run_impl(\n"
        "    AtenTensorHandle* input_handles) {\n"
        "    auto var_0 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf5, 3, int_array_12, "
        "int_array_13, 0L));\n"
        "    output_handles[0] = var_0.release();\n"
        "    output_handles[2] = arg3_1.release();\n"
        "    output_handles[1] = wrap_with_raii_handle_if_needed(x).release();\n"
        "} // AOTInductorModel::run_impl\n");
    REQUIRE(w.outputs.size() == 3);
    CHECK(w.outputs[0] == "buf5");
    CHECK(w.outputs[1].empty());
    CHECK(w.outputs[2] == "arg3_1");
  }
}

TEST_CASE("parse_wrapper: CPP GEMM template kernels, declared over two lines, are call sites") {
  WrapperInfo w = parse_wrapper(
      "extern \"C\" \nvoid cpp_fused_addmm_log_0(const float* X, const float* W, const float* inp, float* Y);\n"
      "extern \"C\"  void  cpp_fused_mean_1(float* in_out_ptr0, const float* in_ptr0);\n"
      "void AOTInductorModel::run_impl(\n"
      "    AtenTensorHandle* input_handles) {\n"
      "    cpp_fused_addmm_log_0((const float*)(arg7_1.data_ptr()), (const float*)(constant6.data_ptr()), "
      "(const float*)(fc0_bias.data_ptr()), (float*)(buf1.data_ptr()));\n"
      "    cpp_fused_mean_1((float*)(buf2.data_ptr()), (const float*)(buf1.data_ptr()));\n"
      "    output_handles[0] = buf2.release();\n"
      "} // AOTInductorModel::run_impl\n");
  REQUIRE(w.call_sites.size() == 2);
  CHECK(w.call_sites[0].kernel == "cpp_fused_addmm_log_0");
  CHECK(w.call_sites[0].kind == KernelKind::cpp);
  CHECK(w.call_sites[0].args == std::vector<std::string>{"arg7_1", "constant6", "fc0_bias", "buf1"});
  CHECK(w.call_sites[1].kernel == "cpp_fused_mean_1");
}

TEST_CASE("name_proxy_calls: a custom operator's call site is its operator, its tensors named by position") {
  WrapperInfo w = parse_wrapper(R"(
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    AtenTensorHandle buf4_handle;  // output buffer
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_new_uninitialized_tensor(&buf4_handle));
    RAIIAtenTensorHandle buf4(buf4_handle);
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_proxy_executor_call_function(proxy_executor, 0, 0, std::array<int64_t, 0>{}.data(), 2, std::array<AtenTensorHandle, 2>{buf2, buf4}.data()));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_proxy_executor_call_function(proxy_executor, 7, 0, std::array<int64_t, 0>{}.data(), 1, std::array<AtenTensorHandle, 1>{buf4}.data()));
}
)");
  REQUIRE(w.call_sites.size() == 2);
  CHECK(w.call_sites[0].kernel == "aoti_torch_proxy_executor_call_function");
  name_proxy_calls(w, R"({"nodes": [{"name": "buf3", "node": {"target": "myops::scaled_log", "inputs": []}}]})");
  CHECK(w.proxy_ops == std::vector<std::string>{"myops::scaled_log"});
  CHECK(w.call_sites[0].kernel == "myops::scaled_log");
  CHECK(w.call_sites[0].extern_node == 0);
  CHECK(called_symbol(w.call_sites[0]) == "aoti_torch_proxy_executor_call_function");
  REQUIRE(w.call_sites[0].elements.size() == 6);
  CHECK(w.call_sites[0].elements[5] == std::vector<std::string>{"buf2", "buf4"});
  CHECK(w.call_sites[0].elements[3].empty());
  // A node the JSON does not hold keeps the shim's name.
  CHECK(w.call_sites[1].extern_node == 7);
  CHECK(w.call_sites[1].kernel == "aoti_torch_proxy_executor_call_function");
  // A Python custom operator (torch.library.custom_op) is marked so in its node's metadata (torch 2.13).
  WrapperInfo py = w;
  name_proxy_calls(py, R"({"nodes": [{"name": "buf0", "node": {"target": "pyops::shift", "inputs": [], )"
                       R"("outputs": [], "metadata": {"torch_library_custom_op": "1"}}}]})");
  CHECK(py.python_ops == std::vector<std::string>{"pyops::shift"});
  CHECK(w.python_ops.empty());
  // Malformed JSON names nothing.
  WrapperInfo copy = w;
  name_proxy_calls(copy, "{not json");
  CHECK(copy.call_sites[0].kernel == "myops::scaled_log");
}

TEST_CASE("parse_wrapper: torch 2.15's torch.cond (false branch first, an int64 predicate), each site in its branch") {
  // A real 2.15.0 wrapper (cond_nan_true): `if (buf2_scalar == 0) { // subgraph: false_graph_0 ... } else { ...
  // true_graph_0 }`; 2.13 wrote `if (buf2_scalar)` with the true branch first.
  WrapperInfo w = parse_wrapper(fixture::text("torch215_cond_nan_true.wrapper.cpp"));
  REQUIRE(w.call_sites.size() == 9);
  std::vector<std::string> branches;
  for (const auto& s : w.call_sites) {
    branches.push_back(s.branch);
  }
  CHECK(branches ==
        std::vector<std::string>{"", "", "false_graph_0", "false_graph_0", "true_graph_0", "true_graph_0", "", "", ""});
  CHECK(w.call_sites[5].kernel == "cpp_fused_gt_log_relu_sub_2");
  CHECK(w.call_sites[2].kernel == "aoti_torch_cpu_addmm_out");
  CHECK(w.call_sites[2].args[0] == "false_graph_0_buf0");
}

TEST_CASE("parse_wrapper: torch 2.15's kernel profiling declares `aoti_torch_cpu_addmm_out_inputs_`: not a call site") {
  // A real 2.15.0 wrapper (provenance_nan, cpp.enable_kernel_profile): before each extern call,
  // `std::vector<C10IValueHandle> aoti_torch_cpu_addmm_out_inputs_({...});` for its record function.
  WrapperInfo w = parse_wrapper(fixture::text("torch215_provenance_profile.wrapper.cpp"));
  std::vector<std::string> kernels;
  for (const auto& s : w.call_sites) {
    kernels.push_back(s.kernel);
  }
  CHECK(kernels == std::vector<std::string>{"aoti_torch_cpu_addmm_out", "cpp_fused_gelu_0", "aoti_torch_cpu_addmm_out",
                                            "cpp_fused_log_tanh_1", "aoti_torch_cpu_addmm_out",
                                            "cpp_fused__softmax_2"});
  // 2.15 puts no KernelContextGuard around a cpp kernel's launch: its stacks come from kernel_information.json.
  attach_kernel_information(w, fixture::text("torch215_provenance.kernel_information.json"));
  REQUIRE(!w.call_sites[3].python_stacks.empty());
  CHECK(w.call_sites[3].python_stacks.back().find("return torch.log(self.lin(x))  # the bad op") != std::string::npos);
}
