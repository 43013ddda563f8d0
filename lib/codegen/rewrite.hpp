#pragma once
// The wrapper rewrite (design: "Sources", B): the package's own wrapper.cpp
// with probe calls inserted around every call site, recompiled with the
// commands the package recorded, its kernels from its own kernel.cpp, and
// its weights cut out of its library and relinked unchanged. Pure text and
// argument work here; lib/search/source_rewrite.cpp runs the compilers.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// The wrapper source with, around each call site's statement,
// `aoti_torch_save_tensor_handle(X, "X", "before_launch", "K");` for each
// buffer and graph input it passes (the intermediate-value printer's level-1
// text), and the same with "after_launch" after it, outputs the call
// creates included. Call sites inside branches get them too. A Triton
// launch (`call_triton_<kernel>(buf1, fc_bias, 64L, this->device_idx_,
// ...)`) gets one line per tensor argument as written, constants included:
// the arguments its call_triton_<kernel> definition turns into CUdeviceptr
// (wrapper/triton_launch.hpp), as the printer does for the tensors among a
// Triton kernel's arguments.
//
// `only`: the call sites (1-based, the wrapper's source order) to probe;
// null probes all. `print`: the level-2 printer's text instead,
// `aoti_torch_print_tensor_handle(X, "before_launch - K - X");`, which
// prints min/max/mean to stdout (guide mode reads it).
struct ProbeText {
  const std::set<int>* only = nullptr;
  bool print = false;
};
std::string insert_probes(const std::string& wrapper_source, const WrapperInfo& wrapper, ProbeText how = {});

// The command recorded after `// Compile cmd` or `// Link cmd` at the end of
// a generated source, split into arguments; nullopt when absent.
std::optional<std::vector<std::string>> recorded_command(const std::string& source, std::string_view marker);

// A recorded compile command made to compile `source` into `output` on
// this machine: the source and -o replaced, the precompiled header (a /tmp
// file of the build machine) dropped.
std::vector<std::string> adapt_compile(std::vector<std::string> cmd, const std::string& source,
                                       const std::string& output);

// A recorded link command with its objects replaced by suffix
// (".wrapper.o", ".kernel.o", ".weights.o" -> path) and -o replaced.
std::vector<std::string> adapt_link(std::vector<std::string> cmd, const std::map<std::string, std::string>& objects,
                                    const std::string& output);

// Inductor's weights object as assembly: the blob `bin_file` between the two
// global labels the runtime looks up.
std::string weights_assembly(const std::string& bin_file, bool writable);

}  // namespace aoti_bisect
