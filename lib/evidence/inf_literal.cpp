#include "evidence/inf_literal.hpp"

#include "classify/signature.hpp"
#include "common/text.hpp"
#include "package/wrapper_text.hpp"

namespace aoti_bisect {

bool writes_infinity_literal(const std::string& kernel_definition) {
  for (std::string_view line : wrapper_text::split_lines(kernel_definition)) {
    bool literal = line.find("::infinity()") != std::string_view::npos ||
                   line.find("INFINITY") != std::string_view::npos;
    if (literal && line.find("_acc") == std::string_view::npos) {
      return true;
    }
  }
  return false;
}

bool triton_writes_infinity_literal(const std::string& triton_source) {
  for (std::string_view line : wrapper_text::split_lines(triton_source)) {
    bool literal = line.find("float(\"-inf\")") != std::string_view::npos ||
                   line.find("float(\"inf\")") != std::string_view::npos ||
                   line.find("float('-inf')") != std::string_view::npos ||
                   line.find("float('inf')") != std::string_view::npos;
    std::string_view t = trim(line);
    // Not a block's padding for a reduction (`tl.where(xmask, tmp4,
    // float("-inf"))`) nor an accumulator's initial value (`_tmp3 = tl.full(...)`).
    if (literal && line.find("mask") == std::string_view::npos && t.rfind("_tmp", 0) != 0) {
      return true;
    }
  }
  return false;
}

std::string triton_kernel_source(const std::string& wrapper_source, const std::string& kernel) {
  std::string head = "async_compile.triton('" + kernel + "', '''";
  size_t at = wrapper_source.find(head);
  if (at == std::string::npos) {
    return "";
  }
  at += head.size();
  size_t end = wrapper_source.find("'''", at);
  return wrapper_source.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::set<std::string> inf_by_design_kernels(const std::string& kernel_source, const std::string& wrapper_source,
                                            const std::vector<CallSite>& sites) {
  std::set<std::string> out;
  for (const auto& site : sites) {
    if (out.count(site.kernel) > 0) {
      continue;
    }
    bool literal = false;
    if (site.kind == KernelKind::cpp && !kernel_source.empty()) {
      literal = writes_infinity_literal(kernel_definition(kernel_source, site.kernel));
    } else if (site.kind == KernelKind::triton && !wrapper_source.empty()) {
      literal = triton_writes_infinity_literal(triton_kernel_source(wrapper_source, site.kernel));
    }
    if (literal) {
      out.insert(site.kernel);
    }
  }
  return out;
}

}  // namespace aoti_bisect
