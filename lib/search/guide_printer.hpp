#pragma once
// Guide mode's reading of the level-2 printer's output
// (aoti_torch_print_tensor_handle): the printed blocks, the call site each
// belongs to, and the run trace and step answer they make. The mode itself:
// guide_mode.hpp.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bisect/bisect.hpp"
#include "evidence/evidence.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

// One block of the level-2 printer's output (aoti_torch_print_tensor_handle):
//   [  after_launch - cpp_fused_log_2 - buf7  ]:
//   <element values, small tensors only>
//   Number of elements: 256
//   Dtype: float32
//   Mean value: -nan
//   Min value: -nan
//   Max value: -nan
//   Device: cpu
//   Size: [8, 32]
//   ...
// Model inputs print as "[  aoti_model_inputs - arg10_1  ]:".
struct PrintedTensor {
  std::string phase;   // "before_launch", "after_launch", "aoti_model_inputs"
  std::string kernel;  // "" for model inputs
  std::string tensor;  // "buf7", "arg10_1"
  std::string dtype;   // "float32"
  std::vector<int64_t> shape;
  int64_t numel = 0;
  std::optional<double> min;  // NaN and Inf kept as such; absent when not printed
  std::optional<double> max;
  std::optional<double> mean;
  bool has_nonfinite = false;  // min, max or mean is NaN or +-Inf
};

// Every block in `text`, in order; lines that belong to no block are
// ignored (the child may print other things).
std::vector<PrintedTensor> parse_printer_output(std::string_view text);

// For each call site of a level-2 wrapper (`sites`, parsed from `source`),
// its kernel name when printer calls for that kernel precede its launch,
// else "" (not in the filter, or no argument the printer takes).
std::vector<std::string> printing_kernels(const std::string& source, const std::vector<CallSite>& sites);

// The same for the package's own wrapper rewritten with level-2 print calls
// around the call sites in `only` (insert_probes with ProbeText{&only,
// true}): a site's kernel name when the rewrite prints its tensors, else ""
// (outside `only`, or no tensor argument). One entry per call site of
// `wrapper`, in its order.
std::vector<std::string> range_printing(const WrapperInfo& wrapper, const std::set<int>& only);

// The printed blocks of one call site.
struct PrintedSite {
  int site = 0;  // 1-based, in the wrapper's call-site list
  std::string kernel;
  std::vector<PrintedTensor> before;  // in print order
  std::vector<PrintedTensor> after;   // empty when the launch never returned
  // Tensors of `before` known to hold written data: graph inputs (arg*) and
  // tensors printed after an earlier site's launch. Any other before-launch
  // block may be an output buffer nothing has written yet.
  std::set<std::string> initialized;
};

struct SiteMapping {
  std::vector<PrintedSite> sites;  // in run order
  std::string problem;             // why the blocks do not fit the call sites; "" when they do
};

// Groups the blocks into call sites by occurrence: the filter is by kernel
// name, so the k-th group printed for kernel K belongs to the k-th site whose
// entry in `printing` (see printing_kernels) is K. A group is a site's
// before-launch blocks followed by its after-launch blocks.
SiteMapping map_printed_sites(const std::vector<PrintedTensor>& printed, const std::vector<std::string>& printing);

// The printed sites as a run trace (NaN/Inf counts are flags; a site whose
// after-launch blocks never came is where the run stopped).
RunTrace trace_from_printer(const SiteMapping& mapping);

// A printed block's statistics (counts are 0/1 flags).
TensorStats stats_of(const PrintedTensor& t);

// One guide-mode run's answer to "is the first bad site in [lo, hi]?".
// `inf_by_design`: as first_introducer's.
Probe guide_answer(Predicate pred, OutcomeKind expected, const Classification& cls, const SiteMapping& mapping, int lo,
                   int hi, const std::set<std::string>& inf_by_design = {});

}  // namespace aoti_bisect
