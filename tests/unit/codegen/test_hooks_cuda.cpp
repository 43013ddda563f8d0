// Interposition and the rewrite on a CUDA wrapper (tests/data/
// cuda_plain.wrapper.cpp, written after torch 2.13's codegen; see its top).
// Tested on wrapper text and with a fake CUDA driver only: no GPU ran them.

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

std::string cuda_fixture() {
  return fixture::text("cuda_plain.wrapper.cpp");
}

const char* k_cuda_shims = R"(
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta, double alpha);
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
)";

// A driver standing in for the runner and for libcuda: it defines the
// runner's callbacks (printing what they are told), loads the hook library
// RTLD_LOCAL as the runner does, points the hooks' `real` pointers at a
// fake cuModuleGetFunction / cuLaunchKernel, and makes the calls the
// wrapper's loadKernel and launchKernel make.
const char* k_fake_driver = R"(#include <dlfcn.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#define EXPORT extern "C" __attribute__((visibility("default"), used))
static int mode = 3;  // the probe mode aoti_bisect_enter returns (stats)
EXPORT int aoti_bisect_enter(const char* k) { std::printf("enter %s\n", k); return mode; }
EXPORT void aoti_bisect_tensor(void*, int arg, int after) { std::printf("tensor %d %d\n", arg, after); }
EXPORT void aoti_bisect_pointer(const void* p, int arg, int after) {
  std::printf("pointer %#lx arg %d %s\n", (unsigned long)(uintptr_t)p, arg, after ? "after" : "before");
}
EXPORT void aoti_bisect_launched(int failed) { std::printf("launched %d\n", failed); }
EXPORT void aoti_bisect_data_ptr(void*, void*) {}
EXPORT void aoti_bisect_forget(void*) {}

typedef int CUresult;
static char functions[3];
static CUresult fake_get(void** f, void*, const char* name) {
  *f = std::strcmp(name, "triton_poi_fused_add_log_relu_0") == 0 ? &functions[0]
       : std::strcmp(name, "triton_poi_fused_gather_1") == 0     ? &functions[1]
                                                                  : &functions[2];
  return 0;
}
static CUresult launch_result = 0;
static CUresult fake_launch(void* f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned, void*,
                            void** params, void**) {
  std::printf("driver launch %ld grid %u block %u first %#lx\n", (long)((char*)f - functions), gx, bx,
              params ? (unsigned long)*(uint64_t*)params[0] : 0ul);
  return launch_result;
}

struct Hook { const char* symbol; void* hook; void** real; };
typedef CUresult (*Get)(void**, void*, const char*);
typedef CUresult (*Launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);

int main(int argc, char** argv) {
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) { std::printf("dlopen: %s\n", dlerror()); return 1; }
  auto* table = (const Hook*)dlsym(lib, "aoti_bisect_hooks");
  int count = *(const int*)dlsym(lib, "aoti_bisect_hook_count");
  Get get = nullptr;
  Launch launch = nullptr;
  for (int i = 0; i < count; ++i) {
    if (std::strcmp(table[i].symbol, "cuModuleGetFunction") == 0) { *table[i].real = (void*)&fake_get; get = (Get)table[i].hook; }
    if (std::strcmp(table[i].symbol, "cuLaunchKernel") == 0) { *table[i].real = (void*)&fake_launch; launch = (Launch)table[i].hook; }
  }
  if (!get || !launch) { std::printf("no driver hooks\n"); return 1; }
  void *relu = nullptr, *gather = nullptr, *other = nullptr;
  get(&relu, nullptr, "triton_poi_fused_add_log_relu_0");
  get(&gather, nullptr, "triton_poi_fused_gather_1");
  get(&other, nullptr, "some_library_kernel");
  // call_triton_poi_fused_gather_1(arg3_1, buf1, buf2, 16L, ...)
  uint64_t var_5 = 0x7000, var_6 = 0x8000, var_7 = 0x9000;
  int var_8 = 16;
  uint64_t global_scratch_9 = 0, profile_scratch_10 = 0;
  void* kernel_args_[] = {&var_5, &var_6, &var_7, &var_8, &global_scratch_9, &profile_scratch_10};
  std::printf("rc %d\n", launch(gather, 1, 1, 1, 32, 1, 1, 0, nullptr, kernel_args_, nullptr));
  // A launch of a function the wrapper did not load: forwarded, no site.
  std::printf("rc %d\n", launch(other, 2, 1, 1, 64, 1, 1, 0, nullptr, kernel_args_, nullptr));
  // A failed launch: the site ends, no after-probes.
  launch_result = 700;
  uint64_t var_0 = 0xa000, var_1 = 0xb000;
  int var_2 = 64;
  void* relu_args[] = {&var_0, &var_1, &var_2, &global_scratch_9, &profile_scratch_10};
  std::printf("rc %d\n", launch(relu, 1, 1, 1, 32, 1, 1, 0, nullptr, relu_args, nullptr));
  // Probes off (mode 0): the site is entered, nothing is shown.
  mode = 0;
  launch_result = 0;
  std::printf("rc %d\n", launch(relu, 1, 1, 1, 32, 1, 1, 0, nullptr, relu_args, nullptr));
  return 0;
}
)";

}  // namespace

TEST_SUITE_BEGIN("codegen/hooks_cuda");

TEST_CASE("parse_wrapper: a CUDA wrapper's Triton call sites and their tensor arguments, the cuBLAS extern call") {
  WrapperInfo w = parse_wrapper(cuda_fixture());
  REQUIRE(w.call_sites.size() == 4);
  CHECK(w.call_sites[0].kernel == "aoti_torch_cuda_mm_out");
  CHECK(w.call_sites[0].kind == KernelKind::extern_call);
  CHECK(w.call_sites[0].args == std::vector<std::string>{"buf0", "arg2_1", "view of fc_weight"});
  CHECK(w.call_sites[1].kernel == "triton_poi_fused_add_log_relu_0");
  CHECK(w.call_sites[1].kind == KernelKind::triton);
  CHECK(w.call_sites[1].args[0] == "buf1");
  CHECK(w.call_sites[1].args[1] == "fc_bias");
  CHECK(w.call_sites[1].args[2] == "");  // 64L
  CHECK(w.call_sites[2].kernel == "triton_poi_fused_gather_1");
  CHECK(std::vector<std::string>(w.call_sites[2].args.begin(), w.call_sites[2].args.begin() + 3) ==
        std::vector<std::string>{"arg3_1", "buf1", "buf2"});
  CHECK(w.call_sites[3].kernel == "triton_poi_fused_add_log_relu_0");
  CHECK(w.call_sites[3].args[0] == "buf3");
  // in_out_ptr0 of call_triton_poi_fused_add_log_relu_0: read and written in place.
  CHECK(w.call_sites[1].in_out == std::vector<int>{0});
  CHECK(w.call_sites[2].in_out.empty());
  CHECK(w.call_sites[1].source_nodes == "[linear, relu, log]");
  CHECK(w.constants == std::vector<std::string>{"fc_weight", "fc_bias"});
  CHECK(std::count(w.moves.begin(), w.moves.end(), std::make_pair(std::string("buf1"), std::string("buf0"))) == 1);
  CHECK(std::count(w.moves.begin(), w.moves.end(), std::make_pair(std::string("buf3"), std::string("buf2"))) == 1);
}

TEST_CASE(
    "triton_launches: each call_triton_<kernel> definition gives its entry point and which kernelParams are "
    "whose device pointers") {
  auto launches = triton_launches(cuda_fixture());
  REQUIRE(launches.size() == 2);
  const TritonLaunch& relu = launches.at("triton_poi_fused_add_log_relu_0");
  CHECK(relu.function == "triton_poi_fused_add_log_relu_0");
  CHECK(relu.params == std::vector<std::string>{"in_out_ptr0", "in_ptr0", "xnumel", "device_idx_", "stream_",
                                                "kernels_", "cubin_dir_"});
  CHECK(relu.tensor_of == std::vector<int>{0, 1, -1, -1, -1});  // var_0, var_1, var_2, both scratch pointers
  CHECK(relu.tensor_params() == std::vector<int>{0, 1});
  const TritonLaunch& gather = launches.at("triton_poi_fused_gather_1");
  CHECK(gather.tensor_of == std::vector<int>{0, 1, 2, -1, -1, -1});
  // The Triton source in the /* */ comment above the launch is not read as code.
  CHECK(triton_launches("/* void call_triton_x(int a){ void* kernel_args_[] = {&a}; } */").empty());
  // Declarations, calls and a definition with no kernel_args_ list are left out.
  CHECK(triton_launches("static void call_triton_y(int a);\nvoid f() { call_triton_y(1); }\n").empty());
}

TEST_CASE(
    "generate_hooks on a CUDA wrapper: driver hooks that name each Triton kernel's pointer arguments in order; "
    "cuBLAS calls hooked as C-shim calls") {
  std::string text = cuda_fixture();
  WrapperInfo w = parse_wrapper(text);
  HookLibrary lib =
      generate_hooks(w, kernel_declarations(text), shim_declarations(k_cuda_shims), triton_launches(text));
  REQUIRE(lib.problems.empty());
  CHECK(lib.hooked == std::vector<std::string>{"aoti_torch_cuda_mm_out", "cuModuleGetFunction", "cuLaunchKernel",
                                               "aoti_torch_get_data_ptr", "aoti_torch_delete_tensor_object"});
  const std::string& src = lib.source;
  CHECK(src.find("static const int aoti_bisect_args_0[] = {0, 1, -1, -1, -1};") != std::string::npos);
  CHECK(src.find("static const int aoti_bisect_args_1[] = {0, 1, 2, -1, -1, -1};") != std::string::npos);
  CHECK(src.find("{\"triton_poi_fused_add_log_relu_0\", \"triton_poi_fused_add_log_relu_0\", 5, aoti_bisect_args_0}") !=
        std::string::npos);
  CHECK(src.find("{\"triton_poi_fused_gather_1\", \"triton_poi_fused_gather_1\", 6, aoti_bisect_args_1}") !=
        std::string::npos);
  CHECK(src.find("aoti_bisect_enter(\"aoti_torch_cuda_mm_out\")") != std::string::npos);
  CHECK(src.find("aoti_bisect_tensor(a1, 1, 0);") != std::string::npos);
  CHECK(src.find("{\"cuLaunchKernel\", (void*)&aoti_bisect_hook_2, (void**)&real_2}") != std::string::npos);
  CHECK(src.find("aoti_bisect_hook_count = 5") != std::string::npos);
  CHECK(src.find("#include <cuda") == std::string::npos);  // no CUDA headers
  CHECK(src.find("#include <torch") == std::string::npos);

  // A Triton site whose launch cannot be read is named, nothing generated.
  HookLibrary none = generate_hooks(w, {}, shim_declarations(k_cuda_shims), {});
  CHECK(none.source.empty());
  REQUIRE(none.problems.size() == 2);
  CHECK(none.problems[0].find("triton_poi_fused_add_log_relu_0: a Triton launch") == 0);
}

TEST_CASE(
    "the CUDA hook library compiles without CUDA headers, and its launch hook shows each launch's pointers "
    "(fake driver)") {
  std::string text = cuda_fixture();
  HookLibrary lib = generate_hooks(parse_wrapper(text), {}, shim_declarations(k_cuda_shims), triton_launches(text));
  REQUIRE(lib.problems.empty());
  fs::path dir = scratch_dir("hooks-cuda");
  write(dir / "hooks.cpp", lib.source);
  write(dir / "driver.cpp", k_fake_driver);
  // The flags lib/search/source_interpose.cpp compiles the hooks with.
  std::string cxx = compiler();
  int rc = std::system((cxx + " -std=c++17 -O1 -fPIC -shared -w -o " + (dir / "hooks.so").string() + " " +
                        (dir / "hooks.cpp").string() + " 2> " + (dir / "hooks.log").string())
                           .c_str());
  INFO(read(dir / "hooks.log"));
  REQUIRE(rc == 0);
  rc = std::system((cxx + " -std=c++17 -rdynamic -o " + (dir / "driver").string() + " " +
                    (dir / "driver.cpp").string() + " -ldl 2> " + (dir / "driver.log").string())
                       .c_str());
  INFO(read(dir / "driver.log"));
  REQUIRE(rc == 0);
  rc = std::system(
      ((dir / "driver").string() + " " + (dir / "hooks.so").string() + " > " + (dir / "out.txt").string()).c_str());
  std::string out = read(dir / "out.txt");
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(out ==
        "enter triton_poi_fused_gather_1\n"
        "pointer 0x7000 arg 0 before\n"
        "pointer 0x8000 arg 1 before\n"
        "pointer 0x9000 arg 2 before\n"
        "driver launch 1 grid 1 block 32 first 0x7000\n"
        "launched 0\n"
        "pointer 0x7000 arg 0 after\n"
        "pointer 0x8000 arg 1 after\n"
        "pointer 0x9000 arg 2 after\n"
        "rc 0\n"
        "driver launch 2 grid 2 block 64 first 0x7000\n"
        "rc 0\n"
        "enter triton_poi_fused_add_log_relu_0\n"
        "pointer 0xa000 arg 0 before\n"
        "pointer 0xb000 arg 1 before\n"
        "driver launch 0 grid 1 block 32 first 0xa000\n"
        "launched 1\n"
        "rc 700\n"
        "enter triton_poi_fused_add_log_relu_0\n"
        "driver launch 0 grid 1 block 32 first 0xa000\n"
        "launched 0\n"
        "rc 0\n");
  fs::remove_all(dir);
}

TEST_CASE(
    "insert_probes on a CUDA wrapper: the printer's level-1 lines around Triton launches (every tensor "
    "argument as written, constants included) and around the cuBLAS call") {
  std::string plain = cuda_fixture();
  std::string out = insert_probes(plain, parse_wrapper(plain));
  // The expected text: the fixture with these lines around each call.
  auto save = [](const std::string& x, const char* phase, const std::string& k) {
    return "    aoti_torch_save_tensor_handle(" + x + ", \"" + x + "\", \"" + phase + "\", \"" + k + "\");\n";
  };
  auto around = [&](const std::string& call, const std::vector<std::string>& tensors, const std::string& k) {
    std::string b, a;
    for (const auto& t : tensors) {
      b += save(t, "before_launch", k);
      a += save(t, "after_launch", k);
    }
    return std::make_pair(call, std::make_pair(b, a));
  };
  const std::string relu = "triton_poi_fused_add_log_relu_0", gather = "triton_poi_fused_gather_1";
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> sites = {
      around("    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(buf0, arg2_1,", {"buf0", "arg2_1"},
             "aoti_torch_cuda_mm_out"),
      around("    call_triton_poi_fused_add_log_relu_0(buf1, fc_bias, 64L,", {"buf1", "fc_bias"}, relu),
      around("    call_triton_poi_fused_gather_1(arg3_1, buf1, buf2, 16L,", {"arg3_1", "buf1", "buf2"}, gather),
      around("    call_triton_poi_fused_add_log_relu_0(buf3, fc_bias, 16L,", {"buf3", "fc_bias"}, relu),
  };
  std::string expected = plain;
  for (const auto& [call, lines] : sites) {
    size_t at = expected.find(call);
    REQUIRE(at != std::string::npos);
    size_t end = expected.find('\n', at) + 1;
    expected.insert(end, lines.second);
    expected.insert(at, lines.first);
  }
  CHECK(out == expected);
  WrapperInfo w = parse_wrapper(out);
  CHECK(w.printer_level == 1);
  REQUIRE(w.call_sites.size() == 4);
  for (const auto& site : w.call_sites) {
    CHECK(site.probed);
  }
}

TEST_CASE(
    "the rewritten CUDA fixture compiles against the installed torch 2.13's AOTI headers and the CUDA toolkit's "
    "(skipped without them)") {
  // Where python3 has torch and /usr/local/cuda (or $CUDA_HOME) has cuda.h:
  // the fixture's shape and the probe lines (a ConstantHandle passed to
  // aoti_torch_save_tensor_handle included) are what those headers accept.
  fs::path dir = scratch_dir("rewrite-cuda");
  const char* cuda_home = std::getenv("CUDA_HOME");
  fs::path cuda = cuda_home != nullptr && *cuda_home ? fs::path(cuda_home) : fs::path("/usr/local/cuda");
  int has_torch = std::system(("python3 -c 'import os, torch; print(os.path.dirname(torch.__file__)); "
                               "print(torch.__version__)' > " +
                               (dir / "torch.txt").string() + " 2>/dev/null")
                                  .c_str());
  std::string torch_txt = read(dir / "torch.txt");
  std::string torch_dir = torch_txt.substr(0, torch_txt.find('\n'));
  std::string torch_version = torch_txt.substr(std::min(torch_txt.size(), torch_dir.size() + 1));
  // The fixture follows torch 2.13's codegen (loadKernel takes the loaded
  // modules, which 2.11's AOTInductorModelKernels lacks); test_cuda211.cpp
  // checks 2.11's own wrappers against 2.11's headers.
  if (has_torch != 0 || torch_dir.empty() || torch_version.rfind("2.13", 0) != 0 ||
      !fs::exists(cuda / "include" / "cuda.h") ||
      !fs::exists(fs::path(torch_dir) / "include" / "torch" / "csrc" / "inductor" / "aoti_runtime" / "utils_cuda.h")) {
    aoti_bisect::test::skip("python3 has no torch 2.13 (the fixture's codegen), or there is no CUDA toolkit");
    fs::remove_all(dir);
    return;
  }
  std::string plain = cuda_fixture();
  write(dir / "wrapper.cpp", insert_probes(plain, parse_wrapper(plain)));
  std::string inc = fs::path(torch_dir).string() + "/include";
  int rc = std::system(
      (compiler() + " -std=c++20 -fsyntax-only -D TORCH_INDUCTOR_CPP_WRAPPER -D STANDALONE_TORCH_HEADER" +
       " -D C10_USING_CUSTOM_GENERATED_MACROS -D USE_CUDA -I" + inc + " -I" + inc + "/torch/csrc/api/include -I" +
       (cuda / "include").string() + " " + (dir / "wrapper.cpp").string() + " 2> " + (dir / "compile.log").string())
          .c_str());
  INFO(read(dir / "compile.log").substr(0, 4000));
  CHECK(rc == 0);
  fs::remove_all(dir);
}

TEST_SUITE_END();
