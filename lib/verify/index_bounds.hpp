#pragma once
// Integer inputs that index a table, with the bound the package itself
// names: Inductor guards an indirect load with a check whose message holds
// the bound ("index out of bounds: 0 <= tmp6 < 50L", or "tmp10 < 32L" for
// an index it knows is not negative). The checked value is followed back
// through the kernel's `auto tmpN = ...;` statements to the kernel
// parameters it is read from (`in_ptr0[...]`), and those to the graph
// inputs the call site passes there. A bound held in a symbol (`< ks0`)
// is no constant: not reported. Where no check guards it (a package built
// with assert_indirect_indexing=False), an index that reads a row of a
// constant table (`in_ptr1[x1 + 16L*tmp5]` into a [50, 16] weight) has the
// table's rows as its bound. verify makes its boundary neighbours from
// these (0 and bound - 1).

#include <cstdint>
#include <string>
#include <vector>

#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

struct IndexBound {
  int input = 0;       // flat input index (wrapper.inputs order)
  int64_t bound = 0;   // valid indices: [0, bound)
  int call_index = 0;  // the call site whose kernel checks it (1-based)
  std::string kernel;
  std::string table;  // no check: the constant whose rows it reads ("tok.weight"); "" for a check
};

// Every graph input read, directly or through the kernel's own arithmetic
// (a clamp, a wrap of negative indices), into an index check with a
// constant bound; one entry per input, its smallest bound. `kernel_source`:
// the package's kernel.cpp (the cpp kernels' definitions).
std::vector<IndexBound> index_bounds(const WrapperInfo& wrapper, const std::string& kernel_source);

// One kernel's checks: parameter name ("in_ptr0") -> the smallest constant
// bound a value read from it is checked against. Exposed for tests.
std::vector<std::pair<std::string, int64_t>> checked_parameters(const std::string& kernel_definition);

// One kernel's indirect loads: a value read from parameter `index_param`
// used as `stride * tmpN` in the offset of a load from `table_param`.
// Exposed for tests.
struct TableRead {
  std::string index_param;
  std::string table_param;
  int64_t stride = 1;
};
std::vector<TableRead> table_reads(const std::string& kernel_definition);

}  // namespace aoti_bisect
