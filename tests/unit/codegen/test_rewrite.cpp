#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "codegen/rewrite.hpp"
#include "evidence/evidence.hpp"
#include "evidence/wrapper_layout.hpp"
#include "package_fixture.hpp"

using namespace aoti_bisect;

namespace {

// Without the `// g++ ...` command comments, whose paths differ per build.
std::string without_commands(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.rfind("// g++", 0) != 0) {
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

TEST_SUITE_BEGIN("codegen/rewrite");

TEST_CASE("insert_probes: the plain wrapper becomes, line for line, what Inductor writes at printer level 1") {
  std::string plain = fixture::text("nan_plain.wrapper.cpp");
  std::string rewritten = insert_probes(plain, parse_wrapper(plain));
  CHECK(without_commands(rewritten) == without_commands(fixture::text("nan_level1.wrapper.cpp")));
  WrapperInfo w = parse_wrapper(rewritten);
  CHECK(w.printer_level == 1);
  REQUIRE(w.call_sites.size() == 4);
  for (const auto& site : w.call_sites) {
    CHECK(site.probed);
  }
}

TEST_CASE("insert_probes: call sites inside branches are probed; created outputs after the call, by handle") {
  std::string src = R"(extern "C" void cpp_fused_a_0(float* out_ptr0, const float* in_ptr0);
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    if (buf0_scalar) {
        cpp_fused_a_0((float*)(buf1.data_ptr()), (const float*)(arg0_1.data_ptr()));
    } else {
        AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_convolution(arg0_1, w0,
            nullptr, int_array_0, 2, int_array_1, 2, int_array_2, 2, 0, int_array_3, 2, 1L, &buf3_handle));
    }
}
)";
  std::string out = insert_probes(src, parse_wrapper(src));
  std::string expected = R"(extern "C" void cpp_fused_a_0(float* out_ptr0, const float* in_ptr0);
void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    if (buf0_scalar) {
        aoti_torch_save_tensor_handle(buf1, "buf1", "before_launch", "cpp_fused_a_0");
        aoti_torch_save_tensor_handle(arg0_1, "arg0_1", "before_launch", "cpp_fused_a_0");
        cpp_fused_a_0((float*)(buf1.data_ptr()), (const float*)(arg0_1.data_ptr()));
        aoti_torch_save_tensor_handle(buf1, "buf1", "after_launch", "cpp_fused_a_0");
        aoti_torch_save_tensor_handle(arg0_1, "arg0_1", "after_launch", "cpp_fused_a_0");
    } else {
        aoti_torch_save_tensor_handle(arg0_1, "arg0_1", "before_launch", "aoti_torch_cpu_convolution");
        AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_convolution(arg0_1, w0,
            nullptr, int_array_0, 2, int_array_1, 2, int_array_2, 2, 0, int_array_3, 2, 1L, &buf3_handle));
        aoti_torch_save_tensor_handle(arg0_1, "arg0_1", "after_launch", "aoti_torch_cpu_convolution");
        aoti_torch_save_tensor_handle(buf3_handle, "buf3", "after_launch", "aoti_torch_cpu_convolution");
    }
}
)";
  CHECK(out == expected);
}

TEST_CASE("insert_probes: an extern call whose tensor arguments are views and an optional mask is probed before it") {
  // torch 2.13's scaled_dot_product_attention on the CPU: q, k, v are views,
  // the mask an optional argument; Inductor's printer probes only the
  // outputs it creates, after the call (a blind spot for the search).
  std::string src = R"(void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf5, 4, int_array_12, int_array_13, 0L)), wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(w_k, 4, int_array_12, int_array_13, 0L)), 0.0, 0, &temporary_reference(buf8.get()), &var_0, &buf10_handle, &buf11_handle));
}
)";
  WrapperInfo w = parse_wrapper(src);
  REQUIRE(w.call_sites.size() == 1);
  CHECK(w.call_sites[0].args ==
        std::vector<std::string>{"view of buf5", "view of w_k", "", "", "buf8", "var_0", "buf10", "buf11"});
  std::string out = insert_probes(src, w);
  CHECK(out.find(R"(aoti_torch_save_tensor_handle(buf5, "buf5", "before_launch", )") != std::string::npos);
  CHECK(out.find(R"(aoti_torch_save_tensor_handle(buf8, "buf8", "before_launch", )") != std::string::npos);
  CHECK(out.find(R"(aoti_torch_save_tensor_handle(buf10_handle, "buf10", "after_launch", )") != std::string::npos);
  CHECK(out.find("w_k, \"w_k\"") == std::string::npos);  // a constant, as the printer leaves them
  WrapperInfo probed = parse_wrapper(out);
  REQUIRE(probed.call_sites.size() == 1);
  CHECK(probed.call_sites[0].probed);
  CHECK(blind_spots(probed).empty());
}

TEST_CASE("insert_probes: a torch.cond wrapper is probed inside its branches, where the printer left blind spots") {
  // The plain wrapper of the cond fixture: its level-1 build without the
  // printer's lines.
  std::istringstream in(fixture::text("cond_level1.wrapper.cpp"));
  std::string plain, line;
  while (std::getline(in, line)) {
    if (line.find("aoti_torch_save_tensor_handle(") == std::string::npos) {
      plain += line + "\n";
    }
  }
  CHECK_FALSE(blind_spots(parse_wrapper(fixture::text("cond_level1.wrapper.cpp"))).empty());
  WrapperInfo rewritten = parse_wrapper(insert_probes(plain, parse_wrapper(plain)));
  REQUIRE(rewritten.call_sites.size() == 10);
  for (const auto& site : rewritten.call_sites) {
    CAPTURE(site.kernel);
    CHECK(site.probed);
  }
  CHECK(blind_spots(rewritten).empty());
}

TEST_CASE("recorded commands, adapted to this machine") {
  std::string src =
      "int x;\n// Compile cmd\n// g++ /b/x/abc.wrapper.cpp -D A -O1 -include /tmp/pch/h.h -I/t/include "
      "-c -o /b/x/abc.wrapper.o\n// Link cmd\n// g++ /b/x/abc.wrapper.o /b/x/k.kernel.o "
      "/b/x/abc/w.weights.o -O3 -shared -o /b/x/abc.wrapper.so -ltorch\n";
  auto compile = recorded_command(src, "Compile cmd");
  REQUIRE(compile.has_value());
  CHECK(adapt_compile(*compile, "wrapper.cpp", "wrapper.o") ==
        std::vector<std::string>{"g++", "wrapper.cpp", "-D", "A", "-O1", "-I/t/include", "-c", "-o", "wrapper.o"});
  auto link = recorded_command(src, "Link cmd");
  REQUIRE(link.has_value());
  CHECK(adapt_link(*link, {{".wrapper.o", "wrapper.o"}, {".kernel.o", "kernel.o"}, {".weights.o", "weights.o"}},
                   "m.so") == std::vector<std::string>{"g++", "wrapper.o", "kernel.o", "weights.o", "-O3", "-shared",
                                                       "-o", "m.so", "-ltorch"});
  CHECK_FALSE(recorded_command("int x;\n", "Compile cmd").has_value());
  std::string s = weights_assembly("constants.bin", false);
  CHECK(s.find(".section\t.lrodata,\"a\"") != std::string::npos);
  CHECK(s.find(".incbin \"constants.bin\"") != std::string::npos);
  CHECK(s.find("_binary_constants_bin_end:") != std::string::npos);
  CHECK(weights_assembly("c.bin", true).find(".ldata,\"aw\"") != std::string::npos);
}

TEST_SUITE_END();
