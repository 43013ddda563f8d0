#pragma once
// Which dimension of a package's inputs is the batch, read from the
// package's own dynamic dimensions, never guessed from the inputs' shapes:
// the generated input checks say which dimensions are dynamic and their
// compiled range (wrapper.hpp InputSpec), and run_impl declares one symbol
// per dynamic size it uses (`int64_t s77 = arg4_1_size[0];`), and aliases a
// size of another input the graph knows equals one of them (`int64_t s77 =
// s31;`: a mask's batch and length beside its sequence's), which ties that
// input's dynamic dimension of the same compiled range to it. The batch is
// dimension 0 of the inputs whose dimension 0 is dynamic, when they share
// one symbol; the job shrinks a failing batch along it (job/shrink.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

struct BatchDimension {
  enum class Kind {
    dynamic,    // `inputs` share a dynamic dimension 0
    fixed,      // no input's dimension 0 is dynamic; all of them are `size`
    ambiguous,  // dynamic dimensions 0 that may not be one: `why`
    unknown     // the wrapper says nothing usable: `why`
  };
  Kind kind = Kind::unknown;
  std::vector<int> inputs;          // dynamic: flat input indices whose dimension 0 is the batch
  std::optional<int64_t> min, max;  // dynamic: the compiled range, where the checks bound it
  std::string symbol;               // dynamic: "s77", where run_impl declares it
  int64_t size = 0;                 // fixed: the one batch the package takes
  std::string why;
};

// `wrapper`: the parsed wrapper (its inputs' checks); `wrapper_source`: its
// text (the symbol declarations).
BatchDimension batch_dimension(const WrapperInfo& wrapper, const std::string& wrapper_source);

// Every dynamic size of the inputs: the (input, dimension) pairs run_impl
// reads into one symbol are one size (a sequence length shared by the ids,
// their mask and positions); a dynamic dimension no symbol names is a size
// of its own. The compiled range where the checks bound it. In the order of
// the inputs and dimensions.
struct DynamicDimension {
  std::string symbol;                        // "s1"; "" where run_impl declares none
  std::vector<std::pair<int, int>> members;  // (flat input index, dimension)
  std::optional<int64_t> min, max;
};
std::vector<DynamicDimension> dynamic_dimensions(const WrapperInfo& wrapper, const std::string& wrapper_source);

}  // namespace aoti_bisect
