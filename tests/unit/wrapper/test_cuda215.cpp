// The package parsers on real CUDA wrappers that torch 2.15.0+cu132's
// AOTInductor generated (tests/data/cuda215_*.wrapper.cpp): cuda_nan_triton
// and cuda_gather_assert of examples/make_cuda_examples.py and the torch.cond
// model of tests/data/cuda_codegen/gen.py (cuda_cond), built for an sm_90
// H200 (Triton 3.9) on a machine without a GPU, as the 2.11 fixtures were
// (tests/data/cuda_codegen/README.md). cuda215_nan_triton_level1 is the same
// model built with aot_inductor.debug_intermediate_value_printer="1", from
// the same Inductor cache (same cubin paths). The text is Inductor's own,
// untouched.
//
// What 2.15 writes differently from 2.11 (test_cuda211.cpp), all of it read
// the same way: call_triton_<kernel> is `static __attribute__((noinline))`
// (2.11: `static inline`); loadKernel takes `&kernels_.loaded_modules_` and
// launchKernel a launchPdl flag (`..., stream_, false)`); the runtime
// interface uses AOTI_RUNTIME_TRY; the input copy's clone is checked
// (AOTI_TORCH_ERROR_CODE_CHECK); run_impl checks the input sizes under
// `if (_check_aoti_runtime_check_inputs_env())`; int_array constants are
// shared between calls; the softmax kernel is ..._prepare_softmax_online_N
// (2.11: ..._exp_prepare_softmax_online_sub_N); torch.cond's predicate is read
// with aoti_torch_item_int64 and the false branch comes first (`if
// (buf2_scalar == 0) { // subgraph: false_graph_0 ... } else { ...
// true_graph_0 }`), so the false branch's kernel is numbered first; the
// recorded commands are -std=c++20 with -D TORCH_INDUCTOR_PRECOMPILE_HEADERS.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "codegen/hooks.hpp"
#include "codegen/rewrite.hpp"
#include "package_fixture.hpp"
#include "skip.hpp"
#include "wrapper/triton_launch.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;
using fixture::compiler;
using fixture::read;
using fixture::scratch_dir;
using fixture::write;

namespace {

std::string real215(const std::string& name) {
  return fixture::text("cuda215_" + name + ".wrapper.cpp");
}

// "triton:triton_poi_fused_addmm_gelu_0", "extern:aoti_torch_cuda_mm_out", in order.
std::vector<std::string> sites215(const WrapperInfo& w) {
  std::vector<std::string> out;
  for (const auto& s : w.call_sites) {
    out.push_back(std::string(kernel_kind_name(s.kind)) + ":" + s.kernel);
  }
  return out;
}

std::vector<std::string> first_args215(const CallSite& s, size_t n) {
  return std::vector<std::string>(s.args.begin(), s.args.begin() + std::min(n, s.args.size()));
}

// Without the `// g++ ...` command comments (their paths name the build's
// own wrapper) and blank lines.
std::string without_commands215(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.rfind("// g++", 0) != 0 && !line.empty()) {
      out += line + "\n";
    }
  }
  return out;
}

// c_shim_cuda.h's declarations of the shims these wrappers call (torch 2.15.0).
const char* k_shims_215 = R"(
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta, double alpha);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
)";

const std::vector<std::string> k_plain215 = {"nan_triton", "gather_assert", "cond"};
const std::vector<std::string> k_all215 = {"nan_triton", "gather_assert", "cond", "nan_triton_level1"};

const std::vector<std::string> k_nan215 = {
    "extern:aoti_torch_cuda_mm_out",    "triton:triton_poi_fused_addmm_gelu_0",
    "extern:aoti_torch_cuda_mm_out",    "triton:triton_poi_fused_addmm_log_tanh_1",
    "triton:triton_poi_fused_2",  // fc[2].bias (4 values) inlined as constants
    "extern:aoti_torch_cuda_addmm_out", "triton:triton_poi_fused__softmax_prepare_softmax_online_3"};

}  // namespace

TEST_SUITE_BEGIN("wrapper/cuda215");

TEST_CASE(
    "the torch 2.15 CUDA fixtures are 2.15's codegen: noinline launch functions, loadKernel with the loaded "
    "modules, launchKernel with launchPdl") {
  for (const auto& name : k_all215) {
    CAPTURE(name);
    std::string text = real215(name);
    CHECK(text.find("static __attribute__((noinline)) void call_triton_") != std::string::npos);
    CHECK(text.find("static inline void call_triton_") == std::string::npos);
    CHECK(text.find(", cubin_dir_, &kernels_.loaded_modules_); ") != std::string::npos);
    CHECK(text.find(", kernel_args_, stream_, false);") != std::string::npos);
    CHECK(text.find("AOTI_RUNTIME_TRY") != std::string::npos);
  }
  std::string cond = real215("cond");
  CHECK(cond.find("AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_item_int64(buf2, &buf2_scalar));") != std::string::npos);
  CHECK(cond.find("if (buf2_scalar == 0) {\n        // subgraph: false_graph_0") != std::string::npos);
  // The gather kernel keeps its bounds check: the device-side assert of cuda_gather_assert.
  CHECK(real215("gather_assert")
            .find("tl.device_assert(((0 <= tmp3) & (tmp3 < 50)) | ~(xmask), \"index out of "
                  "bounds: 0 <= tmp3 < 50\")") != std::string::npos);
}

TEST_CASE(
    "parse_wrapper on torch 2.15 CUDA wrappers: every call site of run_impl, in order, with its kind and "
    "branch") {
  CHECK(sites215(parse_wrapper(real215("nan_triton"))) == k_nan215);
  CHECK(sites215(parse_wrapper(real215("gather_assert"))) ==
        std::vector<std::string>{"extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_gelu_0",
                                 "extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_add_addmm_embedding_tanh_1",
                                 "triton:triton_poi_fused_2", "extern:aoti_torch_cuda_addmm_out",
                                 "triton:triton_poi_fused__softmax_prepare_softmax_online_3"});
  // torch.cond: the false branch first, as 2.15 writes it.
  WrapperInfo cond = parse_wrapper(real215("cond"));
  CHECK(sites215(cond) ==
        std::vector<std::string>{"extern:aoti_torch_cuda_mm_out", "triton:triton_per_fused_addmm_gt_relu_sum_0",
                                 "extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_gt_mul_relu_tanh_1",
                                 "extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_gt_log_relu_2",
                                 "triton:triton_poi_fused_3", "extern:aoti_torch_cuda_addmm_out",
                                 "triton:triton_poi_fused__softmax_prepare_softmax_online_4"});
  std::vector<std::string> branches;
  for (const auto& s : cond.call_sites) {
    branches.push_back(s.branch);
  }
  CHECK(branches ==
        std::vector<std::string>{"", "", "false_graph_0", "false_graph_0", "true_graph_0", "true_graph_0", "", "", ""});
  for (const auto& name : k_plain215) {
    CAPTURE(name);
    WrapperInfo w = parse_wrapper(real215(name));
    CHECK(w.found);
    CHECK(w.printer_level == 0);
    CHECK(!w.instrumented);
    for (const auto& s : w.call_sites) {
      CHECK(!s.probed);
    }
  }
}

TEST_CASE("parse_wrapper on a torch 2.15 CUDA wrapper built with the level-1 printer: level 1, every site probed") {
  WrapperInfo w = parse_wrapper(real215("nan_triton_level1"));
  CHECK(w.found);
  CHECK(w.instrumented);
  CHECK(w.printer_level == 1);
  CHECK(sites215(w) == k_nan215);
  REQUIRE(w.call_sites.size() == 7);
  for (const auto& s : w.call_sites) {
    CAPTURE(s.kernel);
    CHECK(s.probed);
  }
  // The printer's lines sit around the calls: the sites are 2 to 4 lines further down than in the plain build.
  WrapperInfo plain = parse_wrapper(real215("nan_triton"));
  CHECK(plain.call_sites[0].line == 1377);
  CHECK(w.call_sites[0].line == 1379);
  CHECK(plain.call_sites[6].line == 1414);
  CHECK(w.call_sites[6].line == 1440);
}

TEST_CASE("parse_wrapper on torch 2.15 CUDA wrappers: arguments, in-place parameters, constants, inputs, moves") {
  WrapperInfo w = parse_wrapper(real215("gather_assert"));
  REQUIRE(w.call_sites.size() == 7);
  CHECK(w.call_sites[0].args == std::vector<std::string>{"buf0", "arg7_1", "view of fc_0_weight"});
  CHECK(first_args215(w.call_sites[1], 3) == std::vector<std::string>{"buf1", "fc_0_bias", ""});
  CHECK(w.call_sites[1].in_out == std::vector<int>{0});
  // call_triton_<kernel>(tensors..., numels..., this->device_idx_, stream, kernels, this->cubin_dir_)
  CHECK(first_args215(w.call_sites[3], 5) == std::vector<std::string>{"buf3", "fc_1_bias", "arg8_1", "emb_weight", ""});
  CHECK(w.call_sites[3].in_out == std::vector<int>{0});
  CHECK(w.call_sites[3].source_nodes == "[linear_1, embedding, add, tanh]");
  CHECK(first_args215(w.call_sites[4], 2) == std::vector<std::string>{"buf4", ""});
  // addmm_out(out, self, mat1, mat2, beta, alpha): the bias buffer, the activation, a view of the weight.
  CHECK(w.call_sites[5].args == std::vector<std::string>{"buf5", "buf4", "buf3", "view of fc_2_weight", "", ""});
  CHECK(first_args215(w.call_sites[6], 3) == std::vector<std::string>{"buf5", "buf6", ""});
  CHECK(w.call_sites[6].in_out.empty());
  CHECK(w.constants ==
        std::vector<std::string>{"fc_0_weight", "fc_0_bias", "fc_1_weight", "fc_1_bias", "fc_2_weight", "emb_weight"});
  REQUIRE(w.inputs.size() == 2);
  CHECK(w.inputs[0].name == "arg7_1");
  CHECK(w.inputs[0].dtype == "float32");
  CHECK(w.inputs[0].shape == std::vector<std::optional<int64_t>>{8, 16});
  CHECK(w.inputs[0].strides == std::vector<std::optional<int64_t>>{16, 1});
  CHECK(w.inputs[1].name == "arg8_1");
  CHECK(w.inputs[1].dtype == "int64");
  CHECK(w.inputs[1].shape == std::vector<std::optional<int64_t>>{8});
  CHECK(w.inputs[0].device_type == 1);  // cuda
  CHECK(w.inputs[1].device_type == 1);
  CHECK(w.num_inputs == 2);
  CHECK(w.outputs == std::vector<std::string>{"buf6"});
  CHECK(w.value_moves.empty());
  CHECK(w.moves == std::vector<std::pair<std::string, std::string>>{
                       {"arg7_1", "inputs"}, {"arg8_1", "inputs"}, {"buf1", "buf0"}, {"buf3", "buf2"}});

  WrapperInfo n = parse_wrapper(real215("nan_triton"));
  REQUIRE(n.call_sites.size() == 7);
  CHECK(n.call_sites[0].args == std::vector<std::string>{"buf0", "arg6_1", "view of fc_0_weight"});
  CHECK(n.call_sites[3].source_nodes == "[linear_1, log, tanh]");
  CHECK(n.call_sites[3].in_out == std::vector<int>{0});
  CHECK(n.constants == std::vector<std::string>{"fc_0_weight", "fc_0_bias", "fc_1_weight", "fc_1_bias", "fc_2_weight"});
  REQUIRE(n.inputs.size() == 1);
  CHECK(n.inputs[0].name == "arg6_1");
  CHECK(n.inputs[0].shape == std::vector<std::optional<int64_t>>{8, 16});
  CHECK(n.outputs == std::vector<std::string>{"buf6"});

  WrapperInfo c = parse_wrapper(real215("cond"));
  REQUIRE(c.call_sites.size() == 9);
  CHECK(first_args215(c.call_sites[1], 6) == std::vector<std::string>{"fc_0_bias", "buf0", "buf3", "buf2", "", ""});
  CHECK(c.call_sites[2].args ==
        std::vector<std::string>{"false_graph_0_buf0", "false_graph_0_arg2_1", "view of false_graph_0_arg1_1"});
  CHECK(c.call_sites[4].args ==
        std::vector<std::string>{"true_graph_0_buf0", "true_graph_0_arg2_1", "view of true_graph_0_arg1_1"});
  CHECK(first_args215(c.call_sites[5], 2) == std::vector<std::string>{"true_graph_0_buf1", "true_graph_0_arg0_1"});
  CHECK(c.call_sites[5].in_out == std::vector<int>{0});
  CHECK(c.call_sites[5].source_nodes == "[cond, gt, relu, linear, log]");
  // What each branch's inputs hold, and the branch result moved out, false branch first.
  CHECK(c.value_moves == std::vector<std::pair<std::string, std::string>>{{"false_graph_0_arg0_1", "fc_1_bias"},
                                                                          {"false_graph_0_arg1_1", "fc_1_weight"},
                                                                          {"false_graph_0_arg2_1", "buf3"},
                                                                          {"buf5", "false_graph_0_buf1"},
                                                                          {"true_graph_0_arg0_1", "fc_1_bias"},
                                                                          {"true_graph_0_arg1_1", "fc_1_weight"},
                                                                          {"true_graph_0_arg2_1", "buf3"},
                                                                          {"buf5", "true_graph_0_buf1"}});
  CHECK(c.outputs == std::vector<std::string>{"buf8"});
}

TEST_CASE("parse_wrapper: a torch 2.15 CUDA wrapper's checked copy of a misaligned input is not a buffer move") {
  // 2.15: AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_clone_preserve_strides(arg6_1, &arg6_1_aligned));
  //       arg6_1 = std::move(RAIIAtenTensorHandle(arg6_1_aligned));
  for (const auto& name : k_all215) {
    CAPTURE(name);
    std::string text = real215(name);
    REQUIRE(text.find("AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_clone_preserve_strides(") != std::string::npos);
    REQUIRE(text.find("= std::move(RAIIAtenTensorHandle(") != std::string::npos);
    WrapperInfo w = parse_wrapper(text);
    for (const auto* moves : {&w.moves, &w.value_moves}) {
      for (const auto& [to, from] : *moves) {
        CAPTURE(to);
        CHECK(from != "RAIIAtenTensorHandle");
      }
    }
  }
}

TEST_CASE(
    "triton_launches on torch 2.15 CUDA wrappers: the cubin entry point and which kernelParams are whose "
    "device pointers") {
  auto g = triton_launches(real215("gather_assert"));
  REQUIRE(g.size() == 4);
  const TritonLaunch& emb = g.at("triton_poi_fused_add_addmm_embedding_tanh_1");
  CHECK(emb.function == "triton_poi_fused_add_addmm_embedding_tanh_1");
  CHECK(emb.params == std::vector<std::string>{"in_out_ptr0", "in_ptr0", "in_ptr1", "in_ptr2", "xnumel", "device_idx_",
                                               "stream_", "kernels_", "cubin_dir_"});
  CHECK(emb.tensor_of == std::vector<int>{0, 1, 2, 3, -1, -1, -1});  // 4 pointers, xnumel, 2 scratch
  CHECK(emb.tensor_params() == std::vector<int>{0, 1, 2, 3});
  CHECK(g.at("triton_poi_fused_addmm_gelu_0").tensor_of == std::vector<int>{0, 1, -1, -1, -1});
  CHECK(g.at("triton_poi_fused_2").params ==
        std::vector<std::string>{"out_ptr0", "xnumel", "device_idx_", "stream_", "kernels_", "cubin_dir_"});
  CHECK(g.at("triton_poi_fused_2").tensor_of == std::vector<int>{0, -1, -1, -1});
  const TritonLaunch& softmax = g.at("triton_poi_fused__softmax_prepare_softmax_online_3");
  CHECK(softmax.params ==
        std::vector<std::string>{"in_ptr0", "out_ptr0", "xnumel", "device_idx_", "stream_", "kernels_", "cubin_dir_"});
  CHECK(softmax.tensor_of == std::vector<int>{0, 1, -1, -1, -1});

  auto n = triton_launches(real215("nan_triton"));
  REQUIRE(n.size() == 4);
  CHECK(n.at("triton_poi_fused_addmm_log_tanh_1").params == std::vector<std::string>{"in_out_ptr0", "in_ptr0", "xnumel",
                                                                                     "device_idx_", "stream_",
                                                                                     "kernels_", "cubin_dir_"});
  CHECK(n.at("triton_poi_fused_addmm_log_tanh_1").tensor_of == std::vector<int>{0, 1, -1, -1, -1});

  auto c = triton_launches(real215("cond"));
  REQUIRE(c.size() == 5);
  // xnumel = 1 is a constexpr of this persistent reduction: kernel_args_ holds r0_numel only.
  const TritonLaunch& sum = c.at("triton_per_fused_addmm_gt_relu_sum_0");
  CHECK(sum.params == std::vector<std::string>{"in_ptr0", "in_ptr1", "out_ptr1", "out_ptr2", "xnumel", "r0_numel",
                                               "device_idx_", "stream_", "kernels_", "cubin_dir_"});
  CHECK(sum.tensor_of == std::vector<int>{0, 1, 2, 3, -1, -1, -1});
  CHECK(c.at("triton_poi_fused_addmm_gt_mul_relu_tanh_1").tensor_of == std::vector<int>{0, 1, -1, -1, -1});
  CHECK(c.at("triton_poi_fused_addmm_gt_log_relu_2").tensor_of == std::vector<int>{0, 1, -1, -1, -1});
  CHECK(c.at("triton_poi_fused_3").tensor_of == std::vector<int>{0, -1, -1, -1});

  // Every Triton call site of every wrapper has its launch, entry point = kernel name.
  for (const auto& name : k_all215) {
    CAPTURE(name);
    std::string text = real215(name);
    auto launches = triton_launches(text);
    for (const auto& site : parse_wrapper(text).call_sites) {
      if (site.kind != KernelKind::triton) {
        continue;
      }
      CAPTURE(site.kernel);
      auto it = launches.find(site.kernel);
      REQUIRE(it != launches.end());
      CHECK(it->second.function == site.kernel);
      CHECK(it->second.tensor_of.size() >= 3);  // at least one pointer and the two scratch pointers
      CHECK(it->second.tensor_of.back() == -1);
    }
  }
}

TEST_CASE(
    "generate_hooks on torch 2.15 CUDA wrappers: every call site hooked, and the hook source compiles "
    "without CUDA or torch headers") {
  fs::path dir = scratch_dir("cuda215-hooks");
  for (const auto& name : k_all215) {
    CAPTURE(name);
    std::string text = real215(name);
    WrapperInfo w = parse_wrapper(text);
    HookLibrary lib =
        generate_hooks(w, kernel_declarations(text), shim_declarations(k_shims_215), triton_launches(text));
    REQUIRE(lib.problems.empty());
    CHECK(std::count(lib.hooked.begin(), lib.hooked.end(), "cuLaunchKernel") == 1);
    CHECK(std::count(lib.hooked.begin(), lib.hooked.end(), "cuModuleGetFunction") == 1);
    CHECK(std::count(lib.hooked.begin(), lib.hooked.end(), "aoti_torch_cuda_mm_out") == 1);
    CHECK(std::count(lib.hooked.begin(), lib.hooked.end(), "aoti_torch_cuda_addmm_out") == 1);
    CHECK(lib.source.find("#include <cuda") == std::string::npos);
    CHECK(lib.source.find("#include <torch") == std::string::npos);
    fs::path src = dir / (name + ".hooks.cpp");
    write(src, lib.source);
    // The flags lib/search/source_interpose.cpp compiles the hooks with, syntax only.
    int rc = std::system(
        (compiler() + " -std=c++17 -fsyntax-only -w " + src.string() + " 2> " + (dir / "hooks.log").string()).c_str());
    INFO(read(dir / "hooks.log"));
    CHECK(rc == 0);
  }
  std::string text = real215("gather_assert");
  HookLibrary lib = generate_hooks(parse_wrapper(text), kernel_declarations(text), shim_declarations(k_shims_215),
                                   triton_launches(text));
  CHECK(lib.source.find("{\"triton_poi_fused_add_addmm_embedding_tanh_1\", "
                        "\"triton_poi_fused_add_addmm_embedding_tanh_1\", 7, aoti_bisect_args_") != std::string::npos);
  CHECK(lib.source.find("[] = {0, 1, 2, 3, -1, -1, -1};") != std::string::npos);
  CHECK(lib.source.find("{\"triton_poi_fused__softmax_prepare_softmax_online_3\", "
                        "\"triton_poi_fused__softmax_prepare_softmax_online_3\", 5, aoti_bisect_args_") !=
        std::string::npos);
  CHECK(lib.source.find("aoti_bisect_enter(\"aoti_torch_cuda_addmm_out\")") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE(
    "insert_probes on a torch 2.15 CUDA wrapper: the plain build becomes what Inductor writes at printer "
    "level 1") {
  std::string plain = real215("nan_triton");
  std::string rewritten = insert_probes(plain, parse_wrapper(plain));
  CHECK(without_commands215(rewritten) == without_commands215(real215("nan_triton_level1")));
  WrapperInfo w = parse_wrapper(rewritten);
  CHECK(w.printer_level == 1);
  REQUIRE(w.call_sites.size() == 7);
  for (const auto& site : w.call_sites) {
    CHECK(site.probed);
  }
  // torch.cond: every site, in either branch, probed by the rewrite.
  std::string cond = real215("cond");
  WrapperInfo c = parse_wrapper(insert_probes(cond, parse_wrapper(cond)));
  CHECK(c.printer_level == 1);
  REQUIRE(c.call_sites.size() == 9);
  for (const auto& site : c.call_sites) {
    CAPTURE(site.kernel);
    CHECK(site.probed);
  }
}

TEST_CASE("recorded commands of a torch 2.15 CUDA package: wrapper and kernel compile (C++20), link with libcuda") {
  std::string wrapper = real215("nan_triton");
  auto compile = recorded_command(wrapper, "Compile cmd");
  auto link = recorded_command(wrapper, "Link cmd");
  REQUIRE(compile);
  REQUIRE(link);
  auto has = [](const std::vector<std::string>& v, const std::string& a) {
    return std::find(v.begin(), v.end(), a) != v.end();
  };
  CHECK(has(*compile, "-std=c++20"));  // 2.11: -std=c++17
  CHECK(has(*compile, "TORCH_INDUCTOR_PRECOMPILE_HEADERS"));
  CHECK(has(*compile, "USE_CUDA"));  // written "-D  USE_CUDA": two arguments
  CHECK(has(*compile, "-include"));  // the build machine's precompiled header
  auto adapted = adapt_compile(*compile, "wrapper.cpp", "wrapper.o");
  CHECK(!has(adapted, "-include"));
  CHECK(has(adapted, "wrapper.cpp"));
  CHECK(has(*link, "-lcuda"));
  CHECK(has(*link, "-ltorch_cuda"));
  int objects = 0;
  for (const auto& a : *link) {
    for (const char* suffix : {".wrapper.o", ".kernel.o", ".weights.o"}) {
      std::string s = suffix;
      objects += a.size() > s.size() && a.ends_with(s) ? 1 : 0;
    }
  }
  CHECK(objects == 3);
  // The CUDA kernel.cpp holds no kernel, only a comment and its own commands.
  std::string kernel = fixture::text("cuda215_nan_triton.kernel.cpp");
  CHECK(kernel_declarations(kernel).empty());
  auto kcompile = recorded_command(kernel, "Compile cmd");
  REQUIRE(kcompile);
  CHECK(has(*kcompile, "-O3"));
  CHECK(has(*kcompile, "-std=c++20"));
}

TEST_CASE(
    "the torch 2.15 CUDA wrappers, rewritten, compile against torch 2.15's headers and the CUDA toolkit's "
    "(skipped unless AOTI_BISECT_TORCH215_INCLUDE names them)") {
  // AOTI_BISECT_TORCH215_INCLUDE=<venv>/lib/python3.X/site-packages/torch/include; the CUDA
  // toolkit's headers from $CUDA_HOME or /usr/local/cuda.
  const char* inc = std::getenv("AOTI_BISECT_TORCH215_INCLUDE");
  const char* cuda_home = std::getenv("CUDA_HOME");
  fs::path cuda = cuda_home != nullptr && *cuda_home ? fs::path(cuda_home) : fs::path("/usr/local/cuda");
  if (inc == nullptr || !*inc || !fs::exists(fs::path(inc) / "torch/csrc/inductor/aoti_include/cuda.h") ||
      !fs::exists(cuda / "include" / "cuda.h")) {
    aoti_bisect::test::skip("AOTI_BISECT_TORCH215_INCLUDE does not name torch 2.15's include directory, or no "
                            "CUDA toolkit");
    return;
  }
  fs::path dir = scratch_dir("cuda215-syntax");
  for (const auto& name : k_plain215) {
    CAPTURE(name);
    std::string plain = real215(name);
    write(dir / "wrapper.cpp", insert_probes(plain, parse_wrapper(plain)));
    // The recorded compile command's flags that matter for the syntax.
    int rc = std::system((compiler() +
                          " -std=c++20 -fsyntax-only -D TORCH_INDUCTOR_CPP_WRAPPER -D STANDALONE_TORCH_HEADER"
                          " -D TORCH_INDUCTOR_PRECOMPILE_HEADERS -D C10_USING_CUSTOM_GENERATED_MACROS -D USE_CUDA -I" +
                          std::string(inc) + " -I" + std::string(inc) + "/torch/csrc/api/include -I" +
                          (cuda / "include").string() + " " + (dir / "wrapper.cpp").string() + " 2> " +
                          (dir / "compile.log").string())
                             .c_str());
    INFO(read(dir / "compile.log").substr(0, 4000));
    CHECK(rc == 0);
  }
  fs::remove_all(dir);
}

TEST_SUITE_END();
