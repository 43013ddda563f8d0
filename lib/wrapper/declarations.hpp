#pragma once
// C function declarations read from source text: the cpp kernels'
// `extern "C" void NAME(params)` in a wrapper or kernel source, and the C
// shim's `AOTITorchError NAME(params);` in its header. The hook library
// (codegen/hooks) is generated from them, and the wrapper parser and the
// root cause read a kernel's parameters by name.

#include <map>
#include <string>
#include <vector>

namespace aoti_bisect {

struct HookParam {
  std::string type;  // as declared: "const float*", "AtenTensorHandle", "int64_t"
  std::string name;
};

// `extern "C" void NAME(params)` declarations (the cpp kernels) in a
// wrapper or kernel source.
std::map<std::string, std::vector<HookParam>> kernel_declarations(const std::string& source);

// `AOTI_TORCH_EXPORT AOTITorchError NAME(params);` declarations in C-shim
// header text.
std::map<std::string, std::vector<HookParam>> shim_declarations(const std::string& header_text);

}  // namespace aoti_bisect
