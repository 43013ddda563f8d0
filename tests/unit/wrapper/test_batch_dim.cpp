#include <string>

#include <doctest/doctest.h>

#include "wrapper/batch_dim.hpp"
#include "wrapper/wrapper.hpp"

using namespace aoti_bisect;

namespace {

// One generated input check: dimension 0 dynamic in [lo, hi] (lo < 0: static
// `fixed`), dimension 1 fixed at 16.
std::string check(int i, const std::string& name, int lo, int hi, int fixed = 8) {
  std::string s = "static void check_input_" + std::to_string(i) + "(AtenTensorHandle* input_handles) {\n" +
                  "    ConstantHandle " + name + " = ConstantHandle(input_handles[" + std::to_string(i) + "]);\n" +
                  "    int32_t " + name + "_expected_dtype = aoti_torch_dtype_float32();\n" + "    auto " + name +
                  "_size = " + name + ".sizes();\n";
  if (lo >= 0) {
    s += "    if (" + name + "_size[0] < " + std::to_string(lo) + ") {\n    }\n";
    s += "    if (" + name + "_size[0] > " + std::to_string(hi) + ") {\n    }\n";
  } else {
    s += "    if (" + std::to_string(fixed) + " != " + name + "_size[0]) {\n    }\n";
  }
  s += "    if (16 != " + name + "_size[1]) {\n    }\n}\n";
  return s;
}

std::string run_impl(const std::string& decls) {
  return "void AOTInductorModel::run_impl(AtenTensorHandle* input_handles) {\n"
         "    auto inputs = steal_from_raw_handles_to_raii_handles(input_handles, 2);\n" +
         decls + "}\n";
}

BatchDimension of(const std::string& src) {
  return batch_dimension(parse_wrapper(src), src);
}

}  // namespace

TEST_SUITE_BEGIN("wrapper/batch_dim");

TEST_CASE("batch_dimension: inputs that share one dynamic dimension 0 are the batch, with its compiled range") {
  // One symbol, declared from the first input: the second's dimension 0 is it.
  std::string src =
      check(0, "arg4_1", 2, 64) + check(1, "arg5_1", 2, 64) + run_impl("    int64_t s77 = arg4_1_size[0];\n");
  BatchDimension b = of(src);
  REQUIRE(b.kind == BatchDimension::Kind::dynamic);
  CHECK(b.inputs == std::vector<int>{0, 1});
  CHECK(b.symbol == "s77");
  CHECK(b.min == 2);
  CHECK(b.max == 64);

  // An input whose dimension 0 is fixed is left whole.
  src = check(0, "arg4_1", 1, 1024) + check(1, "arg5_1", -1, 0, 16) + run_impl("    int64_t s48 = arg4_1_size[0];\n");
  b = of(src);
  REQUIRE(b.kind == BatchDimension::Kind::dynamic);
  CHECK(b.inputs == std::vector<int>{0});
  CHECK(b.min == 1);
}

TEST_CASE("batch_dimension: two symbols at dimension 0, or one undeclared beside two, is ambiguous") {
  std::string src = check(0, "arg4_1", 2, 64) + check(1, "arg5_1", 2, 64) +
                    run_impl("    int64_t s77 = arg4_1_size[0];\n    int64_t s27 = arg5_1_size[0];\n");
  BatchDimension b = of(src);
  CHECK(b.kind == BatchDimension::Kind::ambiguous);
  CHECK(b.why ==
        "the dynamic dimensions 0 of inputs 0 (arg4_1), 1 (arg5_1) are 2 different sizes (s27, s77): which is the "
        "batch is not known");
  src = check(0, "arg4_1", 2, 64) + check(1, "arg5_1", 2, 64) +
        run_impl("    int64_t s77 = arg4_1_size[0];\n    int64_t s27 = arg4_1_size[1];\n");
  b = of(src);
  CHECK(b.kind == BatchDimension::Kind::ambiguous);
  CHECK(b.why ==
        "inputs 0 (arg4_1), 1 (arg5_1) have a dynamic dimension 0, and the wrapper does not say they are "
        "one size");
}

TEST_CASE("batch_dimension: a static batch is its size; sizes that differ, or no checks, say why") {
  std::string src = check(0, "arg4_1", -1, 0, 8) + check(1, "arg5_1", -1, 0, 8) + run_impl("");
  BatchDimension b = of(src);
  REQUIRE(b.kind == BatchDimension::Kind::fixed);
  CHECK(b.size == 8);
  src = check(0, "arg4_1", -1, 0, 8) + check(1, "arg5_1", -1, 0, 4) + run_impl("");
  b = of(src);
  CHECK(b.kind == BatchDimension::Kind::unknown);
  CHECK(b.why == "no input's dimension 0 is dynamic, and their sizes differ (4, 8)");
  b = of(run_impl(""));
  CHECK(b.kind == BatchDimension::Kind::unknown);
  CHECK(b.why == "the package's input checks give no input's shape");
}

TEST_CASE("dynamic_dimensions: the sizes run_impl reads into one symbol are one size, with its compiled range") {
  std::string src = check(0, "arg4_1", 2, 64) + check(1, "arg5_1", 2, 32) +
                    run_impl("    int64_t s0 = arg4_1_size[0];\n    int64_t s1 = arg5_1_size[0];\n");
  std::vector<DynamicDimension> dims = dynamic_dimensions(parse_wrapper(src), src);
  REQUIRE(dims.size() == 2);
  CHECK(dims[0].symbol == "s0");
  CHECK(dims[0].members == std::vector<std::pair<int, int>>{{0, 0}});
  CHECK(dims[0].max == 64);
  CHECK(dims[1].symbol == "s1");
  CHECK(dims[1].min == 2);
  CHECK(dims[1].max == 32);
  // A dynamic dimension run_impl reads into no symbol.
  src = check(0, "arg4_1", 2, 64) + check(1, "arg5_1", 2, 64) + run_impl("    int64_t s0 = arg4_1_size[0];\n");
  dims = dynamic_dimensions(parse_wrapper(src), src);
  REQUIRE(dims.size() == 2);  // the second is declared nowhere: a size of its own
  CHECK(dims[1].symbol.empty());
  CHECK(dims[1].members == std::vector<std::pair<int, int>>{{1, 0}});
}
