#pragma once
// What the generated wrapper source (<stem>.wrapper.cpp, or the single .cpp
// of older versions) tells without running it: the kernel call sites run_impl
// launches, in order; whether printer probes are compiled in; what inputs the
// model takes (from its generated input checks).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "wrapper/constants.hpp"

namespace aoti_bisect {

enum class KernelKind { cpp, triton, extern_call };
std::string_view kernel_kind_name(KernelKind kind);  // "cpp", "triton", "extern"

struct CallSite {
  int index = 0;       // 1-based, in source order
  std::string kernel;  // "cpp_fused_log_relu_sub_0", "aoti_torch_cpu_addmm_out"
  KernelKind kind = KernelKind::cpp;
  int line = 0;                      // 1-based line in the wrapper source
  std::string source_nodes;          // "[relu, sub, log]" from the preceding comment, if any
  std::vector<std::string> returns;  // buffers an extern call creates and returns (`&buf3_handle`):
                                     // the printer never shows them at this site
  bool probed = false;               // an instrumented wrapper prints this site's tensors before its launch
                                     // (false for sites the printer skips, e.g. inside torch.cond branches)
  // What each argument of the call names, by position: "buf3" for
  // `(float*)(buf3.data_ptr())`, `buf3` and `&buf3_handle`; "view of buf3"
  // for a reinterpret_tensor_wrapper(buf3, ...) view; "" for scalars.
  std::vector<std::string> args;
  // A list argument's tensors by position (`std::array<AtenTensorHandle,
  // 2>{buf2, buf4}.data()` -> {"buf2", "buf4"}); empty for other arguments.
  // Sized like `args` where any argument is a list, else empty.
  std::vector<std::vector<std::string>> elements;
  // A custom operator called through AOTInductor's proxy executor
  // (`aoti_torch_proxy_executor_call_function(proxy_executor, N, ...)`):
  // N, its node in the package's extern-node JSON; -1 for other calls. Its
  // `kernel` is the operator ("myops::scaled_log") once name_proxy_calls ran.
  int extern_node = -1;
  // Where the call comes from in the model's Python source, where the
  // package carries it: the stack traces of the graph nodes it computes,
  // outermost frame first ("File \"m.py\", line 28, in forward\n    b =
  // self.block2(a)\n  File ..."), one per node, from the wrapper's
  // KernelContextGuard (cpp.enable_kernel_profile) or, by the call's
  // `// [Provenance debug handles] K:H` comment, the package's
  // kernel_information.json (trace.provenance_tracking_level).
  std::vector<std::string> python_stacks;
  std::string provenance_handle;  // "cpp_fused_relu_0:2" from that comment; "" without one
  // The post-grad graph nodes the package's kernel_information.json says
  // the call computes ("log", "sub_1"), by that handle; empty without one.
  std::vector<std::string> post_grad_nodes;
  // The subgraph the call sits in ("true_graph_0": a torch.cond branch), from
  // its arguments' names (subgraph code prefixes every tensor with it); "" at top level.
  std::string branch;
  // Argument positions whose kernel parameter is `in_out_ptrN` (a kernel
  // that reads the buffer and writes it in place), from a cpp kernel's
  // declaration or a Triton kernel's call_triton_<kernel> definition.
  std::vector<int> in_out;
  // "[aten.relu, aten.sub, aten.log]" from the source-nodes comment ("Original ATen: ..."), if any.
  std::string aten_ops;
};

// Buffer name -> the call site (1-based) that returns it.
std::map<std::string, int> returned_buffers(const std::vector<CallSite>& sites);

struct InputSpec {
  int index = 0;
  std::string name;                           // "arg4_1"
  std::string dtype;                          // "float32"; "" when unknown
  std::vector<std::optional<int64_t>> shape;  // nullopt for a dynamic dim; empty when unknown
  std::vector<std::optional<int64_t>> strides;
  std::vector<std::optional<int64_t>> dim_min;  // bounds of dynamic dims, where the checks name them
  std::vector<std::optional<int64_t>> dim_max;
  std::optional<int> device_type;  // 0 cpu, 1 cuda, ...
  bool known() const { return !dtype.empty(); }
};

struct WrapperInfo {
  bool found = false;
  std::vector<CallSite> call_sites;
  bool instrumented = false;      // printer calls present (any level)
  int printer_level = 0;          // 1 save, 2 print, 3 names; 0 none
  std::optional<int> num_inputs;  // from steal_from_raw_handles_to_raii_handles
  std::vector<InputSpec> inputs;  // from the generated check_input_<i> functions
  // `auto bufA = std::move(bufB);` in run_impl, in order, as (bufA, bufB):
  // bufA holds what bufB held (buffer reuse); also `auto bufA =
  // wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(bufB, ...));
  // bufB.reset();  // reuse` (a view of bufB's memory under a new name).
  std::vector<std::pair<std::string, std::string>> moves;
  // The moves that carry a value on (not `auto bufA = std::move(bufB);  // reuse`
  // of a dead buffer's memory): a torch.cond branch's result
  // (`buf5 = std::move(true_graph_0_buf0);`) and a subgraph's inputs
  // (`aoti_torch_assign_tensors_out(emb_weight, &true_graph_0_arg1_1_handle)`).
  std::vector<std::pair<std::string, std::string>> value_moves;
  // Views of a live buffer under another name, as (view, base): `auto bufA =
  // wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(bufB, ...));
  // // alias` with bufB kept (the parts of a concatenation written in place).
  // What is written through bufA is in bufB's bytes, and bufB's in bufA's.
  std::vector<std::pair<std::string, std::string>> aliases;
  // `auto& w0 = constants_->at(0);` at the top of run_impl: the names the
  // wrapper gives the model's constants, by index.
  std::vector<std::string> constants;
  // The constructor's constants_info_: each constant's original module path
  // ("bn.running_var") and kind (parameter, buffer).
  std::vector<ConstantInfo> constant_info;
  // What each output handle is released from, by output index
  // (`output_handles[0] = buf4.release();`): the buffer, graph input or
  // constant name, a view (`auto var_0 = ...reinterpret_tensor_wrapper(buf5,
  // ...)`) resolved to its buffer; "" where the text says nothing plain.
  std::vector<std::string> outputs;
  // The call spec's treespecs as the wrapper records them (`in_spec_ =
  // R"(...)"`, inputs/call_spec.hpp); "" when absent.
  std::string in_spec;
  std::string out_spec;
  // The operators proxy-executor calls run, by extern node (name_proxy_calls).
  std::vector<std::string> proxy_ops;
  // Those defined in Python (torch.library.custom_op: the node's metadata
  // says torch_library_custom_op), whose kernel is Python code.
  std::vector<std::string> python_ops;
};

// The function a call site calls: its kernel, or for an operator run
// through the proxy executor, aoti_torch_proxy_executor_call_function.
std::string called_symbol(const CallSite& site);
inline constexpr std::string_view k_proxy_call = "aoti_torch_proxy_executor_call_function";

// Gives each call site with a provenance handle the stack traces the
// package's kernel_information.json records for it ({"K:H": {"stack_traces":
// [...], "post_grad_nodes": [...], ...}}), where the wrapper did not carry
// them itself, and the post-grad nodes it computes. Malformed JSON gives
// nothing.
void attach_kernel_information(WrapperInfo& info, const std::string& kernel_information_json);

// "myops::scaled_log.out" -> {"myops::scaled_log", "out"}; ".default" and
// no overload are "" (how the dispatcher names them).
struct OperatorName {
  std::string name;
  std::string overload;
};
OperatorName split_operator_name(const std::string& target);

// Names each proxy-executor call site by the operator its extern node runs,
// from the package's extern-node JSON (`<stem>.wrapper.json` or
// `<stem>.json`: {"nodes": [{"name": ..., "node": {"target": "myops::op",
// ...}}]}). Sites whose node the JSON does not name keep the shim's name.
void name_proxy_calls(WrapperInfo& info, const std::string& extern_json);

// The arguments of a call's parenthesized text, "(buf3, f(a, b),
// std::array<int64_t, 2>{1L, 1L}.cbegin(), 2)", split at its top-level
// commas (a template's comma is not one), each trimmed.
std::vector<std::string> split_call_arguments(std::string_view parenthesized);

// "view of buf3" -> "buf3"; any other name unchanged.
std::string base_tensor_name(const std::string& name);

// A graph input as the wrapper names it: "arg4_1", or inside a subgraph
// (a torch.cond branch) "true_graph_0_arg0_1", which holds what the
// enclosing graph passed in. Either way written before the code runs.
bool is_graph_input_name(const std::string& name);
// A buffer or graph input ("buf3", "true_graph_0_buf1", "arg4_1", ...).
bool is_tensor_variable_name(const std::string& name);

// Buffer name -> the call site that created what it holds: the buffers
// extern calls return, and the names they are moved to afterwards. With
// `through_reuse` (the default), also the names a reuse gives their memory
// (`auto bufA = std::move(bufB);  // reuse`, or a reinterpret_tensor_wrapper
// view of it): what an in-place kernel reads there before its launch is the
// extern call's output, but the name holds another graph node's value once
// that kernel ran. Without it, only moves that carry the value on
// (WrapperInfo::value_moves): the names whose graph node the call computed.
std::map<std::string, int> returned_buffers(const WrapperInfo& wrapper, bool through_reuse = true);

WrapperInfo parse_wrapper(const std::string& source);

}  // namespace aoti_bisect
