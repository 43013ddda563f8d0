#pragma once
// Inputs made from other inputs, by the runner (torchside load_inputs): the
// rows of a dimension taken (cut, reordered, repeated) across the inputs
// that share it, and integer inputs filled with one value. The shrinking of
// a batch takes rows of dimension 0 (--samples); verify makes its
// neighbours with every kind (verify/neighbours.hpp) through the runner's
// --make-inputs, whose request and answer are here as JSON. The flat input
// indices are the model's, after the call spec bound the file.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aoti_bisect {

struct InputCut {
  struct Take {
    int dim = 0;
    std::vector<int> inputs;    // flat input indices that share the dimension
    std::vector<int64_t> rows;  // the indices along it, in order (repeats allowed)
  };
  struct Fill {
    int input = 0;
    int64_t value = 0;
  };
  std::vector<Take> takes;
  std::vector<Fill> fills;
  bool empty() const { return takes.empty() && fills.empty(); }
};

// The runner's --make-inputs request: each case's base file cut and saved in
// the base file's own form (a tuple, a dict of keyword arguments).
struct MakeInputsRequest {
  struct Case {
    std::string name;
    std::filesystem::path base;
    std::filesystem::path out;
    InputCut cut;
    // The base's reference outputs, cut with it where the cut takes rows of
    // the batch alone and every output has the batch as dimension 0; empty:
    // none.
    std::filesystem::path reference;
    std::filesystem::path reference_out;
  };
  std::filesystem::path model_facts;  // the binding of a file to the flat inputs
  std::vector<Case> cases;
  std::filesystem::path result;  // where the answer goes
};

// Its answer, one per case: the flat inputs' shapes as saved, or why not.
struct MadeInputs {
  std::string name;
  std::vector<std::vector<int64_t>> shapes;
  std::string error;
  bool reference_made = false;
  std::string reference_note;  // why the reference was not cut
};

nlohmann::json to_json(const InputCut& cut);
InputCut input_cut_from_json(const nlohmann::json& j);
nlohmann::json to_json(const MakeInputsRequest& r);
MakeInputsRequest make_inputs_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const std::vector<MadeInputs>& made);
std::vector<MadeInputs> made_inputs_from_json(const nlohmann::json& j);

// The runner's --compare-outputs request: each pair's outputs compared
// element by element where both are finite, under per-dtype tolerances
// (protocol/values.hpp ToleranceTable as JSON).
struct CompareOutputsRequest {
  struct Pair {
    std::string name;
    std::filesystem::path actual;    // the fixed package's outputs
    std::filesystem::path expected;  // the failing package's, on the same inputs
  };
  std::vector<Pair> pairs;
  nlohmann::json tolerances;
  std::filesystem::path result;
};

// How far a pair's outputs are apart.
struct OutputsApart {
  std::string name;
  int compared = 0;         // outputs of the same shape and dtype, compared
  int64_t elements = 0;     // elements finite on both sides
  double max_abs = 0;       // over them
  double max_rel = 0;       // max_abs over the expected's largest finite magnitude, worst output
  int64_t beyond = 0;       // elements beyond tolerance
  std::string worst_output; // "output0"
  std::string error;        // a file that cannot be read
};

nlohmann::json to_json(const CompareOutputsRequest& r);
CompareOutputsRequest compare_outputs_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const std::vector<OutputsApart>& apart);
std::vector<OutputsApart> outputs_apart_from_json(const nlohmann::json& j);

}  // namespace aoti_bisect
