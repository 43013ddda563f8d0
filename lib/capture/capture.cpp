// `aoti-bisect capture`: the program run with the capture library
// preloaded, its calls read back, the first bad call's inputs made into
// inputs files and capture.json written (capture.hpp).
#include "capture/capture.hpp"
#include "capture/kept.hpp"
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
using namespace capture_detail;

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

struct ProcessEvents {
  long pid = 0;
  std::string text;
  std::vector<std::string> opened;
  long others = 0;  // calls of other packages than --package's, passed through unrecorded
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
      } else if (j.is_object() && j.value("event", "") == "other") {
        ++p.others;
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
    if (!first_line.empty()) {
      return "an error: " + first_line;
    }
    return c.device_error ? std::string("an error (its outputs could not be copied from the device after it)")
                          : fmt::format("an error (the run entry returned {})", c.code);
  }
  if (c.status == "died") {
    return c.signal ? "the process died inside it (" + signal_name(*c.signal) + ")" : "the process ended inside it";
  }
  return c.status;
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
      c.device_error = j.value("device_error", false);
    }
  }
  for (auto& c : calls) {
    if (!c.ended) {
      c.status = "died";
      c.signal = died_by;
    } else if (c.code != 0 || c.device_error) {
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
    describe_kept(out);
    for (const auto& n : m_notes) {
      out["notes"].push_back(redact_paths(n));
    }
    std::error_code ec;
    fs::remove_all(m_raw / "alone-check", ec);
    try {
      write_file_atomic(m_o.out / "capture.json", out.dump(2) + "\n");
    } catch (const Error& e) {
      print(out, false);
      std::fprintf(stderr, "aoti-bisect: error: capture: %s\n", redact_paths(e.what()).c_str());
      return 5;
    }
    print(out, true);
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
    long others = 0;
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
        if (c.kept && !fs::exists(m_raw / std::to_string(c.pid) / fmt::format("call-{}.json", c.index))) {
          c.kept = false;  // kept, then dropped for a later call within --keep and --max-bytes
          c.not_kept = fmt::format("dropped for later calls (--keep {}, --max-bytes {})", m_o.keep, m_o.max_bytes);
        }
        m_pids.insert(c.pid);
        m_all.push_back(std::move(c));
      }
      others += p.others;
    }
    if (others > 0) {
      m_notes.push_back(fmt::format("{} call{} of other packages than '{}' passed through unrecorded (--package)",
                                    others, others == 1 ? "" : "s", m_o.package));
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

  // The kept calls of `ref`'s process and model library made into inputs
  // files, once: CAP/calls/call-N.pt (CAP/calls/<pid>/ where several
  // processes called). Index -> file.
  const std::map<long, fs::path>& made_for(const CapturedCall& ref) {
    auto key = std::make_pair(ref.pid, ref.so);
    auto found = m_made.find(key);
    if (found != m_made.end()) {
      return found->second;
    }
    std::map<long, fs::path>& made = m_made[key];
    std::vector<CapturedCall> same;
    for (const auto& c : m_all) {
      if (c.pid == ref.pid && c.so == ref.so && c.kept) {
        same.push_back(c);
      }
    }
    const OpenedPackage* pkg = package_of(ref);
    if (same.empty() || pkg == nullptr) {
      return made;
    }
    const std::string in_spec = pkg->in_specs.count(ref.model) ? pkg->in_specs.at(ref.model) : "";
    const fs::path dest = m_pids.size() > 1 ? m_o.out / "calls" / std::to_string(ref.pid) : m_o.out / "calls";
    try {
      made = convert_kept(runner_for(ref.package, ref.model), m_raw / std::to_string(ref.pid), dest, in_spec, same,
                          same.back().index, m_notes);
    } catch (const Error& e) {
      m_notes.push_back(std::string("the kept inputs stay raw in .raw/: ") + e.what());
    }
    return made;
  }

  size_t unreadable_packages() const {
    return static_cast<size_t>(std::count_if(m_packages.begin(), m_packages.end(),
                                             [](const auto& p) { return !p.second.error.empty(); }));
  }

  const OpenedPackage* package_of(const CapturedCall& c) const {
    auto it = m_packages.find(c.package);
    return c.package.empty() || it == m_packages.end() || !it->second.error.empty() ? nullptr : &it->second;
  }

  // `aoti-bisect run` on these files of c's package, in order.
  std::string run_line(const CapturedCall& c, const std::vector<fs::path>& inputs) const {
    std::string cmd = "aoti-bisect run " + shell_word(display_path(c.package));
    for (const auto& h : inputs) {
      cmd += " --inputs " + shell_word(display_path(h));
    }
    if (package_of(c)->so_to_model.size() > 1) {
      cmd += " --model " + c.model;
    }
    return cmd;
  }

  // The first bad call: its inputs and history made into files, whether it
  // fails alone in a fresh process, the command that reproduces it.
  void describe_bad(const CapturedCall& bad, Json& out) {
    const std::string first_line = bad.status == "error" ? first_error_line(m_stderr_tail) : "";
    for (const auto& c : m_all) {
      if (c.pid == bad.pid && c.index < bad.index && c.ended) {
        out["last_completed"] = {{"process", c.pid}, {"index", c.index}};
      }
    }
    const std::map<long, fs::path>& made = made_for(bad);
    Json fb = {{"process", bad.pid},       {"index", bad.index}, {"status", bad.status},
               {"first_line", first_line.empty() ? Json(nullptr) : Json(first_line)},
               {"inputs", Json::array()}, {"history", Json::array()}, {"alone", nullptr}};
    std::vector<fs::path> history;
    for (const auto& [index, path] : made) {
      if (index <= bad.index) {
        (index == bad.index ? fb["inputs"] : fb["history"]).push_back(display_path(path));
        history.push_back(path);
      }
    }
    m_summary = fmt::format("call {} of {} is the first bad one: {}", bad.index,
                            bad.package.empty() ? bad.so : display_path(bad.package), status_text(bad, first_line));
    if (package_of(bad) == nullptr) {
      m_notes.push_back(fmt::format(
          "the package of the bad call is not known ({}): no run_command{}",
          unreadable_packages() > 0 ? "no .pt2 capture could read holds its library"
                                    : "the program opened no .pt2 its library came from",
          bad.kept ? "; its inputs stay raw in .raw/" : ""));
    } else if (!made.count(bad.index)) {
      m_notes.push_back(fmt::format("call {}'s inputs were not kept{}", bad.index,
                                    bad.not_kept.empty() ? "" : ": " + bad.not_kept));
    } else {
      std::optional<bool> alone = fails_alone(bad.package, made.at(bad.index), m_raw / "alone-check");
      fb["alone"] = alone ? Json(*alone) : Json(nullptr);
      m_run_inputs = alone.value_or(false) ? std::vector<fs::path>{made.at(bad.index)} : history;
      out["run_command"] = run_line(bad, m_run_inputs);
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

  // Every kept call's file (--every, --call N, and the first bad call's
  // history): kept[] {process, index, package, model, inputs, run_command}.
  void describe_kept(Json& out) {
    out["kept"] = Json::array();
    for (const auto& c : m_all) {
      if (!c.kept) {
        continue;
      }
      const std::map<long, fs::path>& made = made_for(c);
      if (!made.count(c.index)) {
        continue;
      }
      out["kept"].push_back({{"process", c.pid},
                             {"index", c.index},
                             {"package", c.package},
                             {"model", c.model},
                             {"inputs", display_path(made.at(c.index))},
                             {"run_command", run_line(c, {made.at(c.index)})}});
    }
  }

  void print(const Json& out, bool written) const {
    std::fprintf(stdout, "capture: %s\n", redact_paths(m_summary).c_str());
    for (const auto& n : m_notes) {
      std::fprintf(stdout, "capture: %s\n", redact_paths(n).c_str());
    }
    if (out["run_command"].is_string()) {
      std::fprintf(stdout, "reproduce:\n  %s\n", out["run_command"].get<std::string>().c_str());
    } else if (!out["kept"].empty() && m_o.call == 0 && !m_o.every) {
      std::fprintf(stdout, "capture: %zu calls kept as inputs files (at most the last %ld of each process, "
                   "--keep; capture.json kept[])\n", out["kept"].size(), m_o.keep + 1);
    } else if (!out["kept"].empty()) {
      const size_t n = out["kept"].size(), shown = std::min<size_t>(n, 5);
      std::fprintf(stdout, "capture: %zu call%s kept as inputs files; to run %s:\n", n, n == 1 ? "" : "s",
                   n == 1 ? "it" : "one");
      for (size_t i = 0; i < shown; ++i) {
        std::fprintf(stdout, "  %s\n", out["kept"][i]["run_command"].get<std::string>().c_str());
      }
      if (shown < n) {
        std::fprintf(stdout, "  ... and %zu more (capture.json kept[])\n", n - shown);
      }
    }
    if (written) {
      std::fprintf(stdout, "capture: %s\n", display_path(m_o.out / "capture.json").c_str());
    }
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
  std::map<std::pair<long, std::string>, std::map<long, fs::path>> m_made;  // (pid, library) -> index -> file
};

}  // namespace

int run_capture(const CaptureOptions& options) {
  return Capture(options).run();
}

}  // namespace aoti_bisect
