#pragma once
// Where a call site comes from in the model's Python source, from the stack
// traces a package carries (wrapper/wrapper.hpp CallSite::python_stacks:
// KernelContextGuard blocks, kernel_information.json): for each graph node
// the call computes, the innermost frame of the model's own code (frames in
// torch's own files skipped) and the module path the calls on the way name
// (`self.block2(a)` then `self.lin(x)`: "block2.lin").

#include <string>
#include <string_view>
#include <vector>

namespace aoti_bisect {

struct PythonFrame {
  std::string file;  // as the trace writes it (a full path)
  int line = 0;
  std::string function;  // "forward"
  std::string code;      // the line of source, trimmed
};

// `File "m.py", line 28, in forward\n    b = self.block2(a)\n  File ...`,
// outermost first; lines of another shape are skipped.
std::vector<PythonFrame> parse_python_stack(std::string_view stack);

struct SourceLine {
  std::string file;  // the file's name only (reports carry no private paths)
  int line = 0;
  std::string function;
  std::string code;
  std::string module;  // "block2.lin"; "" at the top module
  // "m.py:18 in block2: return torch.log(y.abs() + 1.0)"
  std::string text() const;
};

// One line per distinct user frame the stacks end in, in their order.
std::vector<SourceLine> source_lines(const std::vector<std::string>& stacks);

// "m.py:18 in block2: ...; m.py:29: ..." ("" for none).
std::string source_text(const std::vector<SourceLine>& lines);

}  // namespace aoti_bisect
