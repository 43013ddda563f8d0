// `aoti-bisect capture`: the program run with the capture library
// preloaded, its calls read back, the first bad call's inputs made into
// inputs files and capture.json written (capture.hpp).
#include "capture/capture.hpp"
#include "capture/stderr_tee.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "classify/classify.hpp"
#include "harness/runner_build.hpp"
#include "harness/runner_choice.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "inputs/call_spec.hpp"
#include "package/package.hpp"
#include "process/process.hpp"
#include "protocol/runner.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr const char* k_hook = "libaoti-bisect-capture.so";

std::string file_text(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) ? read_file(path, "capture file") : std::string();
}

int64_t count_of(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// "/tmp/aotinductor_X/<folder>/data/aotinductor/<model>/<file>.so" -> (model, file).
std::pair<std::string, std::string> model_of_so(const std::string& so) {
  fs::path p(so);
  return {p.parent_path().filename().string(), p.filename().string()};
}

struct OpenedPackage {
  fs::path path;
  std::map<std::string, std::string> so_to_model;  // library file name -> model
  std::string in_spec;                              // of its first model
  std::map<std::string, std::string> in_specs;      // model -> in_spec text
  std::string error;
};

OpenedPackage read_package(const fs::path& path) {
  OpenedPackage o;
  o.path = path;
  try {
    Package pkg = Package::open(path);
    for (const auto& m : pkg.models()) {
      if (!m.shared_object.empty()) {
        o.so_to_model[fs::path(m.shared_object).filename().string()] = m.name;
      }
      if (!m.wrapper_cpp.empty()) {
        o.in_specs[m.name] = call_spec_text(pkg.read_entry(m.wrapper_cpp)).in;
      }
    }
  } catch (const Error& e) {
    o.error = e.what();
  }
  return o;
}

struct ProcessEvents {
  long pid = 0;
  std::string text;
  std::vector<std::string> opened;
};

std::vector<ProcessEvents> read_processes(const fs::path& raw) {
  std::vector<ProcessEvents> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(raw, ec)) {
    if (!entry.is_directory(ec)) {
      continue;
    }
    ProcessEvents p;
    p.pid = std::atol(entry.path().filename().c_str());
    p.text = file_text(entry.path() / "events.jsonl");
    std::istringstream lines(p.text);
    for (std::string line; std::getline(lines, line);) {
      Json j = Json::parse(line, nullptr, false);
      if (j.is_object() && j.value("event", "") == "open") {
        p.opened.push_back(j.value("path", ""));
      }
    }
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  return out;
}

Json call_json(const CapturedCall& c) {
  return Json{{"process", c.pid},
              {"index", c.index},
              {"package", c.package.empty() ? Json(nullptr) : Json(c.package)},
              {"model", c.model},
              {"inputs", c.inputs},
              {"inputs_nan", c.inputs_nan},
              {"inputs_inf", c.inputs_inf},
              {"outputs_nan", c.outputs_nan},
              {"outputs_inf", c.outputs_inf},
              {"status", c.status},
              {"signal", c.signal ? Json(signal_name(*c.signal)) : Json(nullptr)},
              {"kept", c.kept},
              {"not_kept", c.not_kept.empty() ? Json(nullptr) : Json(c.not_kept)}};
}

std::string status_text(const CapturedCall& c, const std::string& first_line) {
  if (c.status == "nonfinite") {
    return fmt::format("{} NaN and {} Inf in the outputs from finite inputs", c.outputs_nan, c.outputs_inf);
  }
  if (c.status == "error") {
    return "an error" + (first_line.empty() ? fmt::format(" (the run entry returned {})", c.code) : ": " + first_line);
  }
  if (c.status == "died") {
    return c.signal ? "the process died inside it (" + signal_name(*c.signal) + ")" : "the process ended inside it";
  }
  return c.status;
}

// The runner that writes the inputs files, chosen as `run` chooses it for
// the package (harness/runner_choice.hpp): named, beside the driver, or
// built once against the package's torch (a pip install has none beside).
fs::path runner_for(const fs::path& package, const std::string& model) {
  Package pkg = Package::open(package);
  const ModelFiles& m = pkg.select_model(pkg.models().size() == 1 ? "" : model);
  std::string wrapper = m.wrapper_cpp.empty() ? "" : pkg.read_entry(m.wrapper_cpp);
  std::string flags = m.compile_flags_json.empty() ? "" : pkg.read_entry(m.compile_flags_json);
  PickInputs p = pick_inputs(wrapper, flags, "", "--python", false);
  const char* named = std::getenv("AOTI_BISECT_RUNNER");
  if (p.runner_named && named != nullptr && *named != '\0') {
    return named;
  }
  RunnerPick pick = pick_runner(p, python3_torch);
  if (pick.kind == RunnerPick::Kind::none) {
    throw Error(ErrorKind::cannot_test, "no torch found to write the kept inputs with (" + pick.why +
                                            "); set AOTI_BISECT_PYTHON to a Python with torch");
  }
  if (pick.kind != RunnerPick::Kind::per_torch) {
    return self_executable().parent_path() / "aoti-bisect-runner";
  }
  return build_runner(pick.torch, "", 1800, [](const std::string& line) {
           std::fprintf(stderr, "aoti-bisect: %s\n", redact_paths(line).c_str());
         }).runner;
}

// The kept calls' raw inputs made into inputs files by the runner.
std::map<long, fs::path> convert_kept(const fs::path& runner, const fs::path& raw_dir, const fs::path& dest,
                                      const std::string& in_spec, const std::vector<CapturedCall>& calls, long up_to,
                                      std::vector<std::string>& notes) {
  std::map<long, fs::path> made;
  Json calls_json = Json::array();
  for (const auto& c : calls) {
    if (!c.kept || c.index > up_to || !fs::exists(raw_dir / fmt::format("call-{}.json", c.index))) {
      continue;
    }
    fs::path out = fs::absolute(dest / fmt::format("call-{}.pt", c.index));
    calls_json.push_back(Json{{"meta", fs::absolute(raw_dir / fmt::format("call-{}.json", c.index)).string()},
                              {"bin", fs::absolute(raw_dir / fmt::format("call-{}.bin", c.index)).string()},
                              {"out", out.string()}});
  }
  if (calls_json.empty()) {
    return made;
  }
  fs::create_directories(dest);
  fs::path request = raw_dir / "kept-request.json";
  fs::path result = raw_dir / "kept-result.json";
  write_file_atomic(request,
                    Json{{"in_spec", in_spec}, {"calls", calls_json}, {"result", fs::absolute(result).string()}}.dump());
  SpawnSpec spec;
  spec.argv = {runner.string(), std::string(k_kept_inputs_flag), fs::absolute(request).string()};
  spec.env = current_environment();
  spec.stderr_path = raw_dir / "kept.stderr";
  spec.timeout_s = 600;
  ExitStatus st = run_process(spec);
  Json r = Json::parse(file_text(result), nullptr, false);
  if (!st.ok() || !r.is_array()) {
    notes.push_back("the kept inputs could not be saved as inputs files: " + last_nonempty_line(st.stderr_tail));
    return made;
  }
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i]["error"].is_string()) {
      notes.push_back("a kept call's inputs could not be saved: " + r[i]["error"].get<std::string>());
      continue;
    }
    fs::path out = r[i]["out"].get<std::string>();
    long index = std::atol(out.stem().string().substr(5).c_str());
    made[index] = out;
  }
  return made;
}

// Whether `aoti-bisect run PKG --inputs FILE` in a fresh process fails as the call did.
std::optional<bool> fails_alone(const fs::path& package, const fs::path& inputs, const fs::path& out) {
  SpawnSpec spec;
  spec.argv = {self_executable().string(), "run", fs::absolute(package).string(), "--inputs",
               fs::absolute(inputs).string(), "--no-matrix", "--no-bisect", "--no-shrink", "--no-judge",
               "--out", fs::absolute(out).string()};
  spec.env = current_environment();
  spec.timeout_s = 900;
  ExitStatus st = run_process(spec);
  Json report = Json::parse(file_text(out / "report.json"), nullptr, false);
  if (!report.is_object() || !report["verdict"].is_string()) {
    return std::nullopt;
  }
  const std::string verdict = report["verdict"].get<std::string>();
  if (verdict == "could_not_test" || verdict == "internal_error") {
    return std::nullopt;
  }
  return verdict != "clean";
}

std::string quoted(const std::string& s) {
  return s.find_first_of(" '\"$\\") == std::string::npos ? s : "'" + s + "'";
}

}  // namespace

std::vector<CapturedCall> read_calls(const std::string& events_text, long pid, std::optional<int> died_by) {
  std::vector<CapturedCall> calls;
  std::map<long, size_t> at;
  std::istringstream lines(events_text);
  for (std::string line; std::getline(lines, line);) {
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object()) {
      continue;  // a line cut short by a death
    }
    const std::string ev = j.value("event", "");
    const long index = j.value("call", 0L);
    if (ev == "begin") {
      CapturedCall c;
      c.index = index;
      c.pid = pid;
      c.so = j.value("so", "");
      c.inputs = j.value("inputs", Json::array());
      c.inputs_nan = count_of(j, "inputs_nan");
      c.inputs_inf = count_of(j, "inputs_inf");
      c.kept = j.value("kept", false);
      c.not_kept = j.value("not_kept", "");
      at[index] = calls.size();
      calls.push_back(std::move(c));
    } else if (ev == "end" && at.count(index)) {
      CapturedCall& c = calls[at[index]];
      c.ended = true;
      c.code = j.value("code", 0);
      c.outputs_nan = count_of(j, "outputs_nan");
      c.outputs_inf = count_of(j, "outputs_inf");
    }
  }
  for (auto& c : calls) {
    if (!c.ended) {
      c.status = "died";
      c.signal = died_by;
    } else if (c.code != 0) {
      c.status = "error";
    } else if (c.outputs_nan + c.outputs_inf > 0) {
      c.status = "nonfinite";
    } else {
      c.status = "ok";
    }
  }
  return calls;
}

const CapturedCall* first_bad(const std::vector<CapturedCall>& calls) {
  for (const auto& c : calls) {
    if (c.status == "error" || c.status == "died" ||
        (c.status == "nonfinite" && c.inputs_nan == 0 && c.inputs_inf == 0)) {
      return &c;
    }
  }
  return nullptr;
}

namespace {

// One capture, in its steps: the program run, its calls read, the first bad
// call's inputs made into files and checked, capture.json and the console.
class Capture {
 public:
  explicit Capture(const CaptureOptions& o) : m_o(o), m_raw(o.out / ".raw") {}

  int run() {
    ExitStatus st = run_program();
    collect(st.how == ExitStatus::How::signaled ? std::optional<int>(st.signal) : std::nullopt);
    Json out = header(st);
    int code = st.how == ExitStatus::How::exited ? st.exit_code : 128 + st.signal;
    const CapturedCall* bad = first_bad(m_all);
    if (m_all.empty()) {
      m_summary = fmt::format("no AOTI package was called (the program {} after {:.1f} s)", st.describe(), st.seconds);
      code = 4;
    } else if (bad == nullptr) {
      m_summary = fmt::format("{} call{} in {} process{}, none bad (the program {})", m_all.size(),
                              m_all.size() == 1 ? "" : "s", m_pids.size(), m_pids.size() == 1 ? "" : "es",
                              st.describe());
    } else {
      describe_bad(*bad, out);
    }
    for (const auto& n : m_notes) {
      out["notes"].push_back(redact_paths(n));
    }
    write_file_atomic(m_o.out / "capture.json", out.dump(2) + "\n");
    std::error_code ec;
    fs::remove_all(m_raw / "alone-check", ec);
    print(out);
    if (m_o.then_run && bad != nullptr && out["run_command"].is_string()) {
      return then_run(*bad);
    }
    return code;
  }

 private:
  ExitStatus run_program() {
    if (m_o.command.empty()) {
      throw Error(ErrorKind::usage,
                  "capture needs the program to run after --: aoti-bisect capture --out CAP -- python serve.py");
    }
    const fs::path hook = self_executable().parent_path() / k_hook;
    if (!fs::is_regular_file(hook)) {
      throw Error(ErrorKind::internal, fmt::format("{} is missing beside aoti-bisect ({}); rebuild or reinstall it",
                                                   k_hook, display_path(hook.parent_path())));
    }
    std::string program = m_o.command.front();
    if (program.find('/') == std::string::npos) {
      auto found = find_program(program);
      if (!found) {
        throw Error(ErrorKind::usage, fmt::format("capture: '{}' is not on PATH", program));
      }
      program = found->string();
    }
    std::error_code ec;
    fs::remove_all(m_raw, ec);
    fs::remove_all(m_o.out / "calls", ec);
    fs::create_directories(m_raw);
    SpawnSpec spec;
    spec.argv = m_o.command;
    spec.argv.front() = program;
    spec.env = current_environment();
    const std::string preload = spec.env.count("LD_PRELOAD") ? spec.env["LD_PRELOAD"] : "";
    spec.env["LD_PRELOAD"] = fs::absolute(hook).string() + (preload.empty() ? "" : ":" + preload);
    spec.env["AOTI_BISECT_CAPTURE_DIR"] = fs::absolute(m_raw).string();
    spec.env["AOTI_BISECT_CAPTURE_KEEP"] = std::to_string(m_o.keep);
    spec.env["AOTI_BISECT_CAPTURE_MAX_BYTES"] = std::to_string(m_o.max_bytes);
    spec.env["AOTI_BISECT_CAPTURE_CALL"] = std::to_string(m_o.call);
    spec.env["AOTI_BISECT_CAPTURE_EVERY"] = m_o.every ? "1" : "0";
    spec.env["AOTI_BISECT_CAPTURE_PACKAGE"] = m_o.package;
    spec.inherit_streams = true;
    StderrTee tee(m_raw / "stderr.fifo");
    spec.stderr_path = tee.path();
    spec.tail_bytes = 0;  // the tee keeps the tail: reading the pipe again would wait for a writer
    ExitStatus st = run_process(spec);
    m_stderr_tail = tee.finish();
    if (st.how == ExitStatus::How::spawn_failed) {
      throw Error(ErrorKind::usage, "capture: cannot start the program: " + st.spawn_error);
    }
    return st;
  }

  // Every process's calls, each named by the package it came from.
  void collect(std::optional<int> signal) {
    std::vector<ProcessEvents> procs = read_processes(m_raw);
    int with_unended = 0;
    for (const auto& p : procs) {
      for (const auto& c : read_calls(p.text, p.pid, std::nullopt)) {
        with_unended += c.status == "died" ? 1 : 0;
      }
    }
    for (const auto& p : procs) {
      for (const auto& path : p.opened) {
        if (!m_packages.count(path)) {
          m_packages[path] = read_package(path);
        }
      }
      // A death's signal is the program's where one process died inside a call.
      for (auto& c : read_calls(p.text, p.pid, with_unended == 1 ? signal : std::nullopt)) {
        auto [model, file] = model_of_so(c.so);
        c.model = model;
        for (const auto& [path, pkg] : m_packages) {
          if (pkg.so_to_model.count(file)) {
            c.package = path;
            c.model = pkg.so_to_model.at(file);
          }
        }
        m_pids.insert(c.pid);
        m_all.push_back(std::move(c));
      }
    }
    for (const auto& [path, pkg] : m_packages) {
      if (!pkg.error.empty()) {
        m_notes.push_back(fmt::format("package '{}' cannot be read: {}", display_path(path), pkg.error));
      }
    }
  }

  Json header(const ExitStatus& st) const {
    Json out = {{"schema_version", 1},
                {"tool", "aoti-bisect " AOTI_BISECT_VERSION},
                {"command", redact_paths(join(m_o.command, " "))},
                {"program",
                 {{"exit_code", st.how == ExitStatus::How::exited ? Json(st.exit_code) : Json(nullptr)},
                  {"signal", st.how == ExitStatus::How::signaled ? Json(signal_name(st.signal)) : Json(nullptr)},
                  {"seconds", st.seconds}}},
                {"processes", m_pids.size()},
                {"calls", Json::array()},
                {"first_bad", nullptr},
                {"last_completed", nullptr},
                {"run_command", nullptr},
                {"notes", Json::array()}};
    for (const auto& c : m_all) {
      out["calls"].push_back(call_json(c));
    }
    return out;
  }

  // The first bad call: its inputs and history made into files, whether it
  // fails alone in a fresh process, the command that reproduces it.
  void describe_bad(const CapturedCall& bad, Json& out) {
    const std::string first_line = bad.status == "error" ? first_error_line(m_stderr_tail) : "";
    std::vector<CapturedCall> mine;
    for (const auto& c : m_all) {
      if (c.pid == bad.pid) {
        if (c.index < bad.index && c.ended) {
          out["last_completed"] = {{"process", c.pid}, {"index", c.index}};
        }
        mine.push_back(c);
      }
    }
    const OpenedPackage* pkg = m_packages.count(bad.package) ? &m_packages.at(bad.package) : nullptr;
    const std::string in_spec = pkg && pkg->in_specs.count(bad.model) ? pkg->in_specs.at(bad.model) : "";
    std::map<long, fs::path> made;
    try {
      const fs::path runner = runner_for(bad.package.empty() ? fs::path() : fs::path(bad.package), bad.model);
      made = convert_kept(runner, m_raw / std::to_string(bad.pid), m_o.out / "calls", in_spec, mine, bad.index,
                          m_notes);
    } catch (const Error& e) {
      m_notes.push_back(std::string("the kept inputs stay raw in .raw/: ") + e.what());
    }
    Json fb = {{"process", bad.pid},       {"index", bad.index}, {"status", bad.status},
               {"first_line", first_line.empty() ? Json(nullptr) : Json(first_line)},
               {"inputs", Json::array()}, {"history", Json::array()}, {"alone", nullptr}};
    std::vector<fs::path> history;
    for (const auto& [index, path] : made) {
      (index == bad.index ? fb["inputs"] : fb["history"]).push_back(display_path(path));
      history.push_back(path);
    }
    m_summary = fmt::format("call {} of {} is the first bad one: {}", bad.index,
                            bad.package.empty() ? bad.so : display_path(bad.package), status_text(bad, first_line));
    if (!made.count(bad.index)) {
      m_notes.push_back(fmt::format("call {}'s inputs were not kept{}", bad.index,
                                    bad.not_kept.empty() ? "" : ": " + bad.not_kept));
    } else if (pkg == nullptr) {
      m_notes.push_back("the package of the bad call is not known (the program opened no .pt2 its library came "
                        "from): no run_command");
    } else {
      std::optional<bool> alone = fails_alone(bad.package, made.at(bad.index), m_raw / "alone-check");
      fb["alone"] = alone ? Json(*alone) : Json(nullptr);
      m_run_inputs = alone.value_or(false) ? std::vector<fs::path>{made.at(bad.index)} : history;
      std::string cmd = "aoti-bisect run " + quoted(display_path(bad.package));
      for (const auto& h : m_run_inputs) {
        cmd += " --inputs " + quoted(display_path(h));
      }
      if (pkg->so_to_model.size() > 1) {
        cmd += " --model " + bad.model;
      }
      out["run_command"] = cmd;
      if (!alone) {
        m_notes.push_back("whether the bad call fails alone in a fresh process could not be checked");
      } else if (!*alone) {
        m_notes.push_back(fmt::format("call {} alone in a fresh process does not fail: run_command replays the {} "
                                      "kept calls up to it in order",
                                      bad.index, history.size()));
      }
    }
    out["first_bad"] = fb;
  }

  void print(const Json& out) const {
    std::fprintf(stdout, "capture: %s\n", redact_paths(m_summary).c_str());
    for (const auto& n : m_notes) {
      std::fprintf(stdout, "capture: %s\n", redact_paths(n).c_str());
    }
    if (out["run_command"].is_string()) {
      std::fprintf(stdout, "reproduce:\n  %s\n", out["run_command"].get<std::string>().c_str());
    }
    std::fprintf(stdout, "capture: %s\n", display_path(m_o.out / "capture.json").c_str());
    std::fflush(stdout);
  }

  int then_run(const CapturedCall& bad) const {
    SpawnSpec run;
    run.argv = {self_executable().string(), "run", fs::absolute(bad.package).string()};
    for (const auto& h : m_run_inputs) {
      run.argv.insert(run.argv.end(), {"--inputs", fs::absolute(h).string()});
    }
    if (m_packages.at(bad.package).so_to_model.size() > 1) {
      run.argv.insert(run.argv.end(), {"--model", bad.model});
    }
    run.argv.insert(run.argv.end(), {"--out", fs::absolute(m_o.out / "run").string()});
    run.env = current_environment();
    run.inherit_streams = true;
    ExitStatus r = run_process(run);
    return r.how == ExitStatus::How::exited ? r.exit_code : static_cast<int>(5);
  }

  const CaptureOptions& m_o;
  const fs::path m_raw;
  std::string m_stderr_tail;
  std::map<std::string, OpenedPackage> m_packages;
  std::vector<CapturedCall> m_all;
  std::set<long> m_pids;
  std::vector<std::string> m_notes;
  std::string m_summary;
  std::vector<fs::path> m_run_inputs;
};

}  // namespace

int run_capture(const CaptureOptions& options) {
  return Capture(options).run();
}

}  // namespace aoti_bisect
