// Infinity by design: whether a cpp or Triton kernel's own code writes an infinity literal (not a
// reduction's initial value), and which kernels of the call sites do.

#include "evidence/inf_literal.hpp"

#include <set>

#include "classify/signature.hpp"
#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "wrapper/wrapper_text.hpp"

namespace aoti_bisect {

namespace {

bool infinity_literal(std::string_view text) {
  return text.find("::infinity()") != std::string_view::npos || text.find("INFINITY") != std::string_view::npos;
}

// A comparison's result is a mask: no infinity flows through it.
bool compares(std::string_view expr) {
  for (std::string_view op : {" == ", " != ", " < ", " > ", " <= ", " >= "}) {
    if (expr.find(op) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

bool names_any(std::string_view text, const std::set<std::string>& names) {
  for (size_t i = 0; i < text.size();) {
    if (cpp_text::is_ident_char(text[i]) && (i == 0 || !cpp_text::is_ident_char(text[i - 1]))) {
      size_t e = i;
      while (e < text.size() && cpp_text::is_ident_char(text[e])) {
        ++e;
      }
      if (names.count(std::string(text.substr(i, e - i))) > 0) {
        return true;
      }
      i = e;
    } else {
      ++i;
    }
  }
  return false;
}

}  // namespace

// The literal counts where what is computed from it reaches a store (or an
// accumulator): `where(mask, -inf, x)` stored is a mask by design; an
// `isinf` test (`abs(x) != inf`, a comparison) and a reduction's initial
// value (`tmp_acc0 = -inf`) are not.
bool writes_infinity_literal(const std::string& kernel_definition) {
  std::set<std::string> from_literal;
  for (std::string_view raw : wrapper_text::split_lines(kernel_definition)) {
    std::string_view line = trim(raw);
    size_t eq = line.find(" = ");
    bool store = line.find(".store(") != std::string_view::npos ||
                 (eq != std::string_view::npos && line.substr(0, eq).find('[') != std::string_view::npos);
    if (eq == std::string_view::npos && !store) {
      continue;
    }
    std::string_view lhs = eq == std::string_view::npos ? line : line.substr(0, eq);
    std::string_view expr = eq == std::string_view::npos ? line : line.substr(eq + 3);
    bool fed = !compares(expr) && (infinity_literal(expr) || names_any(expr, from_literal));
    std::string target;
    for (size_t i = lhs.size(); i > 0 && cpp_text::is_ident_char(lhs[i - 1]); --i) {
      target = std::string(1, lhs[i - 1]) + target;
    }
    bool accumulator = target.find("_acc") != std::string::npos;
    if (store || (accumulator && !infinity_literal(expr))) {
      if (fed || (store && names_any(line.substr(0, line.find(".store(")), from_literal))) {
        return true;
      }
      continue;
    }
    if (fed && !accumulator && !target.empty()) {
      from_literal.insert(target);
    } else {
      from_literal.erase(target);  // the name holds another value (kernels reuse tmpN in each loop nest)
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
  std::set<std::string> read;  // each kernel's source read once, however many sites call it
  for (const auto& site : sites) {
    if (!read.insert(site.kernel).second) {
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
