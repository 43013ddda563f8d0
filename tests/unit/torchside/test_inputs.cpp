// Files of tensors as users save them, loaded the runner's way (the pickle
// made plain torch-free, then LibTorch's unpickler): the same tensors from
// every format (tests/data/tensor_files, tests/data/make_tensor_files.py).
#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "torch_doctest.hpp"
#include "torchside/internal.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

fs::path data(const std::string& name) {
  return fs::path(AOTI_BISECT_TEST_DATA) / "tensor_files" / name;
}

// a = arange(6, float32).reshape(2, 3), b = [1, 0, 1] (int64), in this order.
void check_a_and_b(const std::vector<at::Tensor>& t) {
  REQUIRE(t.size() == 2);
  CHECK((t[0].scalar_type() == at::kFloat));
  CHECK(t[0].sizes().vec() == std::vector<int64_t>{2, 3});
  CHECK(at::equal(t[0], at::arange(6, at::kFloat).reshape({2, 3})));
  CHECK((t[1].scalar_type() == at::kLong));
  CHECK(at::equal(t[1], at::tensor({1, 0, 1}, at::kLong)));
}

}  // namespace

TEST_SUITE_BEGIN("torchside");

TEST_CASE("load_tensors: zip, legacy, safetensors, OrderedDict, dict subclass and nn.Parameter give the same tensors") {
  for (const char* name :
       {"tf_plain.pt", "tf_legacy.pt", "tf.safetensors", "tf_ordered.pt", "tf_subclass.pt", "tf_parameter.pt"}) {
    CAPTURE(name);
    check_a_and_b(torchside::load_tensors(data(name), "inputs file"));
  }
}

TEST_CASE("load_tensors: a BatchEncoding's input_ids and attention_mask") {
  auto t = torchside::load_tensors(data("tf_batch.pt"), "inputs file");
  REQUIRE(t.size() == 2);
  CHECK(at::equal(t[0], at::tensor({2, 3, 4, 1}, at::kLong).reshape({2, 2})));  // hello world / a [PAD]
  CHECK(at::equal(t[1], at::tensor({1, 1, 1, 0}, at::kLong).reshape({2, 2})));
}

TEST_CASE("load_tensors: a pickle that would run code is refused before LibTorch sees it") {
  CHECK_THROWS_WITH(torchside::load_tensors(data("tf_runs_code.pt"), "inputs file"),
                    doctest::Contains("would call posix.system when loaded (a pickle that runs code)"));
}
