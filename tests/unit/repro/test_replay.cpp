// The replay's text generation (lib/repro): the culprit's definition cut out
// of kernel.cpp, the recorded flags made portable, the wrapper's call made
// on saved tensors, and a script that says why when it cannot run. The
// end-to-end tests (tests/e2e/test_replay.cpp) build and run it.

#include <string>

#include <doctest/doctest.h>

#include "repro/replay.hpp"

using namespace aoti_bisect;

namespace {

const std::string k_kernel_cpp = R"(// Triton kernels are embedded as comments in /tmp/build/xyz.wrapper.cpp

#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  cpp_fused_0(float* out_ptr0)
{
    out_ptr0[0] = 1.0f;
}

#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  cpp_fused_log_2(const float* in_ptr0,
                       float* out_ptr0)
{
    {
        out_ptr0[0] = std::log(in_ptr0[0]);
    }
}

// Compile cmd
// g++ /tmp/build/k.kernel.cpp -D TORCH_INDUCTOR_CPP_WRAPPER -D  C10_USING_CUSTOM_GENERATED_MACROS -O3 -DNDEBUG -march=native -Wall -std=c++20 -pedantic -fopenmp  -include /tmp/torchinductor_me/precompiled_headers/x.h -I/home/me/venv/include -I/home/me/torch/include   -mavx512f  -c -o /tmp/build/k.kernel.o
)";

const std::string k_wrapper_cpp = R"(#include <torch/csrc/inductor/aoti_include/cpu.h>
CACHE_TORCH_DTYPE(float32);
extern "C" void cpp_fused_log_2(const float* in_ptr0, float* out_ptr0);
void AOTInductorModel::run_impl(
    AtenTensorHandle* input_handles) {
    auto arg4_1 = std::move(inputs[0]);
    [[maybe_unused]] auto& fc_weight = constants_->at(0);
    static constexpr int64_t int_array_4[] = {8L, 8L};
    static constexpr int64_t int_array_5[] = {1L, 8L};
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(buf1, buf0, arg4_1, wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(fc_weight, 2, int_array_4, int_array_5, 0L)), 1L, 1L));
    cpp_fused_log_2((const float*)(buf1.data_ptr()),
                    (float*)(buf2.data_ptr()));
} // AOTInductorModel::run_impl
)";

nlohmann::json saved(int site, const std::string& tensor, const std::string& file) {
  return {{"event", "saved"}, {"site", site}, {"tensor", tensor}, {"path", "/home/me/out/repro/" + file}};
}

const std::string& text_of(const ReplayFiles& rf, const std::string& name) {
  static const std::string none;
  for (const auto& [n, t] : rf.files) {
    if (n == name) {
      return t;
    }
  }
  return none;
}

}  // namespace

TEST_SUITE_BEGIN("repro/replay");

TEST_CASE("replay_kernel_source: the culprit alone with its include, no comment naming a build path") {
  std::string def = replay_kernel_source(k_kernel_cpp, "cpp_fused_log_2");
  CHECK(def.find("#include <torch/csrc/inductor/cpp_prefix.h>") == 0);
  CHECK(def.find("extern \"C\"  void  cpp_fused_log_2(const float* in_ptr0,") != std::string::npos);
  CHECK(def.find("std::log(in_ptr0[0])") != std::string::npos);
  CHECK(def.find("cpp_fused_0") == std::string::npos);
  CHECK(def.find("/tmp") == std::string::npos);
  CHECK(def.find("Compile cmd") == std::string::npos);
  CHECK(replay_kernel_source(k_kernel_cpp, "cpp_fused_nope").empty());
}

TEST_CASE("portable_kernel_flags: the recorded flags without any path") {
  auto flags = portable_kernel_flags(k_kernel_cpp);
  std::vector<std::string> expected = {"-DTORCH_INDUCTOR_CPP_WRAPPER",
                                       "-DC10_USING_CUSTOM_GENERATED_MACROS",
                                       "-O3",
                                       "-DNDEBUG",
                                       "-march=native",
                                       "-std=c++20",
                                       "-fopenmp",
                                       "-mavx512f"};
  CHECK(flags == expected);
  CHECK(portable_kernel_flags("no command here").empty());
}

TEST_CASE("call_text_at and call_arguments: the wrapper's call across lines, split at top-level commas") {
  std::string call = call_text_at(k_wrapper_cpp, 11, "cpp_fused_log_2");
  CHECK(call.find("cpp_fused_log_2((const float*)(buf1.data_ptr()),") == 0);
  auto args = call_arguments(call);
  REQUIRE(args.size() == 2);
  CHECK(args[1] == "(float*)(buf2.data_ptr())");
  auto ext = call_arguments(call_text_at(k_wrapper_cpp, 10, "aoti_torch_cpu_addmm_out"));
  REQUIRE(ext.size() == 6);
  CHECK(ext[3].find("reinterpret_tensor_wrapper(fc_weight, 2, int_array_4, int_array_5, 0L)") != std::string::npos);
  CHECK(call_text_at(k_wrapper_cpp, 4, "cpp_fused_log_2").empty());
}

TEST_CASE("generate_replay: a cpp kernel's driver makes the wrapper's call on the saved tensors") {
  Culprit c;
  c.kernel = "cpp_fused_log_2";
  c.kind = "cpp";
  ReplaySpec spec{
      "out/repro", "x",
      "model",     2,
      2,           "nonfinite",
      &c,          {saved(2, "buf1", "site2_buf1.pt"), saved(2, "buf2", "site2_buf2.pt"), saved(1, "buf0", "x.pt")}};
  ReplayFiles rf = generate_replay(spec, k_wrapper_cpp, k_kernel_cpp);
  CHECK(rf.problem.empty());
  const std::string& drv = text_of(rf, "driver.cpp");
  CHECK(drv.find("replay::load(\"buf1\", \"site2_buf1.pt\", 1, true)") != std::string::npos);
  CHECK(drv.find("replay::load(\"buf2\", \"site2_buf2.pt\", 2, false)") != std::string::npos);
  CHECK(drv.find("cpp_fused_log_2((const float*)(buf1.data_ptr()), (float*)(buf2.data_ptr()));") != std::string::npos);
  CHECK(drv.find("int verdict = replay::judge_nonfinite();\n  replay::report_intermediates();\n  return verdict;") !=
        std::string::npos);
  // The driver includes only the host's header (LibTorch's heavy headers are in the host, built once).
  CHECK(drv.find("#include \"replay_host.h\"") != std::string::npos);
  CHECK(drv.find("ATen/ATen.h") == std::string::npos);
  CHECK(text_of(rf, "replay_host.h").find("int judge_nonfinite();") != std::string::npos);
  CHECK(text_of(rf, "replay_host.cpp").find("#include <torch/csrc/jit/serialization/pickle.h>") != std::string::npos);
  // This kernel computes no intermediate (`out_ptr0[0] = std::log(in_ptr0[0]);`):
  // `replay --intermediates` says so and exits 2.
  CHECK_FALSE(rf.traced);
  CHECK(rf.traced_problem ==
        "cpp_fused_log_2 computes no intermediate in the statements Inductor's cpp backend "
        "writes (`auto tmpN = ...;`)");
  CHECK(text_of(rf, "kernel.traced.cpp").empty());
  CHECK(!text_of(rf, "kernel.cpp").empty());
  const std::string& script = text_of(rf, "replay");
  CHECK(script.find("sources=\"driver.cpp\"\n[ -z \"kernel\" ] || sources=\"$kernel_src $sources\"") !=
        std::string::npos);
  CHECK(script.find("for f in $sources replay_host.h replay_host.cpp $([ $host_only != 0 ] || echo site2_buf1.pt "
                    "site2_buf2.pt); do") != std::string::npos);
  CHECK(script.find("traced_problem='cpp_fused_log_2 computes no intermediate") != std::string::npos);
  CHECK(script.find("problem=''") != std::string::npos);
  // The host and the driver are compiled with the package's own standard
  // (its recorded -std=c++20: torch 2.14's headers refuse C++17).
  CHECK(script.find("compile replay_host.cpp \"$host.$$\" -std=c++20 -O1 -fPIC") != std::string::npos);
  CHECK(script.find("compile driver.cpp \"$tmp/driver.o\" -std=c++20 -O1") != std::string::npos);
  CHECK(script.find("c++17") == std::string::npos);
  // Only a replay through an operator's own library loads Python's: this one never starts Python for it.
  CHECK(script.find("if [ \"0\" = 1 ] && [ -z \"${AOTI_BISECT_LIBPYTHON:-}\" ]") != std::string::npos);
  CHECK(script.find("@LOADS_PYTHON@") == std::string::npos);
  for (const auto& [name, text] : rf.files) {
    CHECK_MESSAGE(private_path_in(text, {"/home/me", "/tmp/"}).empty(), name);
  }
}

TEST_CASE("generate_replay: an extern call on a view of a constant, its layout from the wrapper's arrays") {
  Culprit c;
  c.kernel = "aoti_torch_cpu_addmm_out";
  c.kind = "extern";
  c.args = {ProbeStats{"buf1", false, std::nullopt, std::nullopt}};
  ReplaySpec spec{"out/repro",
                  "x",
                  "model",
                  1,
                  1,
                  "nonfinite",
                  &c,
                  {saved(1, "buf1", "site1_buf1.pt"), saved(1, "buf0", "site1_buf0.pt"),
                   saved(1, "arg4_1", "site1_arg4_1.pt"), saved(1, "view of fc_weight", "site1_view_of_fc_weight.pt")}};
  ReplayFiles rf = generate_replay(spec, k_wrapper_cpp, k_kernel_cpp);
  CHECK(rf.problem.empty());
  const std::string& drv = text_of(rf, "driver.cpp");
  CHECK(drv.find("static constexpr int64_t int_array_4[] = {8L, 8L};") != std::string::npos);
  CHECK(drv.find("replay::load(\"buf1\", \"site1_buf1.pt\", 2, false)") != std::string::npos);
  CHECK(drv.find("replay::load(\"buf0\", \"site1_buf0.pt\", 3, true)") != std::string::npos);
  CHECK(drv.find("replay::view(\"view of fc_weight\", \"site1_view_of_fc_weight.pt\", 2, int_array_4, int_array_5)") !=
        std::string::npos);
  CHECK(drv.find("reinterpret_tensor_wrapper(view_3, 2, int_array_4, int_array_5, 0L)") != std::string::npos);
  CHECK(drv.find("CACHE_TORCH_DTYPE(float32);") != std::string::npos);
  CHECK(text_of(rf, "kernel.cpp").empty());
}

TEST_CASE("generate_replay: what it cannot replay, the script says and exits 2") {
  Culprit c;
  c.kernel = "triton_poi_fused_0";
  c.kind = "triton";
  ReplaySpec spec{"out/repro", "x", "model", 1, 1, "nonfinite", &c, {}};
  ReplayFiles rf = generate_replay(spec, k_wrapper_cpp, k_kernel_cpp);
  CHECK(rf.problem.find("a GPU replay from the package's cubin is not implemented") != std::string::npos);
  CHECK(text_of(rf, "replay").find("problem='triton_poi_fused_0 is a Triton kernel") != std::string::npos);
  CHECK(text_of(rf, "driver.cpp").empty());

  c.kernel = "cpp_fused_log_2";
  c.kind = "cpp";
  spec.events = {saved(2, "buf1", "site2_buf1.pt")};
  spec.site = spec.wrapper_site = 2;
  rf = generate_replay(spec, k_wrapper_cpp, k_kernel_cpp);
  CHECK(rf.problem == "buf2 was not saved by the evidence run");

  spec.predicate = "mismatch";
  spec.events.push_back(saved(2, "buf2", "site2_buf2.pt"));
  rf = generate_replay(spec, k_wrapper_cpp, k_kernel_cpp);
  CHECK(rf.problem == "the eager value of cpp_fused_log_2's output was not saved");
}

TEST_SUITE_END();

TEST_CASE("generate_replay: a custom operator's call goes through LibTorch's proxy executor, its library loaded") {
  const std::string wrapper = R"(#include <torch/csrc/inductor/aoti_include/cpu.h>
void AOTInductorModel::run_impl(
    AtenTensorHandle* input_handles,
    AOTIProxyExecutorHandle proxy_executor) {
    AtenTensorHandle buf4_handle;  // output buffer
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_new_uninitialized_tensor(&buf4_handle));
    RAIIAtenTensorHandle buf4(buf4_handle);
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_proxy_executor_call_function(proxy_executor, 0, 0, std::array<int64_t, 0>{}.data(), 2, std::array<AtenTensorHandle, 2>{buf2, buf4}.data()));
} // AOTInductorModel::run_impl
)";
  const std::string nodes =
      R"({"nodes": [{"name": "buf3", "node": {"target": "myops::scaled_log", "inputs": [{"name": "x", "arg": {"as_tensor": {"name": "buf2"}}, "kind": 1}, {"name": "s", "arg": {"as_float": 2.0}, "kind": 1}], "outputs": [{"as_tensor": {"name": "buf4"}}]}}]})";
  Culprit c;
  c.kernel = "myops::scaled_log";
  c.kind = "extern";
  ProbeStats out;
  out.tensor = "buf4";
  out.initialized = false;
  TensorStats after;
  after.dtype = "float32";
  after.shape = {4, 8};
  out.after = after;
  c.args = {out};
  ReplaySpec spec{"out/repro",
                  "x",
                  "model",
                  1,
                  1,
                  "nonfinite",
                  &c,
                  {saved(1, "buf2", "site1_buf2.pt")},
                  {"/home/me/ops/libmyops.so"}};
  ReplayFiles rf = generate_replay(spec, wrapper, "", nodes);
  CHECK(rf.problem.empty());
  const std::string& drv = text_of(rf, "driver.cpp");
  CHECK(drv.find("::dlopen(\"./libmyops.so\", RTLD_NOW | RTLD_GLOBAL)") != std::string::npos);
  CHECK(drv.find("replay::load(\"buf2\", \"site1_buf2.pt\", 3, true)") != std::string::npos);
  CHECK(drv.find("replay::alloc(\"buf4\", {4, 8}, \"float32\", 2)") != std::string::npos);
  // The call the proxy executor makes: the operator, boxed, its arguments from the extern node.
  CHECK(drv.find("auto op = c10::Dispatcher::singleton().findSchemaOrThrow(\"myops::scaled_log\", \"\");") !=
        std::string::npos);
  CHECK(drv.find("stack.emplace_back(*torch::aot_inductor::tensor_handle_to_tensor_pointer(buf2));  // x") !=
        std::string::npos);
  CHECK(drv.find("stack.emplace_back(double(2));  // s") != std::string::npos);
  CHECK(drv.find("(*torch::aot_inductor::tensor_handle_to_tensor_pointer(buf4)).set_(stack.at(0).toTensor());") !=
        std::string::npos);
  CHECK(text_of(rf, "extern_nodes.json") == nodes);
  CHECK(text_of(rf, "replay").find("extern_nodes.json libmyops.so") != std::string::npos);
  // The operator's library may be a Python extension module: the script asks Python for its library.
  CHECK(text_of(rf, "replay").find("if [ \"1\" = 1 ] && [ -z \"${AOTI_BISECT_LIBPYTHON:-}\" ]") != std::string::npos);
  for (const auto& [name, text] : rf.files) {
    CHECK_MESSAGE(private_path_in(text, {"/home/me", "/tmp/"}).empty(), name);
  }
  SUBCASE("without the package's extern nodes, it says why it cannot run") {
    ReplayFiles none = generate_replay(spec, wrapper, "", "");
    // Without them the call is not even known as the operator's.
    CHECK(none.problem == "the wrapper's call of myops::scaled_log was not found");
  }
}
