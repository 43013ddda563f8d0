#pragma once
// The neighbours of a failing input, planned from what the package and the
// inputs say (never from the model's Python): the batch cut and repeated
// along the package's own batch dimension (each failing sample alone, one
// sample, the compiled minimum and maximum, one sample fewer, twice as
// many), every other dynamic size at its compiled minimum and maximum (the
// tensors that share it cut together), and each integer input the package
// checks as an index filled with 0 and its largest valid value. Pure: the
// runner makes the files (protocol/input_cut.hpp), verify runs them
// (verify/verify.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/input_cut.hpp"
#include "verify/index_bounds.hpp"
#include "wrapper/batch_dim.hpp"

namespace aoti_bisect {

struct NeighbourFacts {
  std::vector<std::vector<int64_t>> shapes;  // the original inputs' flat shapes, in the model's order
  std::vector<std::string> names;            // their arguments as the call spec names them ("input_ids"), or ""
  BatchDimension batch;                      // wrapper/batch_dim.hpp
  std::vector<DynamicDimension> dims;        // every dynamic size (the batch's among them)
  std::vector<int64_t> failing_samples;      // the run's minimal failing set, numbered from 1
  bool minimal_file = false;                 // the run wrote it (repro/minimal.inputs.pt)
  std::vector<IndexBound> bounds;            // verify/index_bounds.hpp
  // A neighbour at most this many times the original's size along the
  // dimension it changes; larger ones are named in the notes, not made.
  int64_t max_growth = 16;
};

struct Neighbour {
  enum class Base { original, minimal };
  std::string name;  // "batch-1", "input0-dim1-max", "input0-index-49"
  std::string what;  // "batch of 1 sample (the last batch of a loader)"
  Base base = Base::original;
  InputCut cut;      // empty: the base as it is
  std::string note;  // "below the compiled minimum 2: run with the package's input checks off"
};

struct NeighbourPlan {
  std::vector<Neighbour> cases;    // "original" first
  std::vector<std::string> notes;  // what was not made, and why
};

NeighbourPlan plan_neighbours(const NeighbourFacts& facts);

// The rows 0..k-1 of a size-n dimension, repeated from the start past n.
std::vector<int64_t> cyclic_rows(int64_t n, int64_t k);

}  // namespace aoti_bisect
