// The user's operator libraries (--load-library) and the custom operators a
// package runs through AOTInductor's proxy executor: loaded, and checked
// before the model loads, so that a missing one is named with what to do
// rather than as the loader's "Could not find schema for ..." alone.

#include <dlfcn.h>

#include <algorithm>

#include <ATen/core/dispatch/Dispatcher.h>
#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"
#include "torchside/torchside.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect::torchside {

void load_libraries(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    // Global: the model's operators resolve against what the library
    // registers, and a library of several may use another's symbols.
    if (::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = ::dlerror();
      throw Error(ErrorKind::cannot_test,
                  fmt::format("library '{}' (--load-library) cannot be loaded: {}; give a shared library built "
                              "against this runner's torch",
                              path, why != nullptr ? why : "unknown error"));
    }
  }
}

std::vector<std::string> unregistered_operators(const std::vector<std::string>& ops) {
  std::vector<std::string> out;
  for (const auto& op : ops) {
    auto [name, overload] = split_operator_name(op);
    if (!c10::Dispatcher::singleton().findSchema({name, overload}).has_value()) {
      out.push_back(op);
    }
  }
  return out;
}

void require_operators(const std::vector<std::string>& ops, const std::vector<std::string>& python_ops,
                       const std::vector<std::string>& libraries, const std::string& model) {
  std::vector<std::string> missing = unregistered_operators(ops);
  if (missing.empty()) {
    return;
  }
  std::vector<std::string> python;
  for (const auto& op : missing) {
    if (std::find(python_ops.begin(), python_ops.end(), op) != python_ops.end()) {
      python.push_back(op);
    }
  }
  if (!python.empty()) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("model '{}' calls {} through AOTInductor's proxy executor, {} Python custom operator{} "
                            "(torch.library.custom_op): {} kernel is Python code, which the runner (C++, no Python) "
                            "cannot call; give it a C++ kernel (TORCH_LIBRARY) and load that library with "
                            "--load-library PATH",
                            model, join(python, ", "), python.size() == 1 ? "a" : std::to_string(python.size()),
                            python.size() == 1 ? "" : "s", python.size() == 1 ? "its" : "their"));
  }
  std::string which = fmt::format("{} operator{} {}", missing.size() == 1 ? "an" : std::to_string(missing.size()),
                                  missing.size() == 1 ? "" : "s", join(missing, ", "));
  std::string loaded = libraries.empty()
                           ? "no library given with --load-library registers it"
                           : fmt::format("none of the libraries given with --load-library ({}) registers {}",
                                         join(libraries, ", "), missing.size() == 1 ? "it" : "them");
  throw Error(ErrorKind::cannot_test,
              fmt::format("model '{}' calls {} through AOTInductor's proxy executor, and {}: give the shared library "
                          "that defines {} (TORCH_LIBRARY) with --load-library PATH; an operator defined only in "
                          "Python (torch.library.custom_op) has no C++ kernel and cannot run in a package, so give "
                          "it one",
                          model, which, loaded, missing.size() == 1 ? "it" : "them"));
}

}  // namespace aoti_bisect::torchside
