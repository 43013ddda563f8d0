#pragma once
// failure.signature: one string that names a bug the same way across runs,
// machines, paths and rebuilds of the package, so that a nightly job can
// tell today's failure from yesterday's and group cases that share a bug.
//
// The recipe (version 1), documented in docs/reports.md "Failure signatures":
//   isolated:  KIND/KERNEL/H  where KERNEL is the culprit kernel's name
//              without Inductor's numeric suffix ("cpp_fused_div_log"), and
//              H = sha256("aoti-bisect-signature-1\nKIND\nKERNEL\nS\nFLAGS")
//              cut to 12 hex digits, with S = sha256 of the culprit's
//              normalized source ("" when the package ships none, e.g. an
//              extern call) and FLAGS the reproducing variant's variables,
//              sorted, "NAME=VALUE" joined by ' '.
//   otherwise: KIND/-/H  with H = sha256 of "aoti-bisect-signature-1\nKIND\n
//              LINE\nFLAGS", LINE the first error line normalized.
// Normalizing source: comments and preprocessor lines dropped, whitespace
// collapsed, and every identifier's trailing numbering ("buf12", "tmp3",
// "arg4_1", "cpp_fused_div_3") replaced by '#'. Normalizing an error line:
// paths, hex addresses and numbers replaced by placeholders.

#include <map>
#include <string>

namespace aoti_bisect {

inline constexpr const char* k_signature_recipe = "aoti-bisect-signature-1";

// "cpp_fused_div_log_3" -> "cpp_fused_div_log"; "triton_poi_fused_add_0_1"
// -> "triton_poi_fused_add"; a name without numbering unchanged.
std::string kernel_base_name(const std::string& kernel);

// The definition `extern "C" void NAME(...) { ... }` in a kernel source
// (kernel.cpp), braces matched; "" when absent.
std::string kernel_definition(const std::string& kernel_source, const std::string& name);

std::string normalize_kernel_source(const std::string& source);
std::string normalize_error_line(const std::string& line);

struct SignatureInput {
  std::string kind;                          // outcome name: "crash", "nonfinite", ...
  std::string kernel;                        // the culprit's kernel; "" when nothing was isolated
  std::string kernel_source;                 // its definition; "" when unknown
  std::map<std::string, std::string> flags;  // the reproducing variant's variables
  std::string first_line;                    // used when nothing was isolated
};

std::string failure_signature(const SignatureInput& in);

}  // namespace aoti_bisect
