// The runner's logic (runner.hpp): what one run of aoti-bisect-runner does,
// and the model loaded ahead of the runs for a fork server or a persistent
// runner (docs/runner.md). apps/aoti-bisect-runner/main.cpp parses the
// options and calls these.

#include "torchside/runner.hpp"

#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "common/error.hpp"
#include "common/files.hpp"
#include "package/facts.hpp"
#include "package/package.hpp"
#include "process/process.hpp"
#include "protocol/events.hpp"
#include "protocol/runner.hpp"
#include "protocol/values.hpp"
#include "torchside/torchside.hpp"

namespace ab = aoti_bisect;
namespace fs = std::filesystem;

namespace aoti_bisect::torchside {

namespace {

bool g_served = false;        // forked by the fork server (process.hpp), not exec'd
int g_runs_before = 0;        // a persistent runner's runs before this one (process.hpp serve_persistent)
int g_buffers_restored = -1;  // ... and the buffers this run had put back; -1: none asked
char g_signal_lines[32][96];
char g_time_limit_line[160];  // the event up to its "clock" value, which the handler appends

// A call of the model ran past --time-limit: the event, with when on the
// steady clock (CLOCK_MONOTONIC, as the probes' "clock"), then exit 14.
// Async-signal-safe, from the timer's SIGALRM, whichever thread it lands on.
void on_time_limit(int) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  char line[sizeof g_time_limit_line + 48];
  size_t n = std::strlen(g_time_limit_line);
  std::memcpy(line, g_time_limit_line, n);
  char digits[24];
  int d = 0;
  for (auto v = static_cast<unsigned long long>(now.tv_sec); d == 0 || v > 0; v /= 10) {
    digits[d++] = static_cast<char>('0' + v % 10);
  }
  while (d > 0) {
    line[n++] = digits[--d];
  }
  line[n++] = '.';
  for (long div = 100000000L, ns = now.tv_nsec; div > 0; div /= 10) {
    line[n++] = static_cast<char>('0' + (ns / div) % 10);
  }
  line[n++] = '}';
  line[n++] = '\n';
  ab::EventWriter::append_from_signal(line, n);
  ab::persistent_run_ends(static_cast<int>(RunnerExit::time_limit), 0);
  _exit(static_cast<int>(RunnerExit::time_limit));
}

// Arms (seconds > 0) or disarms (0) the limit on one call of the model.
void time_limit(double seconds) {
  if (seconds > 0) {
    std::snprintf(g_time_limit_line, sizeof g_time_limit_line,
                  "{\"event\":\"%s\",\"seconds\":%.17g,\"clock\":", ab::event_name(ab::EventKind::time_limit).data(),
                  seconds);
    struct sigaction sa {};
    sa.sa_handler = on_time_limit;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, nullptr);
  }
  itimerval t{};
  auto whole = static_cast<time_t>(seconds);
  t.it_value.tv_sec = whole;
  t.it_value.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(whole)) * 1e6);
  if (seconds > 0 && t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0) {
    t.it_value.tv_usec = 1;
  }
  setitimer(ITIMER_REAL, &t, nullptr);
}

// Async-signal-safe: write the prepared line, then die of the same signal.
void on_fatal_signal(int sig) {
  if (sig > 0 && sig < 32) {
    ab::EventWriter::append_from_signal(g_signal_lines[sig], std::strlen(g_signal_lines[sig]));
  }
  ab::persistent_run_ends(0, sig);  // a persistent run's stand-in dies of it too
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_signal_lines() {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    std::snprintf(g_signal_lines[sig], sizeof g_signal_lines[sig], "{\"event\":\"%s\",\"signal\":%d}\n",
                  ab::event_name(ab::EventKind::signal).data(), sig);
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(sig, &sa, nullptr);
  }
}

std::string first_line(const std::string& text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) {
    return "";
  }
  return text.substr(start, text.find('\n', start) - start);
}

// Without --model-facts (a runner started by hand): parse the wrapper here.
std::string find_wrapper_source(const fs::path& dir, const std::string& model) {
  fs::path mdir = dir / "data" / "aotinductor" / model;
  std::error_code ec;
  std::string fallback;
  for (const auto& e : fs::directory_iterator(mdir, ec)) {
    ab::SourceRole role = ab::source_role(e.path().filename().string());
    if (role == ab::SourceRole::wrapper) {
      return e.path().string();
    }
    if (role == ab::SourceRole::both) {
      fallback = e.path().string();
    }
  }
  return fallback;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A facts file read once per process image: the fork server reads it when
// it preloads, and its runs (a copy of it each) find it read, as long as
// the file is the same (path, inode, size, modification time). 10,000 call
// sites are megabytes of JSON.
struct FactsRead {
  std::string key;
  ab::ModelFacts facts;
};
FactsRead& g_facts_read = *new FactsRead;

ab::ModelFacts model_facts(const RunnerOptions& opt) {
  if (!opt.model_facts.empty()) {
    const std::string stamp = ab::file_stamp(opt.model_facts);
    const std::string key = stamp.empty() ? "" : opt.model_facts + "\n" + stamp;
    if (!key.empty() && key == g_facts_read.key) {
      return g_facts_read.facts;
    }
    ab::ModelFacts facts = ab::model_facts_from_json(nlohmann::json::parse(read_all(opt.model_facts), nullptr, false));
    if (!key.empty()) {
      g_facts_read = {key, facts};
    }
    return facts;
  }
  ab::WrapperInfo wrapper;
  if (std::string src = find_wrapper_source(opt.package_dir, opt.model); !src.empty()) {
    wrapper = ab::parse_wrapper(read_all(src));
  }
  return ab::model_facts_of(wrapper);
}

template <typename T>
nlohmann::json json_array(const std::vector<T>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& item : items) {
    out.push_back(ab::to_json(item));
  }
  return out;
}

void emit_start(const RunnerOptions& opt, ab::EventWriter& events) {
  ab::torchside::Versions v = ab::torchside::versions(opt.device_key);
  struct utsname un {};
  ::uname(&un);
  events.emit(ab::EventKind::start, {{"pid", ::getpid()},
                                     {"torch", v.torch},
                                     {"cuda", v.cuda},
                                     {"hip", v.hip},
                                     {"device_key", opt.device_key},
                                     {"device_name", v.device_name},
                                     {"driver", v.driver},
                                     {"cuda_available", v.cuda_available},
                                     {"forked_by_server", g_served},
                                     {"persistent", ab::in_persistent_runner()},
                                     {"runs_before", g_runs_before},
                                     {"server_runs_before", g_served ? ab::forkserver_runs_before() : 0},
                                     {"os", std::string(un.sysname) + " " + un.release + " " + un.machine}});
}

// The model's library in the extracted package: the one .so of its folder.
std::string model_library_name(const RunnerOptions& opt) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(opt.package_dir) / "data" / "aotinductor" / opt.model, ec)) {
    if (e.path().extension() == ".so") {
      return e.path().filename().string();
    }
  }
  return "";
}

// Interposition: bind the hooks into the loaded model. A hook library that
// cannot be bound is reported as missing probes (the driver falls back to
// another source), never as the model's failure.
void bind_hooks_into_model(const RunnerOptions& opt, const ab::ModelFacts& facts, ab::EventWriter& events) {
  ab::torchside::set_hook_names(facts.sites, facts.constants);
  try {
    auto b = ab::torchside::bind_hooks(opt.hooks, model_library_name(opt));
    events.emit(ab::EventKind::hooks, {{"hooks", b.hooks}, {"slots", b.slots}, {"unbound", b.unbound}});
    std::vector<std::string> sites_unbound;
    for (const auto& u : b.unbound) {
      // A Triton launch is seen through the CUDA driver's functions.
      bool driver = u == "cuLaunchKernel" || u == "cuModuleGetFunction";
      if (std::any_of(facts.sites.begin(), facts.sites.end(),
                      [&](const auto& s) { return s.kernel == u || (driver && s.kernel.rfind("triton_", 0) == 0); })) {
        sites_unbound.push_back(u);
      }
    }
    if (!sites_unbound.empty()) {
      events.emit(ab::EventKind::probes_missing,
                  {{"message",
                    "the model library has no GOT slot for " + sites_unbound.front() + " (its calls bypass the PLT)"}});
    }
  } catch (const std::exception& e) {
    events.emit(ab::EventKind::probes_missing, {{"message", e.what()}});
  }
}

void install_plan(const RunnerOptions& opt, const ab::ModelFacts& facts, ab::EventWriter& events) {
  auto plan = ab::probe_plan_from_json(nlohmann::json::parse(read_all(opt.probe_plan), nullptr, false));
  if (!opt.node_reference.empty()) {
    ab::torchside::load_node_reference(opt.node_reference);
  }
  ab::torchside::set_buffer_moves(facts.moves, facts.constants, facts.reuse, facts.aliases);
  if (opt.hooks.empty()) {
    // Probe calls in the model's own code name their kernel and tensors: the
    // runner tells which of the wrapper's call sites ran from them.
    ab::torchside::set_hook_names(facts.sites, facts.constants);
  }
  ab::torchside::install_probes(
      plan, [&events](ab::EventKind kind, nlohmann::json fields) { events.emit(kind, std::move(fields)); },
      [&events](ab::EventKind kind, const ab::JsonFields& fields) { events.emit(kind, fields); }, opt.device_key,
      std::set<std::string>(facts.returned.begin(), facts.returned.end()));
  events.emit(ab::EventKind::probes, {{"plan", plan.summary()}});
}

// After a run that returned: probe counts, outputs, the comparison.
void emit_results(const RunnerOptions& opt, const ab::ModelFacts& facts, ab::torchside::Session& session,
                  ab::EventWriter& events) {
  auto counts = ab::torchside::probe_counts();
  events.emit(ab::EventKind::run_end, {{"probe_calls", counts.calls}, {"sites", counts.sites}});
  if (facts.printer_level == 1 && counts.calls == 0 && facts.call_sites > 0) {
    // The model's probe calls went to libtorch, not here: a symbol prefix,
    // static linking, or -Bsymbolic. The driver falls back to guide mode.
    events.emit(ab::EventKind::probes_missing,
                {{"message", "the instrumented model's probe calls did not reach the runner"}});
  }
  events.emit(ab::EventKind::outputs, {{"tensors", json_array(session.output_stats())}});
  if (!opt.outputs.empty()) {
    session.save_outputs(opt.outputs);
  }
  if (!opt.reference.empty()) {
    ab::ToleranceTable tolerances;
    if (!opt.tolerances.empty()) {
      tolerances = ab::tolerance_table_from_json(nlohmann::json::parse(opt.tolerances, nullptr, false));
    }
    events.emit(ab::EventKind::comparison, ab::to_json(session.compare(opt.reference, tolerances, opt.samples)));
    if (!opt.samples.empty() && !opt.save_inputs.empty()) {
      ab::torchside::save_reference_rows(opt.reference, opt.samples,
                                         std::filesystem::path(opt.save_inputs).parent_path() / "reference.pt");
    }
  }
}

// The inputs files to run, in order: --batch-list's lines, else --inputs.
std::vector<std::string> batch_files(const RunnerOptions& opt) {
  if (opt.batch_list.empty()) {
    return {opt.inputs};
  }
  std::vector<std::string> files;
  std::ifstream in(opt.batch_list);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      files.push_back(line);
    }
  }
  if (files.empty()) {
    throw ab::Error(ab::ErrorKind::internal, "the batch list '" + opt.batch_list + "' names no inputs file");
  }
  return files;
}

// AOTI_RUNTIME_CHECK_INPUTS set (and not "0"), as the generated wrapper
// reads it: the package checks its inputs itself.
bool package_checks_inputs() {
  const char* v = std::getenv("AOTI_RUNTIME_CHECK_INPUTS");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

// The facts with the inputs' dtypes, shapes and strides left out: where the
// package checks its inputs itself (the check_inputs variant), the runner
// leaves that to it, so that a refusal is the package's own line. The
// count stays: the package reads as many handles as it takes; so do the
// strides under --contiguous-inputs, which copies the inputs into them.
ab::ModelFacts without_input_checks(ab::ModelFacts facts, bool keep_strides) {
  for (auto& spec : facts.inputs) {
    spec.dtype.clear();
    spec.shape.clear();
    if (!keep_strides) {
      spec.strides.clear();
    }
    spec.dim_min.clear();
    spec.dim_max.clear();
  }
  return facts;
}

// Loads and checks one inputs file; false when it does not fit (events say why).
bool load_checked_inputs(const RunnerOptions& opt, const ab::ModelFacts& facts, const std::string& file,
                         ab::torchside::Session& session, ab::EventWriter& events) {
  ab::torchside::SampleTake take;
  if (!opt.samples.empty()) {
    take.cut.takes.push_back({0, opt.batch_inputs, opt.samples});
    take.save = opt.save_inputs;
  }
  auto loaded = session.load_inputs(file, facts, opt.samples.empty() ? nullptr : &take);
  const nlohmann::json binding = {{"form", loaded.binding.form}, {"by_call_spec", loaded.binding.by_call_spec}};
  if (!loaded.binding.error.empty()) {
    events.emit(ab::EventKind::inputs,
                {{"tensors", nlohmann::json::array()}, {"binding", binding}, {"problems", {loaded.binding.error}}});
    events.emit(ab::EventKind::input_mismatch,
                {{"message", loaded.binding.error}, {"problems", {loaded.binding.error}}});
    return false;
  }
  std::vector<std::string> moved, outside;
  std::vector<std::string> problems =
      session.check_inputs(package_checks_inputs() ? without_input_checks(facts, opt.contiguous_inputs) : facts,
                           opt.device_key, opt.contiguous_inputs, moved, outside);
  events.emit(ab::EventKind::inputs, {{"tensors", json_array(loaded.infos)},
                                      {"binding", binding},
                                      {"moved", moved},
                                      {"outside_range", outside},
                                      {"problems", problems}});
  if (!problems.empty()) {
    events.emit(ab::EventKind::input_mismatch, {{"message", problems.front()}, {"problems", problems}});
    return false;
  }
  events.emit(ab::EventKind::input_stats, {{"tensors", json_array(session.input_stats())}});
  return true;
}

// The model into `session`, for a run and for a server's preload alike:
// the operators its proxy and Python calls need are checked, then
// LibTorch's loader loads it.
void load_into(const RunnerOptions& opt, const ab::ModelFacts& facts, ab::torchside::Session& session) {
  ab::torchside::require_operators(facts.proxy_ops, facts.python_ops, opt.libraries, opt.model);
  session.load_model(opt.package_dir, opt.model, opt.device_key);
}

// `preloaded`: the session's model was loaded by the fork server before
// this run was forked from it (preload below).
void load_model_once(const RunnerOptions& opt, const ab::ModelFacts& facts, ab::torchside::Session& session,
                     bool preloaded, ab::EventWriter& events) {
  if (!preloaded) {
    load_into(opt, facts, session);
  }
  if (!facts.out_spec.empty()) {
    session.set_output_names(ab::output_names(ab::parse_treespec(facts.out_spec)));
  }
  nlohmann::json loaded = {{"model", opt.model},
                           {"instrumented", facts.instrumented},
                           {"printer_level", facts.printer_level},
                           {"preloaded", preloaded}};
  if (g_buffers_restored >= 0) {
    loaded["buffers_restored"] = g_buffers_restored;
  }
  events.emit(ab::EventKind::loaded, std::move(loaded));
  if (ab::torchside::poison_active()) {
    try {
      auto p = ab::torchside::bind_poison(model_library_name(opt));
      events.emit(ab::EventKind::poison, {{"slots", p.slots}, {"unbound", p.unbound}});
    } catch (const std::exception& e) {
      events.emit(ab::EventKind::poison, {{"slots", 0}, {"message", e.what()}});
    }
  }
  if (!opt.hooks.empty()) {
    bind_hooks_into_model(opt, facts, events);
  }
}

// The fork server's model (docs/runner.md, "The model loaded once"): on its
// first request a CPU server loads the model the request names, before it
// forks the run; every run forked from it afterwards that names the same
// package, model, device and libraries starts with it loaded. A fork gives
// each run the model as loaded (a mutable buffer such as a KV cache
// included), never as an earlier run left it. A load that fails here is
// left to the run, which fails the same way and reports it.
// Never destroyed: a run ends with std::exit, and the model's destructor
// would then run after the probes' state and the hooks it calls into.
struct Preloaded {
  bool asked = false;  // the first request was seen (one model per server)
  std::string key;
  std::unique_ptr<ab::torchside::Session> session;  // null: none loaded
};
Preloaded& g_preloaded = *new Preloaded;

// The library's stamp too: a run whose library was rebuilt in the same
// place since the server loaded it loads its own.
std::string load_key(const RunnerOptions& opt) {
  std::string key = opt.package_dir + '\n' + opt.model + '\n' + opt.device_key + '\n' +
                    ab::model_library_stamp(opt.package_dir, opt.model);
  for (const auto& lib : opt.libraries) {
    key += '\n' + lib;
  }
  return key;
}

bool guard_pages_asked() {
  const char* guard = std::getenv("AOTI_BISECT_GUARD_PAGES");
  return guard != nullptr && std::string(guard) == "1";
}

}  // namespace

// The fork server's or persistent runner's `prepare`: the run's own steps,
// in its order, up to the model's load.
bool preload_model(const RunnerOptions& opt, bool persistent) {
  if (g_preloaded.asked) {
    return g_preloaded.session != nullptr && (!persistent || g_preloaded.key == load_key(opt));
  }
  g_preloaded.asked = true;
  const char* off = std::getenv("AOTI_BISECT_PRELOAD");
  try {
    if (!persistent && (opt.device_key != "cpu" || (off != nullptr && std::string(off) == "0"))) {
      return false;
    }
    if (guard_pages_asked()) {
      ab::torchside::install_guard_page_allocator();
    }
    ab::torchside::load_libraries(opt.libraries);
    const ab::ModelFacts facts = model_facts(opt);
    auto session = std::make_unique<ab::torchside::Session>();
    load_into(opt, facts, *session);
    if (persistent) {
      session->keep_buffers(facts.buffers);
      ab::torchside::keep_probe_state();
    }
    g_preloaded.key = load_key(opt);
    g_preloaded.session = std::move(session);
  } catch (...) {
    g_preloaded.session.reset();
  }
  return g_preloaded.session != nullptr;
}

namespace {

bool nonfinite(const std::vector<ab::TensorStats>& outputs) {
  return std::any_of(outputs.begin(), outputs.end(),
                     [](const ab::TensorStats& t) { return t.nan_count > 0 || t.inf_count > 0; });
}

}  // namespace

// Runs each inputs file in turn with one loaded model, as a user's loop
// does: a batch's inputs are loaded only when its turn comes. With a batch
// list, "batch" and "batch_end" events frame each one, and the loop ends at
// the first batch that fails (an error, a crash, NaN/Inf in its outputs).
// The probe plan is installed before the last batch only: the ones before
// are its history.
int run_model(const RunnerOptions& opt, ab::EventWriter& events) {
  using ab::RunnerExit;
  emit_start(opt, events);
  if (const char* threads = std::getenv("OMP_NUM_THREADS"); g_served && threads != nullptr && std::atoi(threads) > 0) {
    // Forked from a server started without it (process.hpp applied_in_the_run):
    // what libgomp would have read at its start.
    at::set_num_threads(std::atoi(threads));
  }
  if (guard_pages_asked()) {
    ab::torchside::install_guard_page_allocator();
  }
  ab::torchside::load_libraries(opt.libraries);
  const bool preloaded = g_preloaded.session != nullptr && g_preloaded.key == load_key(opt);
  if (preloaded && g_runs_before > 0) {
    // A later run of a persistent runner starts as its first did: the
    // buffers as loaded, the probes as the load left them.
    g_buffers_restored = g_preloaded.session->restore_buffers();
    ab::torchside::restore_probe_state();
  }
  ab::torchside::Session own;
  ab::torchside::Session& session = preloaded ? *g_preloaded.session : own;
  const ab::ModelFacts facts = model_facts(opt);
  const std::vector<std::string> files = batch_files(opt);
  const bool framed = !opt.batch_list.empty();
  bool model_loaded = false;
  for (size_t i = 0; i < files.size(); ++i) {
    const bool last = i + 1 == files.size();
    if (framed) {
      events.emit(ab::EventKind::batch, {{"index", i}, {"of", files.size()}, {"file", files[i]}});
    }
    if (!load_checked_inputs(opt, facts, files[i], session, events)) {
      return static_cast<int>(RunnerExit::input_mismatch);
    }
    if (!model_loaded) {
      load_model_once(opt, facts, session, preloaded, events);
      model_loaded = true;
    }
    if (last && !opt.probe_plan.empty()) {
      install_plan(opt, facts, events);
    }
    events.emit(ab::EventKind::run_begin);
    time_limit(opt.time_limit_s);
    auto err = session.run();
    if (!err) {
      err = session.synchronize();
    }
    time_limit(0);
    if (err) {
      events.emit(ab::EventKind::error,
                  {{"message", err->message.substr(0, 16384)}, {"first_line", first_line(err->message)}});
      if (!(framed && opt.keep_going) || last) {
        return static_cast<int>(RunnerExit::model_error);
      }
      events.emit(ab::EventKind::batch_end, {{"index", i}, {"nonfinite", false}, {"error", true}});
      continue;
    }
    // Outputs are saved, and compared with a reference, for the last batch only.
    emit_results(last ? opt : RunnerOptions{}, facts, session, events);
    if (framed) {
      bool bad = nonfinite(session.output_stats());
      events.emit(ab::EventKind::batch_end, {{"index", i}, {"nonfinite", bad}});
      if (bad && !opt.keep_going) {
        break;  // the failing batch: the driver takes it from here
      }
    }
  }
  events.emit(ab::EventKind::done);
  return static_cast<int>(RunnerExit::ran);
}

void install_fatal_signal_events() {
  install_signal_lines();
}

void note_forked_by_server() {
  g_served = true;
}

void note_persistent_run_done() {
  ++g_runs_before;
}

}  // namespace aoti_bisect::torchside
