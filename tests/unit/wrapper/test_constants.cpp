#include <algorithm>

#include <doctest/doctest.h>

#include "package/facts.hpp"
#include "package_fixture.hpp"
#include "wrapper/constants.hpp"
#include "wrapper/wrapper.hpp"

using namespace aoti_bisect;

TEST_SUITE_BEGIN("wrapper/constants");

TEST_CASE("parse_constants: names, original module paths, kinds and shapes from constants_info_") {
  auto constants = parse_constants(fixture::text("nan_level1.wrapper.cpp"));
  REQUIRE(constants.size() >= 3);
  CHECK(constants[0].index == 0);
  CHECK(constants[0].name == "l1_weight");
  CHECK(constants[0].fqn == "l1.weight");
  CHECK(constants[0].kind == "parameter");
  CHECK(constants[0].shape == std::vector<int64_t>{16, 8});
  CHECK(constants[1].name == "l1_bias");
  CHECK(constants[1].fqn == "l1.bias");
  CHECK(constants[1].shape == std::vector<int64_t>{16});
  // parse_wrapper carries them.
  auto w = parse_wrapper(fixture::text("nan_level1.wrapper.cpp"));
  REQUIRE(w.constant_info.size() == constants.size());
  CHECK(w.constant_info[2].fqn == "l2.weight");
}

TEST_CASE("parse_constants: buffers, views and what a report calls them") {
  std::string src =
      "    constants_info_[0].name = \"bn_running_var\";\n"
      "    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);\n"
      "    constants_info_[0].shape = {32};\n"
      "    constants_info_[0].original_fqn = \"bn.running_var\";\n"
      "    constants_info_[1].name = \"_tensor_constant0\";\n"
      "    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::TensorConstant);\n"
      "    constants_info_[x].name = \"broken\";\n"
      "    constants_info_[2].original_fqn = \"no.name\";\n";
  auto constants = parse_constants(src);
  REQUIRE(constants.size() == 2);  // index 2 has no name; "x" is no index
  CHECK(describe_constant(constants[0]) == "buffer bn.running_var");
  CHECK(describe_constant(constants[1]) == "tensor constant _tensor_constant0");
  REQUIRE(find_constant(constants, "view of bn_running_var") != nullptr);
  CHECK(find_constant(constants, "view of bn_running_var")->fqn == "bn.running_var");
  CHECK(find_constant(constants, "buf3") == nullptr);
}

TEST_CASE("model facts: the buffers a forward may update, by original name; what the model takes, in words") {
  WrapperInfo w;
  w.constant_info = parse_constants(
      "    constants_info_[0].name = \"bn_running_var\";\n"
      "    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);\n"
      "    constants_info_[0].original_fqn = \"bn.running_var\";\n"
      "    constants_info_[1].name = \"fc_weight\";\n"
      "    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);\n"
      "    constants_info_[2].name = \"cache\";\n"
      "    constants_info_[2].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);\n"
      "    constants_info_[3].name = \"folded\";\n"
      "    constants_info_[3].from_folded = true;\n"
      "    constants_info_[3].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);\n");
  ModelFacts f = model_facts_of(w);
  CHECK(f.buffers == std::vector<std::string>{"bn.running_var", "cache"});  // no parameter, nothing folded
  CHECK(model_facts_from_json(to_json(f)).buffers == f.buffers);

  ModelFacts in;
  CHECK(inputs_taken_text(in).empty());
  InputSpec a;
  a.name = "arg8_1";
  a.dtype = "float32";
  a.shape = {8, std::nullopt};
  InputSpec b;
  b.index = 1;
  in.inputs = {a, b};
  CHECK(inputs_taken_text(in) == ": arg8_1 float32 [8, ?]; input 1");
}

TEST_CASE("parse_wrapper: buffer moves, with and without auto (a torch.cond branch's result)") {
  std::string src =
      "void AOTInductorModel::run_impl(\n"
      "    AtenTensorHandle* input_handles) {\n"
      "    auto buf5 = std::move(buf4);  // reuse\n"
      "    if (buf2_scalar) {\n"
      "        buf7 = std::move(true_graph_0_buf0);\n"
      "    } else {\n"
      "        buf7 = std::move(false_graph_0_buf0);\n"
      "    }\n"
      "    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_assign_tensors_out(emb_weight, &true_graph_0_arg1_1_handle));\n"
      "    auto x = std::move(something_else);\n"
      "    foo = bar(std::move(buf9));\n"
      "} // AOTInductorModel::run_impl\n";
  auto w = parse_wrapper(src);
  using Move = std::pair<std::string, std::string>;
  CHECK(w.moves == std::vector<Move>{{"buf5", "buf4"},
                                     {"buf7", "true_graph_0_buf0"},
                                     {"buf7", "false_graph_0_buf0"},
                                     {"true_graph_0_arg1_1", "emb_weight"}});
  // A dead buffer's memory reused under a new name carries no value on.
  CHECK(w.value_moves == std::vector<Move>{{"buf7", "true_graph_0_buf0"},
                                           {"buf7", "false_graph_0_buf0"},
                                           {"true_graph_0_arg1_1", "emb_weight"}});
}

TEST_CASE("parse_wrapper: a template's comma (std::array<int64_t, 2>) does not split an extern call's arguments") {
  std::string src =
      "void AOTInductorModel::run_impl(\n"
      "    AtenTensorHandle* input_handles) {\n"
      "    AtenTensorHandle buf6_handle;\n"
      "    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_convolution(buf3, buf4, &temporary_reference(buf5.get()), "
      "std::array<int64_t, 2>{1L, 1L}.cbegin(), 2, std::array<int64_t, 2>{1L, 1L}.cbegin(), 2, "
      "std::array<int64_t, 2>{1L, 1L}.cbegin(), 2, 0, std::array<int64_t, 2>{0L, 0L}.cbegin(), 2, 1L, "
      "&buf6_handle));\n"
      "} // AOTInductorModel::run_impl\n";
  auto w = parse_wrapper(src);
  REQUIRE(w.call_sites.size() == 1);
  const auto& args = w.call_sites[0].args;
  REQUIRE(args.size() == 14);  // the shim's parameters: 3 tensors, 4 (pointer, length) pairs, 2 ints, the output
  CHECK(args[0] == "buf3");
  CHECK(args[1] == "buf4");
  CHECK(args[13] == "buf6");
  CHECK(w.call_sites[0].returns == std::vector<std::string>{"buf6"});
}

TEST_CASE("parse_wrapper: call sites inside torch.cond branches name their subgraph") {
  auto w = parse_wrapper(fixture::text("cond_level1.wrapper.cpp"));
  std::vector<std::pair<std::string, std::string>> seen;  // (kernel, branch)
  for (const auto& s : w.call_sites) {
    seen.emplace_back(s.kernel, s.branch);
  }
  CHECK(std::count(seen.begin(), seen.end(),
                   std::make_pair(std::string("cpp_fused_gt_log_mul_relu_sub_sum_2"), std::string("true_graph_0"))) ==
        1);
  CHECK(std::count(seen.begin(), seen.end(),
                   std::make_pair(std::string("cpp_fused_add_gt_relu_sum_tanh_3"), std::string("false_graph_0"))) == 1);
  int top = 0, inside = 0;
  for (const auto& [kernel, branch] : seen) {
    (branch.empty() ? top : inside) += 1;
  }
  CHECK(inside == 4);  // two call sites in each branch
  CHECK(top >= 2);
  CHECK(w.call_sites.front().branch.empty());
}

TEST_CASE("parse_wrapper: a cpp kernel's in_out_ptr arguments, from its declaration in the wrapper") {
  auto w = parse_wrapper(fixture::text("nan_plain.wrapper.cpp"));
  bool checked = false;
  for (const auto& s : w.call_sites) {
    if (s.kernel == "cpp_fused_tanh_1") {  // declared `(float* in_out_ptr0)`
      CHECK(s.in_out == std::vector<int>{0});
      checked = true;
    }
    if (s.kind != KernelKind::cpp) {
      CHECK(s.in_out.empty());
    }
  }
  CHECK(checked);
}

TEST_SUITE_BEGIN("wrapper/constants");

TEST_CASE("missing_weights: constants declared, none embedded and no weights file") {
  std::string source =
      "    constants_info_[0].name = \"fc_weight\";\n"
      "    constants_info_[0].data_size = 1728;\n"
      "    constants_info_[0].from_folded = false;\n"
      "    constants_info_[1].name = \"folded\";\n"
      "    constants_info_[1].data_size = 64;\n"
      "    constants_info_[1].from_folded = true;\n";
  auto constants = parse_constants(source);
  REQUIRE(constants.size() == 2);
  CHECK(constants[0].data_size == 1728);
  CHECK(constants[1].from_folded);
  // package_constants_in_so=False without a weights file: the library's blob is 1 byte.
  CHECK(missing_weights(constants, 1, false) ==
        "1 constant (1728 bytes) declared, but the package holds no weights: the library embeds 1 bytes and no "
        "weights file is packaged (a build with aot_inductor.package_constants_in_so=False; also set "
        "aot_inductor.package_constants_on_disk_format, or package them with the model), so every run would read "
        "uninitialized memory as weights");
  CHECK(missing_weights(constants, 1, true).empty());              // a .blob beside it
  CHECK(missing_weights(constants, 1792, false).empty());          // embedded (with padding)
  CHECK(missing_weights(constants, std::nullopt, false).empty());  // no blob symbols: nothing known
}

TEST_SUITE_END();
