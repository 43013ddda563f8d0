// The failing run's report.json read for verify: its inputs, minimal set, reference, package and failure.
#include "verify/baseline.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/files.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

std::string report_first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}



std::string report_text(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

nlohmann::json parse_report(const fs::path& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_file(path, "--baseline"));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::usage, fmt::format("--baseline '{}' is not JSON ({}); give OUT/report.json of the failing "
                                              "`aoti-bisect run`",
                                              display_path(path), report_first_line(e.what())));
  }
  if (!doc.is_object() || !doc.contains("verdict") || !doc["inputs"].is_object() || !doc["package"].is_object()) {
    throw Error(ErrorKind::usage,
                fmt::format("--baseline '{}' is not a run's report.json (it has no verdict, inputs and package); give "
                            "OUT/report.json of the failing `aoti-bisect run`, or a triage summary with --inputs",
                            display_path(path)));
  }
  return doc;
}

std::vector<fs::path> baseline_inputs(const nlohmann::json& doc, const fs::path& path) {
  std::vector<fs::path> files;
  if (doc.contains("batches") && doc["batches"].is_array()) {
    for (const auto& b : doc["batches"]) {
      if (!report_text(b, "file").empty()) {
        files.push_back(from_display(report_text(b, "file")));
      }
    }
  }
  const std::string shown = report_text(doc["inputs"], "path");
  if (files.empty() && !shown.empty()) {
    files.push_back(from_display(shown));
  }
  if (files.empty() || !report_text(doc["inputs"], "origin").empty()) {
    throw Error(ErrorKind::usage, fmt::format("--baseline '{}' names no inputs file of the user's (the run took {}); "
                                              "give the failing inputs with --inputs",
                                              display_path(path),
                                              report_text(doc["inputs"], "origin").empty()
                                                  ? "none"
                                                  : report_text(doc["inputs"], "origin")));
  }
  for (const auto& f : files) {
    std::error_code ec;
    if (!fs::exists(f, ec)) {
      throw Error(ErrorKind::cannot_test,
                  fmt::format("--baseline '{}' names the inputs '{}', which are not there (a path relative to the "
                              "folder the run started in): run verify from that folder, or give --inputs",
                              display_path(path), display_path(f)));
    }
  }
  const std::string sha = report_text(doc["inputs"], "sha256");
  if (files.size() == 1 && !sha.empty() && sha256_file(files.front()) != sha) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("the inputs '{}' changed since the failing run (their sha256 is not the one --baseline "
                            "'{}' recorded): give the failing inputs with --inputs",
                            display_path(files.front()), display_path(path)));
  }
  return files;
}

}  // namespace

fs::path from_display(const std::string& shown) {
  const char* home = std::getenv("HOME");
  if (home != nullptr && (shown == "~" || shown.rfind("~/", 0) == 0)) {
    return fs::path(home) / shown.substr(shown.size() > 1 ? 2 : 1);
  }
  return shown;
}

Baseline read_baseline(const fs::path& path, bool want_inputs) {
  Baseline b;
  b.report = path;
  const nlohmann::json doc = parse_report(path);
  if (want_inputs) {
    b.inputs = baseline_inputs(doc, path);
    b.failing_batch = b.inputs.front();
    const nlohmann::json& f = doc["failure"];
    if (f.is_object() && f.contains("batch") && !report_text(f["batch"], "file").empty()) {
      b.failing_batch = from_display(report_text(f["batch"], "file"));
    }
  }
  if (doc.contains("failure") && doc["failure"].is_object() && !report_text(doc["failure"], "signature").empty()) {
    b.signatures.push_back(report_text(doc["failure"], "signature"));
    EarlierFailureSite e{b.signatures.back(), report_text(doc["failure"], "kind"), std::nullopt};
    if (doc["culprit"].is_object() && doc["culprit"]["call_index"].is_number_integer()) {
      e.call_index = doc["culprit"]["call_index"].get<int>();
    }
    b.earlier.push_back(e);
  }
  const fs::path minimal = path.parent_path() / "repro" / "minimal.inputs.pt";
  const nlohmann::json& m = doc["inputs"].contains("minimal") ? doc["inputs"]["minimal"] : nlohmann::json();
  std::error_code ec;
  if (want_inputs && m.is_object() && fs::exists(minimal, ec)) {
    b.minimal = minimal;
    for (const auto& s : m.value("samples", nlohmann::json::array())) {
      b.samples.push_back(s.get<int64_t>());
    }
  }
  if (doc["command_line"].is_array()) {
    for (const auto& arg : doc["command_line"]) {
      b.contiguous_inputs = b.contiguous_inputs || arg == "--contiguous-inputs";
    }
  }
  if (want_inputs && !report_text(doc, "reference").empty() &&
      fs::is_regular_file(from_display(report_text(doc, "reference")), ec)) {
    b.reference = from_display(report_text(doc, "reference"));
    if (!b.minimal.empty() && fs::is_regular_file(path.parent_path() / "repro" / "minimal.reference.pt", ec)) {
      b.minimal_reference = path.parent_path() / "repro" / "minimal.reference.pt";
    }
  }
  const fs::path pkg = from_display(report_text(doc["package"], "path"));
  const std::string sha = report_text(doc["package"], "sha256");
  if (pkg.empty() || !fs::is_regular_file(pkg, ec)) {
    b.failing_note = fmt::format("the failing package '{}' is not there: the outputs are not compared with it",
                                 pkg.empty() ? std::string("(not named)") : display_path(pkg));
  } else if (!sha.empty() && sha256_file(pkg) != sha) {
    b.failing_note = fmt::format("the failing package '{}' changed since the failing run (its sha256 is not the one "
                                 "recorded): the outputs are not compared with it",
                                 display_path(pkg));
  } else {
    b.failing_package = pkg;
  }
  return b;
}

}  // namespace aoti_bisect
