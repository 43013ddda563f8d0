// The package parsers on real CUDA wrappers that torch 2.11.0+cu130's
// AOTInductor generated (tests/data/cuda211_*.wrapper.cpp): the five models
// of examples/make_cuda_examples.py plus one with torch.cond, built for an
// sm_90 H200 with Triton 3.6 on a machine without a GPU (the device
// properties patched; Triton compiled the cubins with its own ptxas; the
// library linked against a stub libcuda). cuda211_*_level1 are the same
// models built with aot_inductor.debug_intermediate_value_printer="1", from
// the same Inductor cache (same cubin paths). The text is Inductor's own,
// untouched; only the machine's paths in comments and loadKernel differ from
// a GPU machine's.

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

std::string real(const std::string& name) {
  return fixture::text("cuda211_" + name + ".wrapper.cpp");
}

// "triton:triton_poi_fused_addmm_gelu_0", "extern:aoti_torch_cuda_mm_out", in order.
std::vector<std::string> site_list(const WrapperInfo& w) {
  std::vector<std::string> out;
  for (const auto& s : w.call_sites) {
    out.push_back(std::string(kernel_kind_name(s.kind)) + ":" + s.kernel);
  }
  return out;
}

// The first `n` argument names of a call site.
std::vector<std::string> first_args(const CallSite& s, size_t n) {
  return std::vector<std::string>(s.args.begin(), s.args.begin() + std::min(n, s.args.size()));
}

// Without the `// g++ ...` command comments (their paths name the build's
// own wrapper) and blank lines (the plain build has one more at the end).
std::string without_commands(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.rfind("// g++", 0) != 0 && !line.empty()) {
      out += line + "\n";
    }
  }
  return out;
}

// c_shim_cuda.h's declarations of the shims these wrappers call (torch 2.11).
const char* k_shims_211 = R"(
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta, double alpha);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
)";

const std::vector<std::string> k_all = {"gather_oob",    "gather_assert", "nan_triton",
                                        "fp16_overflow", "relu_accuracy", "cond"};

}  // namespace

TEST_SUITE_BEGIN("wrapper/cuda211");

TEST_CASE("parse_wrapper on torch 2.11 CUDA wrappers: every call site of run_impl, in order, with its kind") {
  CHECK(site_list(parse_wrapper(real("nan_triton"))) ==
        std::vector<std::string>{"extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_gelu_0",
                                 "extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_log_tanh_1",
                                 "triton:triton_poi_fused_2",  // fc[2].bias (4 values) inlined as constants
                                 "extern:aoti_torch_cuda_addmm_out",
                                 "triton:triton_poi_fused__softmax_exp_prepare_softmax_online_sub_3"});
  const std::vector<std::string> gather = {"extern:aoti_torch_cuda_mm_out",
                                           "triton:triton_poi_fused_addmm_gelu_0",
                                           "extern:aoti_torch_cuda_mm_out",
                                           "triton:triton_poi_fused_add_addmm_embedding_tanh_1",
                                           "triton:triton_poi_fused_2",
                                           "extern:aoti_torch_cuda_addmm_out",
                                           "triton:triton_poi_fused__softmax_exp_prepare_softmax_online_sub_3"};
  CHECK(site_list(parse_wrapper(real("gather_oob"))) == gather);
  CHECK(site_list(parse_wrapper(real("gather_assert"))) == gather);
  CHECK(site_list(parse_wrapper(real("fp16_overflow"))) ==
        std::vector<std::string>{"triton:triton_poi_fused_mul_sigmoid_0", "extern:aoti_torch_cuda_mm_out",
                                 "triton:triton_per_fused__softmax_add_exp_prepare_softmax_online_sub_1"});
  CHECK(site_list(parse_wrapper(real("relu_accuracy"))) ==
        std::vector<std::string>{"extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_tanh_0",
                                 "extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_relu_1",
                                 "triton:triton_poi_fused_2", "extern:aoti_torch_cuda_addmm_out",
                                 "triton:triton_poi_fused__softmax_exp_prepare_softmax_online_sub_3"});
  WrapperInfo cond = parse_wrapper(real("cond"));
  CHECK(site_list(cond) ==
        std::vector<std::string>{"extern:aoti_torch_cuda_mm_out", "triton:triton_per_fused_addmm_gt_relu_sum_0",
                                 "extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_gt_log_relu_1",
                                 "extern:aoti_torch_cuda_mm_out", "triton:triton_poi_fused_addmm_gt_mul_relu_tanh_2",
                                 "triton:triton_poi_fused_3", "extern:aoti_torch_cuda_addmm_out",
                                 "triton:triton_poi_fused__softmax_exp_prepare_softmax_online_sub_4"});
  std::vector<std::string> branches;
  for (const auto& s : cond.call_sites) {
    branches.push_back(s.branch);
  }
  CHECK(branches ==
        std::vector<std::string>{"", "", "true_graph_0", "true_graph_0", "false_graph_0", "false_graph_0", "", "", ""});
  for (const auto& name : k_all) {
    CAPTURE(name);
    WrapperInfo w = parse_wrapper(real(name));
    CHECK(w.found);
    CHECK(w.printer_level == 0);
    CHECK(!w.instrumented);
  }
}

TEST_CASE("parse_wrapper on torch 2.11 CUDA wrappers: arguments, in-place parameters, constants, inputs") {
  WrapperInfo w = parse_wrapper(real("gather_oob"));
  REQUIRE(w.call_sites.size() == 7);
  CHECK(w.call_sites[0].args == std::vector<std::string>{"buf0", "arg7_1", "view of fc_0_weight"});
  // call_triton_<kernel>(tensors..., numels..., this->device_idx_, stream, kernels, this->cubin_dir_)
  CHECK(first_args(w.call_sites[3], 5) == std::vector<std::string>{"buf3", "fc_1_bias", "arg8_1", "emb_weight", ""});
  CHECK(w.call_sites[3].in_out == std::vector<int>{0});
  CHECK(w.call_sites[3].source_nodes == "[linear_1, embedding, add, tanh]");
  CHECK(first_args(w.call_sites[4], 2) == std::vector<std::string>{"buf4", ""});
  // addmm_out(out, self, mat1, mat2, beta, alpha): the bias buffer, the activation, a view of the weight.
  CHECK(w.call_sites[5].args == std::vector<std::string>{"buf5", "buf4", "buf3", "view of fc_2_weight", "", ""});
  CHECK(first_args(w.call_sites[6], 3) == std::vector<std::string>{"buf5", "buf6", ""});
  CHECK(w.call_sites[6].in_out.empty());
  CHECK(w.constants ==
        std::vector<std::string>{"fc_0_weight", "fc_0_bias", "fc_1_weight", "fc_1_bias", "fc_2_weight", "emb_weight"});
  REQUIRE(w.inputs.size() == 2);
  CHECK(w.inputs[0].name == "arg7_1");
  CHECK(w.inputs[0].dtype == "float32");
  CHECK(w.inputs[0].shape == std::vector<std::optional<int64_t>>{8, 16});
  CHECK(w.inputs[1].name == "arg8_1");
  CHECK(w.inputs[1].dtype == "int64");
  CHECK(w.inputs[1].shape == std::vector<std::optional<int64_t>>{8});
  CHECK(w.inputs[0].strides == std::vector<std::optional<int64_t>>{16, 1});
  CHECK(w.inputs[0].device_type == 1);  // cuda
  CHECK(w.inputs[1].device_type == 1);
  CHECK(w.num_inputs == 2);

  WrapperInfo f = parse_wrapper(real("fp16_overflow"));
  REQUIRE(f.call_sites.size() == 3);
  CHECK(first_args(f.call_sites[0], 3) == std::vector<std::string>{"arg0_1", "buf0", ""});
  CHECK(f.call_sites[1].args == std::vector<std::string>{"buf1", "buf0", "view of buf0"});  // q @ q.t()
  // The softmax runs in place on buf4, which is buf1 (the matmul's output) reused.
  CHECK(first_args(f.call_sites[2], 3) == std::vector<std::string>{"buf4", "", ""});
  CHECK(f.call_sites[2].in_out == std::vector<int>{0});
  CHECK(std::count(f.moves.begin(), f.moves.end(), std::make_pair(std::string("buf4"), std::string("buf1"))) == 1);
  REQUIRE(f.inputs.size() == 1);
  CHECK(f.inputs[0].dtype == "float16");

  WrapperInfo c = parse_wrapper(real("cond"));
  REQUIRE(c.call_sites.size() == 9);
  CHECK(first_args(c.call_sites[1], 6) == std::vector<std::string>{"fc_0_bias", "buf0", "buf3", "buf2", "", ""});
  CHECK(c.call_sites[2].args ==
        std::vector<std::string>{"true_graph_0_buf0", "true_graph_0_arg2_1", "view of true_graph_0_arg1_1"});
  // What each branch's inputs hold, and the branch result moved out.
  for (const auto& m :
       {std::make_pair("true_graph_0_arg2_1", "buf3"), std::make_pair("false_graph_0_arg0_1", "fc_1_bias"),
        std::make_pair("buf5", "true_graph_0_buf1"), std::make_pair("buf5", "false_graph_0_buf1")}) {
    CAPTURE(m.first);
    CHECK(std::count(c.value_moves.begin(), c.value_moves.end(),
                     std::make_pair(std::string(m.first), std::string(m.second))) == 1);
  }
}

TEST_CASE("parse_wrapper: a CUDA wrapper's copy of a misaligned input is not a buffer move") {
  // torch 2.11's cpp_wrapper_gpu.py (codegen_inputs) writes, for each input
  // assumed 16-byte aligned:
  //   if ((reinterpret_cast<std::uintptr_t>(arg7_1.data_ptr()) & (16 -1)) != 0) {
  //       ...
  //       arg7_1 = std::move(RAIIAtenTensorHandle(arg7_1_aligned));
  //   }
  // which was read as the value of "RAIIAtenTensorHandle" moving into arg7_1.
  for (const auto& name : k_all) {
    CAPTURE(name);
    std::string text = real(name);
    REQUIRE(text.find("= std::move(RAIIAtenTensorHandle(") != std::string::npos);
    WrapperInfo w = parse_wrapper(text);
    for (const auto* moves : {&w.moves, &w.value_moves}) {
      for (const auto& [to, from] : *moves) {
        CAPTURE(to);
        CHECK(from != "RAIIAtenTensorHandle");
      }
    }
  }
  WrapperInfo w = parse_wrapper(real("gather_oob"));
  CHECK(w.value_moves.empty());
  CHECK(w.moves == std::vector<std::pair<std::string, std::string>>{
                       {"arg7_1", "inputs"}, {"arg8_1", "inputs"}, {"buf1", "buf0"}, {"buf3", "buf2"}});
}

TEST_CASE(
    "triton_launches on torch 2.11 CUDA wrappers: the cubin entry point and which kernelParams are whose "
    "device pointers (scalars, constexpr numels and both scratch pointers: -1)") {
  auto g = triton_launches(real("gather_oob"));
  REQUIRE(g.size() == 4);
  const TritonLaunch& emb = g.at("triton_poi_fused_add_addmm_embedding_tanh_1");
  CHECK(emb.function == "triton_poi_fused_add_addmm_embedding_tanh_1");
  CHECK(emb.params == std::vector<std::string>{"in_out_ptr0", "in_ptr0", "in_ptr1", "in_ptr2", "xnumel", "device_idx_",
                                               "stream_", "kernels_", "cubin_dir_"});
  CHECK(emb.tensor_of == std::vector<int>{0, 1, 2, 3, -1, -1, -1});  // var_5..var_8, var_9 (xnumel), 2 scratch
  CHECK(g.at("triton_poi_fused_addmm_gelu_0").tensor_of == std::vector<int>{0, 1, -1, -1, -1});
  CHECK(g.at("triton_poi_fused_2").tensor_of == std::vector<int>{0, -1, -1, -1});
  CHECK(g.at("triton_poi_fused__softmax_exp_prepare_softmax_online_sub_3").tensor_of ==
        std::vector<int>{0, 1, -1, -1, -1});

  auto f = triton_launches(real("fp16_overflow"));
  REQUIRE(f.size() == 2);
  const TritonLaunch& softmax = f.at("triton_per_fused__softmax_add_exp_prepare_softmax_online_sub_1");
  CHECK(softmax.params == std::vector<std::string>{"in_out_ptr0", "xnumel", "r0_numel", "device_idx_", "stream_",
                                                   "kernels_", "cubin_dir_"});
  CHECK(softmax.tensor_of == std::vector<int>{0, -1, -1, -1, -1});  // xnumel and r0_numel passed
  CHECK(f.at("triton_poi_fused_mul_sigmoid_0").tensor_of == std::vector<int>{0, 1, -1, -1, -1});

  auto c = triton_launches(real("cond"));
  REQUIRE(c.size() == 5);
  // xnumel = 1 is a constexpr of this persistent reduction: kernel_args_ holds r0_numel only.
  const TritonLaunch& sum = c.at("triton_per_fused_addmm_gt_relu_sum_0");
  CHECK(sum.params == std::vector<std::string>{"in_ptr0", "in_ptr1", "out_ptr1", "out_ptr2", "xnumel", "r0_numel",
                                               "device_idx_", "stream_", "kernels_", "cubin_dir_"});
  CHECK(sum.tensor_of == std::vector<int>{0, 1, 2, 3, -1, -1, -1});
  CHECK(sum.tensor_params() == std::vector<int>{0, 1, 2, 3});
  CHECK(c.at("triton_poi_fused_addmm_gt_log_relu_1").tensor_of == std::vector<int>{0, 1, -1, -1, -1});
  CHECK(c.at("triton_poi_fused_addmm_gt_mul_relu_tanh_2").tensor_of == std::vector<int>{0, 1, -1, -1, -1});

  // Every Triton call site of every wrapper has its launch, entry point = kernel name.
  for (const auto& name : k_all) {
    CAPTURE(name);
    std::string text = real(name);
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
    "generate_hooks on torch 2.11 CUDA wrappers: every call site hooked, and the hook source compiles "
    "without CUDA or torch headers") {
  fs::path dir = scratch_dir("cuda211-hooks");
  for (const auto& name : k_all) {
    CAPTURE(name);
    std::string text = real(name);
    WrapperInfo w = parse_wrapper(text);
    HookLibrary lib =
        generate_hooks(w, kernel_declarations(text), shim_declarations(k_shims_211), triton_launches(text));
    REQUIRE(lib.problems.empty());
    CHECK(std::count(lib.hooked.begin(), lib.hooked.end(), "cuLaunchKernel") == 1);
    CHECK(std::count(lib.hooked.begin(), lib.hooked.end(), "cuModuleGetFunction") == 1);
    CHECK(std::count(lib.hooked.begin(), lib.hooked.end(), "aoti_torch_cuda_mm_out") == 1);
    fs::path src = dir / (name + ".hooks.cpp");
    write(src, lib.source);
    // The flags lib/search/source_interpose.cpp compiles the hooks with, syntax only.
    int rc = std::system(
        (compiler() + " -std=c++17 -fsyntax-only -w " + src.string() + " 2> " + (dir / "hooks.log").string()).c_str());
    INFO(read(dir / "hooks.log"));
    CHECK(rc == 0);
  }
  std::string text = real("gather_oob");
  HookLibrary lib = generate_hooks(parse_wrapper(text), kernel_declarations(text), shim_declarations(k_shims_211),
                                   triton_launches(text));
  CHECK(lib.source.find("{\"triton_poi_fused_add_addmm_embedding_tanh_1\", "
                        "\"triton_poi_fused_add_addmm_embedding_tanh_1\", 7, aoti_bisect_args_") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE(
    "insert_probes on torch 2.11 CUDA wrappers: the plain build becomes what Inductor writes at printer level 1") {
  for (const auto& name : {"nan_triton", "fp16_overflow"}) {
    CAPTURE(name);
    std::string plain = real(name);
    std::string rewritten = insert_probes(plain, parse_wrapper(plain));
    CHECK(without_commands(rewritten) == without_commands(real(std::string(name) + "_level1")));
    WrapperInfo w = parse_wrapper(rewritten);
    CHECK(w.printer_level == 1);
    for (const auto& site : w.call_sites) {
      CHECK(site.probed);
    }
  }
  // torch.cond: the printer probes the Triton launches inside the branches but
  // not the extern calls there; the rewrite probes both (rewrite.cpp,
  // probe_worthy). Apart from those lines the text is the printer's.
  std::string plain = real("cond");
  std::string rewritten = insert_probes(plain, parse_wrapper(plain));
  std::istringstream in(rewritten);
  std::string kept, line;
  int extra = 0;
  while (std::getline(in, line)) {
    bool branch_extern = line.find("aoti_torch_save_tensor_handle(") != std::string::npos &&
                         line.find("_graph_0_") != std::string::npos &&
                         line.find("\"aoti_torch_cuda_mm_out\"") != std::string::npos;
    extra += branch_extern ? 1 : 0;
    if (!branch_extern) {
      kept += line + "\n";
    }
  }
  CHECK(extra >= 8);  // at least the output and the input, before and after, in each branch
  CHECK(without_commands(kept) == without_commands(real("cond_level1")));
}

TEST_CASE("recorded commands of a torch 2.11 CUDA package: wrapper and kernel compile, link with libcuda") {
  std::string wrapper = real("nan_triton");
  auto compile = recorded_command(wrapper, "Compile cmd");
  auto link = recorded_command(wrapper, "Link cmd");
  REQUIRE(compile);
  REQUIRE(link);
  auto has = [](const std::vector<std::string>& v, const std::string& a) {
    return std::find(v.begin(), v.end(), a) != v.end();
  };
  CHECK(has(*compile, "-std=c++17"));
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
  std::string kernel = fixture::text("cuda211_nan_triton.kernel.cpp");
  CHECK(kernel_declarations(kernel).empty());
  auto kcompile = recorded_command(kernel, "Compile cmd");
  REQUIRE(kcompile);
  CHECK(has(*kcompile, "-O3"));
}

TEST_CASE(
    "the torch 2.11 CUDA wrappers, rewritten, compile against torch 2.11's headers and the CUDA toolkit's "
    "(skipped unless AOTI_BISECT_TORCH211_INCLUDE names them)") {
  // AOTI_BISECT_TORCH211_INCLUDE=<venv>/lib/python3.X/site-packages/torch/include; the CUDA
  // toolkit's headers from $CUDA_HOME or /usr/local/cuda.
  const char* inc = std::getenv("AOTI_BISECT_TORCH211_INCLUDE");
  const char* cuda_home = std::getenv("CUDA_HOME");
  fs::path cuda = cuda_home != nullptr && *cuda_home ? fs::path(cuda_home) : fs::path("/usr/local/cuda");
  if (inc == nullptr || !*inc || !fs::exists(fs::path(inc) / "torch/csrc/inductor/aoti_include/cuda.h") ||
      !fs::exists(cuda / "include" / "cuda.h")) {
    aoti_bisect::test::skip("AOTI_BISECT_TORCH211_INCLUDE does not name torch 2.11's include directory, or no "
                            "CUDA toolkit");
    return;
  }
  fs::path dir = scratch_dir("cuda211-syntax");
  for (const auto& name : k_all) {
    CAPTURE(name);
    std::string plain = real(name);
    write(dir / "wrapper.cpp", insert_probes(plain, parse_wrapper(plain)));
    // The recorded compile command's flags that matter for the syntax.
    int rc = std::system((compiler() +
                          " -std=c++17 -fsyntax-only -D TORCH_INDUCTOR_CPP_WRAPPER -D STANDALONE_TORCH_HEADER"
                          " -D C10_USING_CUSTOM_GENERATED_MACROS -D USE_CUDA -I" +
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
