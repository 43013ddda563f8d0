#pragma once
// What capture does with a kept call once the program has ended: the
// package it came from read (its models' libraries and call specs), the raw
// inputs made into inputs files by a runner of the package's torch, and
// whether a file alone fails in a fresh process (capture.cpp).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture.hpp"

namespace aoti_bisect::capture_detail {

// A .pt2 the program opened, as far as capture needs it.
struct OpenedPackage {
  std::filesystem::path path;
  std::map<std::string, std::string> so_to_model;  // library file name -> model
  std::map<std::string, std::string> in_specs;     // model -> in_spec text
  std::string error;                               // why it cannot be read, "" when it can
};
OpenedPackage read_package(const std::filesystem::path& path);

// The runner that writes the inputs files, chosen as `run` chooses it for
// the package (harness/runner_choice.hpp): named, beside the driver, or
// built once against the package's torch (a pip install has none beside).
std::filesystem::path runner_for(const std::filesystem::path& package, const std::string& model);

// `calls`' kept raw inputs (raw_dir/call-N.{json,bin}, those with index <=
// up_to) made into dest/call-N.pt by the runner (--kept-inputs), bound by
// in_spec; index -> file for those written. What failed goes to notes.
std::map<long, std::filesystem::path> convert_kept(const std::filesystem::path& runner,
                                                   const std::filesystem::path& raw_dir,
                                                   const std::filesystem::path& dest, const std::string& in_spec,
                                                   const std::vector<CapturedCall>& calls, long up_to,
                                                   std::vector<std::string>& notes);

// Whether `aoti-bisect run PKG --inputs FILE` in a fresh process fails as the
// call did; nullopt when that could not be told.
std::optional<bool> fails_alone(const std::filesystem::path& package, const std::filesystem::path& inputs,
                                const std::filesystem::path& out);

// A word for a shell line, quoted where it needs it.
std::string shell_word(const std::string& s);

}  // namespace aoti_bisect::capture_detail
