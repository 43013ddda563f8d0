#pragma once
// A run over several batches (the runner's --batch-list): each batch's
// events are framed by "batch" and "batch_end"; the loop ends at the first
// batch that fails. What each batch showed, the events as one run of the
// last batch (what classification and the search read), and what
// distinguishes a failing batch from the ones that passed.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "classify/classify.hpp"
#include "protocol/events.hpp"
#include "protocol/values.hpp"

namespace aoti_bisect {

struct BatchRun {
  int index = 0;
  std::string file;                // as the runner was given it
  bool returned = false;           // its batch_end came: the model returned
  bool nonfinite = false;          // ... with NaN/Inf in its outputs
  bool error = false;              // it raised (--keep-going: the loop went on)
  std::vector<TensorInfo> inputs;  // what its file held, bound
  std::vector<TensorStats> input_stats;
  std::string problem;                 // why it does not fit the model, if it does not
  OutcomeKind kind = OutcomeKind::ok;  // what it showed (classify_batches)
  std::string first_line;
};

// One entry per batch that began, in order. Empty when the events have no
// batch frames (a one-batch run).
std::vector<BatchRun> batch_runs(const Events& events);

// The events as one run of the last batch that began: what earlier batches'
// runs wrote (inputs, statistics, outputs) is left out, the rest kept in
// order. Events without batch frames come back unchanged.
Events last_batch_view(const Events& events);

// Sets each batch's kind and first line: the last batch's from the whole
// run's classification (`last`), the others' from their own events.
void classify_batches(std::vector<BatchRun>& runs, const Events& events, const Classification& last);

// What the failing batch has that none of the passing ones has, one fact a
// line, naming the batch by `name` and inputs by position:
//   "batch4.pt: input 0 has shape [1, 16]; the other batches have [8, 16]"
//   "batch2.pt: input 1 is int32; the other batches hold int64"
//   "batch3.pt: input 0 holds 2 NaN and 0 Inf; the other batches hold none"
//   "batch2.pt: input 1 holds 4; the other batches hold 0..3" (integer values
//     outside the range the passing batches hold)
//   "sample 4: input 1 holds only 0; the samples that passed hold 0..1" (an
//     integer input of one value, where the others hold several: a mask
//     that is all padding)
// Nothing when there is no passing batch to compare with. `others` names
// the passing ones; `shapes`: whether a shape of its own is a fact (not for
// sub-batches of one batch, whose sizes differ by construction).
std::vector<std::string> distinguishing_facts(const BatchRun& failing, const std::vector<const BatchRun*>& passing,
                                              const std::string& name, const std::string& others = "the other batches",
                                              bool shapes = true);

}  // namespace aoti_bisect
