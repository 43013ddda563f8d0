#pragma once
// What verify takes from the failing run's report.json: the inputs (every
// file, in order, paths as the report shows them), the failing batch, the
// minimal failing set and its reference beside it, the failing package
// where it is still there unchanged, and the failure's signature, kind and
// call site.

#include <filesystem>
#include <string>
#include <vector>

#include "verify/verify_summary.hpp"

namespace aoti_bisect {

// What the failing run's report.json says verify needs.
struct Baseline {
  std::filesystem::path report;
  std::vector<std::filesystem::path> inputs;  // every file, in order
  std::filesystem::path failing_batch;        // the one the neighbours are cut from: the failing batch, else the first
  std::filesystem::path minimal;              // repro/minimal.inputs.pt beside it; empty when none
  std::filesystem::path reference;            // the run's --reference, where it is still there
  std::filesystem::path minimal_reference;    // repro/minimal.reference.pt: a shrunk mismatch's
  std::vector<int64_t> samples;  // its samples, from 1
  std::filesystem::path failing_package;      // empty when it cannot be found as it was
  std::string failing_note;      // why not
  std::vector<std::string> signatures;
  bool contiguous_inputs = false;  // the run was given --contiguous-inputs
  std::vector<EarlierFailureSite> earlier;
};

// Throws Error(usage) for a file that is not a run's report.json, or (with
// `want_inputs`) one that names no inputs file of the user's;
// Error(cannot_test) for inputs that are not there or changed since.
// `want_inputs` false: the user gave --inputs, and the report's inputs,
// minimal set and reference are not read.
Baseline read_baseline(const std::filesystem::path& path, bool want_inputs);

// A path as a report shows it (common/files.hpp display_path), back to one
// this process can open: "~" is the home folder, a relative path is
// relative to the folder the run started in (assumed this one).
std::filesystem::path from_display(const std::string& shown);

}  // namespace aoti_bisect
