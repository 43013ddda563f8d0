#pragma once
// What the runner needs to know about a model, parsed once by the driver
// from the wrapper source and written beside the extracted package
// (model-facts.json): the inputs the model takes, whether it carries printer
// probes, its call-site count, and the buffers extern calls create.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wrapper/wrapper.hpp"

namespace aoti_bisect {

struct ModelFacts {
  std::optional<int> num_inputs;
  std::vector<InputSpec> inputs;
  bool instrumented = false;
  int printer_level = 0;
  int call_sites = 0;
  std::vector<std::string> returned;  // buffers extern calls create and return
  // Interposition names what a hook sees from these: each call site's
  // kernel and argument names (CallSite::args), and the constants' names.
  struct Site {
    std::string kernel;
    std::vector<std::string> args;
    std::vector<int> in_out;                         // argument positions a cpp kernel reads and writes in place
    std::vector<std::vector<std::string>> elements;  // a list argument's tensors (CallSite::elements)
  };
  std::vector<Site> sites;
  std::vector<std::string> constants;
  // The constants of kind buffer (by original name, as the container's
  // constants map names them): what a forward may update in place. The
  // persistent runner keeps their loaded values and restores them each run.
  std::vector<std::string> buffers;
  // Moves in run_impl that carry a value on (WrapperInfo::value_moves), as (bufA, bufB).
  std::vector<std::pair<std::string, std::string>> moves;
  // Every `auto bufA = std::move(bufB);` (WrapperInfo::moves): what an
  // in-place argument (CallSite::in_out) held under its earlier name.
  std::vector<std::pair<std::string, std::string>> reuse;
  // Views of live buffers (WrapperInfo::aliases), as (view, base): a write
  // through one is a write to the other's bytes.
  std::vector<std::pair<std::string, std::string>> aliases;
  // The call spec (WrapperInfo::in_spec, out_spec): how the inputs file is
  // bound to the flat inputs, and what the outputs are called.
  std::string in_spec;
  std::string out_spec;
  // Custom operators the model runs through the proxy executor
  // (WrapperInfo::proxy_ops): each must be registered before it loads.
  std::vector<std::string> proxy_ops;
  std::vector<std::string> python_ops;  // of those, the Python custom operators (WrapperInfo::python_ops)
};

ModelFacts model_facts_of(const WrapperInfo& wrapper);
// ": arg8_1 float32 [8, 16]; arg9_1 int64 [8]": what the model takes, for a
// message about the count (the first eight; "" when the wrapper says nothing).
std::string inputs_taken_text(const ModelFacts& facts);
nlohmann::json to_json(const ModelFacts& facts);
ModelFacts model_facts_from_json(const nlohmann::json& j);  // throws Error(internal) when malformed

// Writes the facts of `wrapper` to `path` (atomically); returns `path`.
std::filesystem::path write_model_facts(const WrapperInfo& wrapper, const std::filesystem::path& path);

}  // namespace aoti_bisect
