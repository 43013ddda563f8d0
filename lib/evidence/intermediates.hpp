#pragma once
// What the culprit's replay with its intermediates checked showed
// (`repro/replay --intermediates`, whose kernel repro/intermediates.hpp
// writes): each statement that turned NaN (or Inf) while what it reads did
// not, read from the replay's `AOTI_TRACE {...}` lines.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace aoti_bisect {

// One intermediate that turned NaN (or Inf) while nothing it reads was, as
// the traced replay printed it (`AOTI_TRACE {...}` lines).
struct IntermediateHit {
  std::string kind;                                      // "nan" or "inf"
  int statement = 0;                                     // position in the kernel's own order
  std::string target;                                    // "tmp7"
  std::string text;                                      // "tmp7 = tmp6.log()"
  std::string value;                                     // "nan", "-inf"
  std::vector<std::pair<std::string, int64_t>> element;  // loop variables there, a vector's lane added
  int lane = 0;
  int lanes = 1;
  std::vector<std::pair<std::string, std::string>> operands;  // name, value there
  int64_t count = 0;                  // times it made them, over every place the kernel computes the same expression
  std::string output_tensor;          // the argument the element is stored into ("buf7"), "" unknown
  std::vector<int64_t> output_index;  // its index there
};

struct IntermediateTrace {
  bool ran = false;                   // the replay printed its report (AOTI_TRACE_END)
  int statements = 0;                 // intermediates probed
  std::vector<IntermediateHit> hits;  // in the kernel's order, NaN first
};

// Reads the traced replay's standard output.
IntermediateTrace read_intermediate_trace(const std::string& replay_stdout);

// The hits that name the operation: the first statement, in the kernel's
// own order, that introduced what the culprit introduced (`nan` when the
// culprit made NaN, else `inf`), one computed from intermediates before a
// literal; and where that NaN was made of Inf (inf - inf), the earlier
// statement that made the Inf from finite operands, first: {inf, nan}.
// Empty when none did.
std::vector<const IntermediateHit*> introduction(const IntermediateTrace& trace, bool made_nan);

}  // namespace aoti_bisect
