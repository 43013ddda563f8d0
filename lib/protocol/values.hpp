#pragma once
// The value types at the bottom of the dependency graph: what the runner
// measures and sends in its events (tensor info, statistics, comparisons)
// and the tolerances it judges by. Used by classify, report, the search and
// torchside alike. JSON: non-finite doubles are written as the strings
// "nan", "inf", "-inf" and read back as such.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aoti_bisect {

struct TensorInfo {   // an input: what it is, never what it holds
  std::string name;   // "arg0" or the model's input name
  std::string dtype;  // "float32"
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::string device;     // "cpu", "cuda:0"
  std::string sha256;     // of the contiguous bytes
  int64_t nan_count = 0;  // NaN and Inf it holds (counted before any run)
  int64_t inf_count = 0;
  std::vector<int64_t> first_nonfinite;  // where the first of them sits; empty when none
  int64_t storage_offset = 0;            // as saved: what the model is given
  std::string argument;  // where the call spec bound it from ("attention_mask", "args[1][0]"); "" when positional

  int64_t nonfinite() const { return nan_count + inf_count; }
};

struct TensorStats {  // statistics of one output (or probed) tensor
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int64_t nan_count = 0;
  int64_t inf_count = 0;
  std::optional<double> min;  // absent when empty or not numeric
  std::optional<double> max;
  std::optional<double> mean;
  std::string checksum;                  // 16 hex digits: xxHash of the bytes (lib/torchside/tensor_stats.cpp)
  std::vector<int64_t> first_nonfinite;  // inputs only: the index of the first NaN/Inf; empty when none
  // "" for a strided tensor; "mkldnn" for a oneDNN-layout (opaque) tensor,
  // whose statistics come from a dense copy, or none where that copy fails
  // (`opaque`: only name, dtype and shape are known).
  std::string layout;
  bool opaque = false;
  // Under the poison variant (AOTI_BISECT_POISON=1): the elements that still
  // hold the poison the package's allocation put there, never written by a
  // kernel; -1 where not counted (no poison in the run, a dtype without one).
  int64_t unwritten = -1;

  int64_t nonfinite() const { return nan_count + inf_count; }
  // "NaN", "Inf" or "NaN/Inf": what kind of non-finite values it holds.
  const char* nonfinite_name() const { return nan_count && inf_count ? "NaN/Inf" : inf_count ? "Inf" : "NaN"; }
};

struct Comparison {  // outputs against the reference
  bool within_tolerance = true;
  double atol = 0;
  double rtol = 0;
  double max_abs_error = 0;  // over the elements finite on both sides
  double max_rel_error = 0;
  int64_t mismatched = 0;            // elements outside tolerance (NaN position mismatches included)
  int64_t nonfinite_mismatched = 0;  // of those, where NaN/Inf sit on one side only (or differ)
  int64_t total = 0;
  std::string worst_output;  // name of the output holding the worst element
  std::string note;          // e.g. "NaN positions differ in output 0"
};

// How far a compiled value may be from its reference. A tensor is within
// tolerance when every element satisfies |actual - expected| <= atol +
// rtol * scale, where scale is the largest finite |expected| of the tensor:
// the error is judged against the tensor's magnitude, so cancellation near
// zero (honest in fused and reassociated code) is no false alarm. NaN and
// Inf must sit where the reference has them.
struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-4;
  bool within(double max_abs_error, double scale) const { return max_abs_error <= atol + rtol * scale; }
};

// Tolerances by dtype name ("float32", "bfloat16", ...). Floating dtypes
// without an entry use "default"; integer and bool tensors must match
// exactly unless the table names their dtype.
struct ToleranceTable {
  std::map<std::string, Tolerance> by_dtype;
  Tolerance for_dtype(const std::string& dtype) const;
  // Every dtype (and the default) set to `t`: --atol/--rtol, a flat `tolerance:`.
  void set_all(std::optional<double> atol, std::optional<double> rtol);
  void merge(const ToleranceTable& over);  // over's entries win
};

nlohmann::json json_number(double v);
// A string, or null where it is empty (report.json's and summary.json's
// optional texts), as the json type the caller writes (ordered or not).
template <typename Json = nlohmann::json>
Json text_or_null(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}
double number_from_json(const nlohmann::json& j);

nlohmann::json to_json(const TensorInfo& t);
nlohmann::json to_json(const TensorStats& s);
// The same object as JSON text, without building it (the probes' hot path).
void append_json(std::string& out, const TensorStats& s);
nlohmann::json to_json(const Comparison& c);
nlohmann::json to_json(const ToleranceTable& t);

TensorInfo tensor_info_from_json(const nlohmann::json& j);
TensorStats tensor_stats_from_json(const nlohmann::json& j);
Comparison comparison_from_json(const nlohmann::json& j);
ToleranceTable tolerance_table_from_json(const nlohmann::json& j);  // throws Error(usage) when malformed

}  // namespace aoti_bisect
