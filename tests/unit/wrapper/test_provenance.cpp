// Provenance a package carries (torch 2.13): KernelContextGuard blocks
// (cpp.enable_kernel_profile) and kernel_information.json with the
// wrapper's provenance handles (trace.provenance_tracking_level=1), from
// real wrappers of one model (tests/data/provenance_*: Block1 is
// Linear+ReLU, Block2 Linear then log(abs()+1), run as block1, block2,
// block1, block2, head).

#include <doctest/doctest.h>

#include "package_fixture.hpp"
#include "wrapper/provenance.hpp"
#include "wrapper/wrapper.hpp"

using namespace aoti_bisect;

TEST_SUITE_BEGIN("wrapper/provenance");

TEST_CASE(
    "parse_wrapper: KernelContextGuard blocks give each call site its stacks; the call sites are the plain build's") {
  WrapperInfo w = parse_wrapper(fixture::text("provenance_both.wrapper.cpp"));
  REQUIRE(w.call_sites.size() == 9);  // as the default build of the same model
  CHECK(w.call_sites[1].kernel == "cpp_fused_relu_0");
  CHECK(w.call_sites[1].provenance_handle == "cpp_fused_relu_0:2");
  REQUIRE(w.call_sites[1].python_stacks.size() == 1);
  // The raw string's lines (the model's source) are never read as code.
  CHECK(w.call_sites[1].python_stacks[0].find("line 10, in forward") != std::string::npos);
  auto lines = source_lines(w.call_sites[1].python_stacks);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].text() == "m.py:10 in block1: return torch.relu(self.lin(x))          # line 10");
  // The same kernel launched again (block1 at line 29) is its own call site.
  CHECK(w.call_sites[5].kernel == "cpp_fused_relu_0");
  CHECK(w.call_sites[5].provenance_handle == "cpp_fused_relu_0:6");
  CHECK(source_lines(w.call_sites[5].python_stacks)[0].module == "block1");
  CHECK(w.call_sites[5].python_stacks[0].find("line 29, in forward") != std::string::npos);
  // An extern call inside nn.Linear: the user's line that calls it, the Linear's path.
  auto addmm = source_lines(w.call_sites[2].python_stacks);
  REQUIRE(addmm.size() == 1);
  CHECK(addmm[0].file == "m.py");
  CHECK(addmm[0].line == 17);
  CHECK(addmm[0].module == "block2.lin");
}

TEST_CASE("attach_kernel_information: provenance handles in comments, stacks from kernel_information.json") {
  WrapperInfo w = parse_wrapper(fixture::text("provenance_level1.wrapper.cpp"));
  REQUIRE(w.call_sites.size() == 9);
  CHECK(w.call_sites[3].provenance_handle == "cpp_fused_abs_add_log_1:4");
  CHECK(w.call_sites[3].python_stacks.empty());
  attach_kernel_information(w, fixture::text("provenance_level1.kernel_information.json"));
  auto lines = source_lines(w.call_sites[3].python_stacks);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].file == "m.py");
  CHECK(lines[0].line == 18);
  CHECK(lines[0].module == "block2");
  CHECK(lines[0].code == "return torch.log(y.abs() + 1.0)          # line 18");
  // The head: an addmm at the top module.
  auto head = source_lines(w.call_sites[8].python_stacks);
  REQUIRE(head.size() == 1);
  CHECK(head[0].line == 31);
  CHECK(head[0].module == "head");
  // Malformed JSON attaches nothing.
  WrapperInfo again = parse_wrapper(fixture::text("provenance_level1.wrapper.cpp"));
  attach_kernel_information(again, "{not json");
  CHECK(again.call_sites[3].python_stacks.empty());
}

TEST_CASE("source_lines: several fused nodes, library frames, submodule lists") {
  std::vector<std::string> stacks = {
      "File \"/home/u/proj/model.py\", line 40, in forward\n    h = self.layers[2](h)\n  File "
      "\"/home/u/proj/model.py\", line 12, in forward\n    return torch.sigmoid(c) * 2.0",
      "File \"/home/u/proj/model.py\", line 40, in forward\n    h = self.layers[2](h)\n  File "
      "\"/home/u/proj/model.py\", line 12, in forward\n    return torch.sigmoid(c) * 2.0",
      "File \"/home/u/proj/model.py\", line 41, in forward\n    out = self.norm(h)\n  File "
      "\"/usr/lib/python3/dist-packages/torch/nn/modules/normalization.py\", line 217, in forward\n    return "
      "F.layer_norm("};
  auto lines = source_lines(stacks);
  REQUIRE(lines.size() == 2);  // the same frame twice is one line
  CHECK(lines[0].text() == "model.py:12 in layers.2: return torch.sigmoid(c) * 2.0");
  CHECK(lines[1].text() == "model.py:41 in norm: out = self.norm(h)");
  CHECK(source_text(lines) ==
        "model.py:12 in layers.2: return torch.sigmoid(c) * 2.0; model.py:41 in norm: out = "
        "self.norm(h)");
  CHECK(source_lines({"no frames here"}).empty());
  // A line that calls two submodules does not say which one the next frame is in: no module past it.
  auto nested =
      source_lines({"File \"/p/m.py\", line 53, in forward\n    return self.head(self.encoder(h))\n  File "
                    "\"/p/m.py\", line 34, in forward\n    return torch.log(self.lin(x))"});
  REQUIRE(nested.size() == 1);
  CHECK(nested[0].text() == "m.py:34: return torch.log(self.lin(x))");
}
