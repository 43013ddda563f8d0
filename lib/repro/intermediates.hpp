#pragma once
// The operation inside a fused cpp kernel, from evidence: the culprit's
// definition rewritten so that every intermediate it computes is checked
// (kernel.traced.cpp in the replay folder, built by `replay --intermediates`
// on the tensors the evidence run saved), and the replay's report of the
// first intermediate that turned NaN (or Inf) while what it reads did not.
//
// Inductor's cpp kernels compute in `auto tmpN = EXPR;` statements (scalars,
// at::vec::Vectorized, VectorizedN, masks) and accumulate reductions in
// `tmp_accN = EXPR;`. After each such statement the traced kernel calls
// aoti_trace::probe (resources/intermediate_probes.h) with the value, the
// intermediates EXPR reads (an accumulator's value from before the
// statement), the loop variables in scope, and the address the kernel
// stores what follows from it to, where that store is in the same loop body.
// Loads from memory are not probed: their values are the kernel's inputs.
// Text generation only; nothing here runs the kernel.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace aoti_bisect {

struct TracedStatement {
  int id = 0;
  std::string target;                 // "tmp7"
  std::string text;                   // "tmp7 = tmp6.log()"
  std::vector<std::string> operands;  // the intermediates it reads, as passed
  std::vector<std::string> loops;     // loop variables in scope, outermost first
  int vector_loop = -1;               // the one a vector's lanes run along (position in `loops`), -1 none
  bool stored = false;                // the probe is given the address of a store that follows from it
};

struct TracedKernel {
  std::string source;  // kernel.traced.cpp: the probe header, the statement table, the kernel
  std::vector<TracedStatement> statements;
  std::string problem;  // why the kernel cannot be traced; "" when it can
};

// `kernel_cpp`: the replay's kernel.cpp (replay_kernel_source: includes, then
// the definition of `kernel`). `probe_header`: resources/intermediate_probes.h.
TracedKernel trace_intermediates(const std::string& kernel_cpp, const std::string& kernel,
                                 const std::string& probe_header);

}  // namespace aoti_bisect
