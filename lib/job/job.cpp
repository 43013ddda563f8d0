#include "job/job.hpp"

#include <future>
#include <algorithm>
#include <map>
#include <set>
#include <optional>
#include <variant>
#include <unistd.h>

#include <fmt/format.h>

#include "inductor/build.hpp"
#include "common/files.hpp"
#include "common/scratch_dir.hpp"
#include "common/text.hpp"
#include "search/search.hpp"
#include "job/batches.hpp"
#include "job/environment.hpp"
#include "job/matrix_phase.hpp"
#include "job/gpu_coredump_run.hpp"
#include "job/out_dir.hpp"
#include "job/batch_dependence.hpp"
#include "job/shrink.hpp"
#include "repro/replay.hpp"
#include "harness/phase.hpp"
#include "harness/runner_build.hpp"
#include "harness/runner_choice.hpp"
#include "matrix/matrix.hpp"
#include "matrix/reading.hpp"
#include "package/elf.hpp"
#include "package/facts.hpp"
#include "package/package.hpp"
#include "process/process.hpp"
#include "package/package_torch.hpp"
#include "package/sources_only.hpp"
#include "package/tensor_file.hpp"
#include "classify/signature.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

Stop stop_of(const Error& e) {
  return {e.kind() == ErrorKind::internal ? Verdict::internal_error : Verdict::could_not_test, e.what()};
}

// The package, the model in it and its wrapper: what the inspect phase found.
struct Inspected {
  std::optional<Package> pkg;
  const ModelFiles* model = nullptr;
  // A package_cpp_only model once its library is built (package/sources_only.hpp):
  // the model's files with that library; `model` then points here.
  ModelFiles built;
  WrapperInfo wrapper;
  // The package's SHA-256, hashed on a thread of its own while the package
  // is extracted (a 1 GiB package takes seconds to hash).
  std::shared_future<std::string> package_sha256;
};

PackageSummary summarize_package(const Package& pkg, const ModelFiles& model, const WrapperInfo& wrapper) {
  PackageSummary p;
  p.path = display_path(pkg.path());
  p.models = pkg.model_names();
  p.model = model.name;
  p.device_key = model.device_key();
  p.metadata = model.metadata;
  p.torch_version = pkg.torch_version();
  p.call_sites = static_cast<int>(wrapper.call_sites.size());
  p.instrumented = wrapper.instrumented;
  p.has_exported_program = !pkg.exported_programs().empty();
  return p;
}

// Opens the package and checks the files exist. Usage errors (an unknown
// model name) propagate; the others stop the job.
// With no --inputs, the package's own sample inputs (extracted into the
// output folder), else a usage error that says --inputs is needed.
void take_sample_inputs(RunOptions& opt, const Package& pkg, const ModelFiles& model, Recorder& rec) {
  std::string entry = pkg.sample_inputs(model);
  if (entry.empty()) {
    throw Error(ErrorKind::usage,
                fmt::format("no --inputs given, and package '{}' holds no sample inputs for model '{}' "
                            "(data/sample_inputs/{}.pt, which torch.export's package_pt2 writes beside an exported "
                            "program): give --inputs FILE (torch.save or safetensors)",
                            pkg.path().string(), model.name, model.name));
  }
  opt.inputs = opt.out_dir / "sample-inputs.pt";
  pkg.extract_file(entry, opt.inputs);
  opt.sample_inputs = true;
  rec.inputs_source(display_path(opt.inputs), "");
  rec.note(fmt::format("no --inputs given: the run uses the package's own sample inputs ({})",
                       entry.substr(pkg.prefix().size())));
}

// Every inputs and reference file is read torch-free before any child
// loads it: the runner's unpickler trusts the sizes these files declare.
void check_inputs_files(const RunOptions& opt, const std::vector<fs::path>& batches, Recorder& rec) {
  TensorFile main = check_tensor_file(opt.inputs, "inputs file");
  rec.inputs_format(std::string(tensor_file_format_name(main.format)), main.notes,
                    opt.sample_inputs ? "the package's own sample inputs" : "");
  for (size_t i = 1; i < batches.size(); ++i) {
    if (batches[i] != batches[i - 1]) {
      check_tensor_file(batches[i], "inputs file");
    }
  }
  if (!opt.reference.empty()) {
    check_tensor_file(opt.reference, "reference file");
  }
}

// An operator library built as a Python extension module (load_inline, a
// setuptools CppExtension) refers to Python's C API, which the runner, a
// C++ program, does not carry: Python's own library is loaded before it.
void load_python_for_extensions(RunOptions& opt, Recorder& rec) {
  for (const auto& lib : opt.load_libraries) {
    ElfFacts elf;
    try {
      elf = read_elf_facts(lib);
    } catch (const Error&) {
      continue;  // the runner says why it cannot be loaded
    }
    bool python = std::any_of(elf.slots.begin(), elf.slots.end(), [](const GotSlot& s) {
      return s.symbol.rfind("Py", 0) == 0 || s.symbol.rfind("_Py", 0) == 0;
    });
    if (!python) {
      continue;
    }
    std::optional<fs::path> libpython = python_shared_library(opt.cache_dir);
    if (!libpython) {
      rec.note(fmt::format("library '{}' is a Python extension module (it refers to Python's C API), and python3 "
                           "has no shared libpython to load before it",
                           display_path(lib)));
      return;
    }
    opt.python_library = *libpython;
    rec.note(fmt::format("library '{}' is a Python extension module (it refers to Python's C API): {} is loaded "
                         "before it",
                         display_path(lib), display_path(*libpython)));
    return;
  }
}

std::variant<Inspected, Stop> inspect(RunOptions& opt, const std::vector<fs::path>& batches, Recorder& rec) {
  rec.begin_phase("inspect", display_path(opt.package));
  Inspected in;
  try {
    in.pkg = Package::open(opt.package);
    in.package_sha256 = std::async(std::launch::async, [path = in.pkg->path()] { return sha256_file(path); }).share();
    in.model = &in.pkg->select_model(opt.model);
    in.wrapper = in.pkg->wrapper_info(*in.model);
    PackageSummary summary = summarize_package(*in.pkg, *in.model, in.wrapper);
    if (opt.inputs.empty()) {
      take_sample_inputs(opt, *in.pkg, *in.model, rec);
    }
    require_file(opt.inputs, "inputs file");
    rec.package(std::move(summary), sha256_file(opt.inputs));
    for (const auto& lib : opt.load_libraries) {
      require_file(lib, "library (--load-library)");
    }
    load_python_for_extensions(opt, rec);
    check_inputs_files(opt, batches, rec);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::usage) {
      throw;
    }
    if (in.package_sha256.valid()) {
      try {
        rec.package_sha256(in.package_sha256.get());
      } catch (const std::exception&) {
        // unreadable now: the report goes without it
      }
    }
    return stop_of(e);
  }
  return in;
}

// --against-eager: the exported program run eagerly on the inputs. Returns
// the reference to compare with (the user's, the eager one, or none).
std::variant<fs::path, Stop> reference_phase(const Settings& s, const Inspected& in, const fs::path& work,
                                             Recorder& rec) {
  if (!s.against_eager || !s.reference.empty()) {
    return s.reference;
  }
  std::string ep_model;
  auto ep = find_exported_program(s, *in.pkg, *in.model, ep_model);
  if (!ep) {
    throw Error(ErrorKind::usage, "--against-eager needs the exported program: give --exported-program EP.pt2");
  }
  rec.begin_phase("reference", "the exported program run eagerly on the inputs");
  EagerRequest req;
  req.exported_program = *ep;
  req.model_name = ep_model;
  req.out = s.out_dir / "eager-reference.pt";
  req.libraries = s.load_libraries;
  req.cache_dir = s.cache_dir;
  req.device = s.eager_device;
  try {
    // torch.load (weights_only) reads torch.save's zip format only.
    req.inputs = plain_torch_save(s.inputs, "inputs file", work);
    compute_eager_reference(req);
  } catch (const EagerRunFailed& e) {
    // Eager fails on these inputs too: the package's run may still fault or
    // make NaN/Inf, which needs no reference.
    rec.note(fmt::format("{} (output values are not compared with eager; faults and NaN/Inf are still searched)",
                         e.what()));
    return fs::path();
  } catch (const Error& e) {
    return stop_of(e);
  }
  rec.reference(display_path(req.out) + " (eager, from the exported program" +
                (s.eager_device.empty() ? ")" : ", on the " + s.eager_device + ")"));
  if (!s.eager_device.empty() && s.eager_device != in.model->device_key()) {
    rec.note(fmt::format("eager ran on the {} (--eager-device {}), the package on {}: outputs that agree are a hint, "
                         "not a validation on {}; outputs that differ may differ by the device's own kernels",
                         s.eager_device, s.eager_device, in.model->device_key(), in.model->device_key()));
  }
  return req.out;
}

// failure.signature (classify/signature.hpp): the culprit's source comes from
// the package's own kernel.cpp, when the culprit is one of its call sites.
std::string signature_of(const Report& r, Verdict verdict, const Inspected* in) {
  SignatureInput sig;
  sig.kind = std::string(outcome_name(r.failure->kind));
  sig.first_line = r.failure->first_line;
  for (const auto& v : r.matrix) {
    if (v.name == r.failure->reproducing_variant) {
      sig.flags = v.env;
    }
  }
  if (verdict == Verdict::isolated && r.culprit) {
    sig.kernel = r.culprit->kernel;
    bool in_package = in != nullptr && in->model != nullptr &&
                      std::any_of(in->wrapper.call_sites.begin(), in->wrapper.call_sites.end(),
                                  [&](const CallSite& c) { return c.kernel == sig.kernel; });
    if (in_package && !in->model->kernel_cpp.empty()) {
      try {
        sig.kernel_source = kernel_definition(in->pkg->read_entry(in->model->kernel_cpp), sig.kernel);
      } catch (const Error&) {
        // unreadable: the signature goes without the source's hash
      }
    }
  }
  return failure_signature(sig);
}

class Job {
 public:
  Job(const RunOptions& opt, Progress& progress, const JobSeams& seams)
      : m_opt(opt), m_rec(opt.out_dir, opt.junit, progress), m_seams(seams) {}

  JobResult run();

 private:
  JobResult finish(Verdict verdict, const std::string& reason) {
    settle_host();
    if (verdict == Verdict::isolated && m_explain_later && !interrupt_requested()) {
      // The culprit's replay, once the runs are done: with the fork servers
      // and the model they hold stopped, its process never runs beside them.
      forkserver_stop_all();
      auto explain = std::move(m_explain_later);
      m_explain_later = nullptr;
      explain();
    }
    settle_package_hash();
    read_coredump();
    stamp_signature(verdict);
    m_rec.finish(verdict, reason);
    return {m_rec.report(), exit_code_for(verdict)};
  }
  // How a step ends the job (job/matrix_phase.hpp Stop).
  JobResult end(const Stop& stop) {
    settle_host();
    if (auto damaged = settle_copies()) {
      return end(*damaged);  // the package's damage, not what a run or a step made of it
    }
    if (stop.how == Stop::How::finish) {
      return finish(stop.verdict, stop.message);
    }
    if (stop.how == Stop::How::interrupted) {
      return interrupted(stop.message);
    }
    if (interrupt_requested()) {
      // Whatever failed, it failed because its helper or child was stopped.
      return interrupted(fmt::format("during the {} phase", m_rec.phase()));
    }
    settle_package_hash();
    read_coredump();
    std::string message = redact_paths(stop.message);
    stamp_signature(stop.verdict);
    m_rec.finish(stop.verdict, message, message);
    return {m_rec.report(), exit_code_for(stop.verdict)};
  }
  // The interrupted verdict (exit 130 under every exit-code convention),
  // naming the signal and where it came.
  JobResult interrupted(const std::string& where) {
    return finish(Verdict::interrupted, fmt::format("interrupted by {} {}; the report holds what was done so far",
                                                    signal_name(interrupt_signal()), where));
  }
  // The coredump variant's core dump, read once the runs are done (job/gpu_coredump_run.hpp).
  void read_coredump() {
    if (m_in == nullptr || m_rec.report().coredump) {
      return;
    }
    auto d = read_gpu_coredump(m_opt.out_dir / "runs", m_rec.report(), m_in->wrapper.call_sites);
    if (!d) {
      return;
    }
    m_rec.coredump(*d);
    if (d->agrees == false) {
      const Culprit& c = *m_rec.report().culprit;
      m_rec.note(fmt::format("the GPU core dump ({}) names {} as the kernel at the device exception, the search "
                             "names call site {} {}: the core dump is the device's own record of where it stopped, "
                             "and an asynchronous error report can mislead the search",
                             d->run, d->kernel, c.call_index, c.kernel));
    }
  }
  void stamp_signature(Verdict verdict) {
    if (m_rec.report().failure) {
      m_rec.signature(signature_of(m_rec.report(), verdict, m_in));
    }
  }
  std::unique_ptr<ChildRunner> make_children(const ChildSetup& setup) const {
    return m_seams.children ? m_seams.children(setup) : std::make_unique<ProcessChildren>(setup);
  }
  JobResult after_inspect(Inspected& in, const UserConfig& user);
  // Options that do not go with several batches: Error(usage).
  void check_batch_options() const {
    bool several = m_batches.size() > 1 || m_opt.calls > 1;
    if (m_batches.size() > 1 && m_opt.calls > 1) {
      throw Error(ErrorKind::usage, "--calls N runs one inputs file N times: give one --inputs with it");
    }
    if (several && (!m_opt.reference.empty() || m_opt.against_eager)) {
      throw Error(ErrorKind::usage, "--reference and --against-eager compare one batch: give one --inputs with them");
    }
  }
  JobResult run_matrix(Inspected& in, JobContext& job, const ModelDir& model);
  std::optional<Stop> runner_fits(const ChildResult& baseline);
  std::variant<BisectOutcome, Stop> search_first(const Inspected& in, JobContext& job, const ModelDir& model,
                                                 const MatrixPhase& matrix);
  JobResult search_failure(const Inspected& in, JobContext& job, const ModelDir& model, const MatrixPhase& matrix,
                           const BatchDimension& dim,
                           const std::optional<BisectOutcome>& early);
  std::variant<BisectOutcome, Stop> search_kernels(JobContext& job, const BisectSetup& setup);
  void build_from_sources(Inspected& in, const fs::path& package_dir, const Settings& s);
  void note_package_torch(const Inspected& in, const fs::path& package_dir);
  void choose_runner(const Inspected& in);
  RunnerPick m_runner_pick;         // which runner runs the package, and why
  Stop versions_apart(const Stop& stop, const std::map<std::string, std::string>& runner) const;
  PackageTorch m_built_with;        // the torch the package was built with, as far as it shows it

  RunOptions m_opt;                 // inputs set to the first batch once --inputs is expanded
  std::vector<fs::path> m_batches;  // every --inputs, expanded (job/batches.hpp); empty: m_opt.inputs
  std::optional<OutDir> m_out;  // declared before m_rec: held until the last report is written
  Recorder m_rec;
  const JobSeams& m_seams;
  const Inspected* m_in = nullptr;  // set once the package is open
  std::function<void()> m_explain_later;  // the search's (BisectOutcome::explain_later), run by finish
  std::future<Environment> m_host;        // the host's description, probed beside the inspection and the baseline

  // The host's description into the report, once its thread is done
  // (python3 --version alone can take 60 ms behind a version manager's
  // shim). What the baseline's runner said of the device stays.
  void settle_host() {
    if (m_in == nullptr || !m_host.valid()) {
      return;
    }
    const std::string device_key = m_in->model->device_key();
    Environment host;
    try {
      host = m_host.get();
    } catch (const std::exception&) {
      return;  // best effort, as each of its probes
    }
    Environment env = m_rec.report().environment;
    env.device = device_key;
    env.os = host.os;
    env.python_version = host.python_version;
    env.git_revision = host.git_revision;
    if (env.device_name.empty() && (device_key.empty() || device_key == "cpu")) {
      env.device_name = host.device_name;  // the CPU's model: the package's device
    }
    m_rec.environment(env);
  }
  std::future<void> m_copies;             // the extracted library's checksums, read beside the baseline

  // Whether the copies the extraction left unchecked are the package's:
  // a damaged entry ends the job (could_not_test), whatever a run did
  // with it.
  std::optional<Stop> settle_copies() {
    if (!m_copies.valid()) {
      return std::nullopt;
    }
    try {
      m_copies.get();
    } catch (const Error& e) {
      return stop_of(e);
    }
    return std::nullopt;
  }

  // The package's hash into the report, once its thread is done.
  void settle_package_hash() {
    if (m_in == nullptr || !m_in->package_sha256.valid() || !m_rec.report().package.sha256.empty()) {
      return;
    }
    try {
      m_rec.package_sha256(m_in->package_sha256.get());
    } catch (const std::exception&) {
      // unreadable now: the report goes without it
    }
  }
};

JobResult Job::run() {
  UserConfig user = load_config(m_opt);
  std::vector<std::string> command_line;
  for (const auto& a : m_opt.command_line) {
    command_line.push_back(redact_paths(a));
  }
  // Before the first report is written: the lock, and an earlier run's
  // files moved apart. A busy or unwritable folder gets no report.
  m_out.emplace(m_opt.out_dir);
  std::optional<Stop> unexpanded;
  if (!m_opt.inputs_given.empty()) {
    try {
      m_batches = expand_inputs(m_opt.inputs_given);
      m_opt.inputs = m_batches.front();
    } catch (const Error& e) {
      unexpanded = stop_of(e);
      m_opt.inputs = m_opt.inputs_given.front();
    }
  }
  m_rec.start(command_line, display_path(m_opt.inputs),
              m_opt.reference.empty() ? "" : display_path(m_opt.reference));
  for (const auto& note : m_out->notes()) {
    m_rec.note(note);
  }

  install_interrupt_handlers();
  m_host = std::async(std::launch::async, [] {
    Environment host;
    probe_host_environment(host);
    return host;
  });
  try {
    check_batch_options();
    if (unexpanded) {
      return end(*unexpanded);
    }
    auto inspected = inspect(m_opt, m_batches, m_rec);
    if (auto* stop = std::get_if<Stop>(&inspected)) {
      return end(*stop);
    }
    return after_inspect(std::get<Inspected>(inspected), user);
  } catch (const Error& e) {
    // Whatever stops the job after the report started ends it too, never
    // left at `running`: a usage error found late (no --model for a package
    // of several, --against-eager without a program), an input the tool
    // cannot use, a write that fails (a full disk). The exit code stays the
    // error's. Where even that report cannot be written, the recorder has
    // removed the reports, and the error line says so.
    if (m_rec.reports_removed()) {
      throw;  // a report could not be written, and none is left: the error line says so
    }
    if (dynamic_cast<const ConfigError*>(&e) != nullptr) {
      m_rec.discard();  // a config file's error, located (FILE:LINE:COL): like every config error, no report
      throw;
    }
    settle_host();
    std::string message = redact_paths(e.what());
    Verdict verdict = e.kind() == ErrorKind::internal      ? Verdict::internal_error
                      : e.kind() == ErrorKind::interrupted ? Verdict::interrupted
                                                           : Verdict::could_not_test;
    try {
      m_rec.finish(verdict, message, message);
    } catch (const Error& unwritten) {
      throw Error(e.kind(), fmt::format("{}; {}", e.what(), unwritten.what()));
    }
    throw;
  } catch (const std::exception& e) {
    std::string message = "internal error: " + redact_paths(e.what());
    settle_host();
    if (m_rec.reports_removed()) {
      throw;
    }
    try {
      m_rec.finish(Verdict::internal_error, message, message);
    } catch (const Error&) {
      // the reports are removed: the caller's line says the rest
    }
    throw;
  }
}

JobResult Job::after_inspect(Inspected& in, const UserConfig& user) {
  m_in = &in;
  const std::string device_key = in.model->device_key();
  if (device_key.empty()) {
    return end({Verdict::could_not_test,
                 fmt::format("package '{}': model '{}' has no AOTI_DEVICE_KEY in its metadata; rebuild it with "
                             "aoti_compile_and_package",
                             m_opt.package.string(), in.model->name)});
  }
  try {
    choose_runner(in);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::usage) {
      throw;
    }
    return end({Verdict::could_not_test, e.what()});
  }
  Settings s = resolve_settings(m_opt, user, choose_profile(m_opt, device_key), m_batches);
  s.runner_torch_dir = m_runner_pick.torch.torch_dir;
  for (const auto& why : s.unavailable_variants) {
    m_rec.note("variant " + why + ": left out of the flag matrix");
  }
  ScratchDir work(s.out_dir / fmt::format(".work-{}", ::getpid()));
  ModelDir model;
  try {
    // The model library and its weights are copied without being read
    // back: their checksums are read beside the baseline run (settle_copies).
    std::vector<UncheckedCopy> unchecked;
    model.dir = in.pkg->extract(work.path() / "package", in.model, &unchecked);
    if (!unchecked.empty()) {
      m_copies = std::async(std::launch::async,
                            [path = in.pkg->path(), unchecked = std::move(unchecked)] { check_copies(path, unchecked); });
    }
    build_from_sources(in, model.dir, s);
    note_package_torch(in, model.dir);
    model.facts = write_model_facts(in.wrapper, work.path() / "package-facts.json");
    check_model_library(model.dir, *in.model, in.wrapper);
  } catch (const Error& e) {
    return end({e.kind() == ErrorKind::cannot_test ? Verdict::could_not_test : Verdict::internal_error, e.what()});
  }
  auto reference = reference_phase(s, in, work.path(), m_rec);
  if (auto* stop = std::get_if<Stop>(&reference)) {
    return end(*stop);
  }
  ChildSetup setup{s.runner, s.out_dir, in.model->name, device_key, s.inputs, std::get<fs::path>(reference),
                   s.tolerances, s.timeout_s, s.memory_limit_bytes, s.contiguous_inputs, {}};
  if (!s.python_library.empty()) {
    setup.load_libraries.push_back(s.python_library);
  }
  setup.load_libraries.insert(setup.load_libraries.end(), s.load_libraries.begin(), s.load_libraries.end());
  setup.on_batch = [this](const std::string& id, int index, int of, const std::string& file) {
    m_rec.progress().batch(id, index, of, display_path(file));
  };
  if (device_key == "cpu") {
    use_forkserver(s.runner);
  } else if (persistent_runs(device_key)) {
    // On a device only the persistent runner serves (docs/runner.md): no
    // run is forked from a process that may have started a device runtime.
    use_forkserver(s.runner, false);
  }
  auto children = make_children(setup);
  Runs runs(*children, m_rec);
  JobContext job{s, m_rec, runs, device_key, work.path()};
  return run_matrix(in, job, model);
}

// Which runner runs the package (harness/runner_choice.hpp): the one beside
// the driver when its torch is the one wanted, else one built against that
// torch once and cached. A runner named outright is used as given.
void Job::choose_runner(const Inspected& in) {
  const char* env_python = std::getenv("AOTI_BISECT_PYTHON");
  const bool python_given = env_python != nullptr && *env_python != '\0';
  std::string wrapper = in.model->wrapper_cpp.empty() ? "" : in.pkg->read_entry(in.model->wrapper_cpp);
  std::string flags = in.model->compile_flags_json.empty() ? "" : in.pkg->read_entry(in.model->compile_flags_json);
  PickInputs p = pick_inputs(wrapper, flags, m_opt.python, "--python", !m_opt.runner.empty());
  if (p.runner_named) {
    m_runner_pick.kind = RunnerPick::Kind::named;
    return;
  }
  if (p.named_python) {
    // The exported program's build and the eager run use it too.
    ::setenv("AOTI_BISECT_PYTHON", p.named_python->python.c_str(), 1);
  }
  m_runner_pick = pick_runner(p, python3_torch);
  if (m_runner_pick.kind == RunnerPick::Kind::none) {
    throw Error(ErrorKind::cannot_test,
                fmt::format("no torch found to run the package ({}); give --python PATH: a Python whose torch "
                            "built the package (aoti-bisect builds a runner against it once)",
                            m_runner_pick.why));
  }
  if (m_runner_pick.kind != RunnerPick::Kind::per_torch) {
    return;
  }
  const TorchInstall& torch = m_runner_pick.torch;
  m_rec.begin_phase("build", fmt::format("a runner against torch {} ({})", torch.version, m_runner_pick.why));
  RunnerBuild built = build_runner(torch, m_opt.cache_dir, m_opt.build_timeout_s,
                                   [this](const std::string& line) { m_rec.progress().note(line); });
  m_opt.runner = built.runner;
  BuildRecord record;
  record.purpose = "runner";
  record.source = m_runner_pick.why;
  record.fidelity = "the tool's own runner, built against the torch that runs the package";
  record.key = built.key;
  record.cache_hit = built.cache_hit;
  record.seconds = built.seconds;
  record.torch_version = torch.version;
  m_rec.build(record, !built.cache_hit);
  m_rec.progress().note(fmt::format("runner: against torch {} ({}), {}", torch.version, m_runner_pick.why,
                                    built.cache_hit ? "found in the cache"
                                                    : fmt::format("built in {:.0f} s", built.seconds)));
  // The exported program's build and the eager run use the same torch.
  if (!python_given && !p.named_python && !torch.python.empty()) {
    ::setenv("AOTI_BISECT_PYTHON", torch.python.c_str(), 1);
  }
}

// Which torch built the package (its recorded compile command, the
// libraries its library needs), for the report and for the line that says
// why a runner of another torch cannot load it.
void Job::note_package_torch(const Inspected& in, const fs::path& package_dir) {
  const fs::path so = package_dir / "data" / "aotinductor" / in.model->name / fs::path(in.model->shared_object).filename();
  std::string wrapper = in.model->wrapper_cpp.empty() ? "" : in.pkg->read_entry(in.model->wrapper_cpp);
  std::string flags = in.model->compile_flags_json.empty() ? "" : in.pkg->read_entry(in.model->compile_flags_json);
  m_built_with = package_torch(wrapper, flags, in.model->shared_object.empty() ? fs::path() : so);
  m_rec.package_torch(m_built_with.version, m_built_with.torch_dir.empty() ? "" : display_path(m_built_with.torch_dir),
                      m_built_with.libraries);
}

// A runner that cannot load the package because it was built by another
// torch (its library needs libtorch.so where this LibTorch has none, or
// AOTInductor runtime symbols of another version): one line naming both
// versions and how to get a matching runner.
Stop Job::versions_apart(const Stop& stop, const std::map<std::string, std::string>& runner_env) const {
  std::string runner = runner_env.count("torch") ? runner_env.at("torch") : "";
  const std::string& built = m_built_with.version;
  bool load_failed = stop.message.find("cannot be loaded") != std::string::npos;
  // The package's torch folder holds no torch now: only where it was is known.
  const bool absent = m_runner_pick.package_torch_absent && built.empty();
  if (stop.verdict != Verdict::could_not_test || !load_failed || runner.empty() || (built.empty() && !absent) ||
      torch_release(built) == torch_release(runner)) {
    return stop;
  }
  std::string why = stop.message.substr(stop.message.find("cannot be loaded"));
  std::string links =
      m_built_with.libraries.empty() ? "" : fmt::format(", it links {}", join(m_built_with.libraries, ", "));
  std::string package_torch =
      absent ? fmt::format("the torch at {} (no longer installed there{})", display_path(m_built_with.torch_dir), links)
             : fmt::format("torch {}{}", built, links.empty() ? "" : " (" + links.substr(2) + ")");
  std::string what_to_do =
      absent ? "install that torch again, or give --python PATH: a Python whose torch built the package; aoti-bisect "
               "builds a runner against it once"
             : fmt::format("give --python PATH: a Python with torch {}; aoti-bisect builds a runner against it once",
                           built);
  return {Verdict::could_not_test,
          fmt::format("package '{}' was built by {}, and this runner's LibTorch is {}: the model {}; {}",
                      display_path(m_opt.package), package_torch, runner, why, what_to_do)};
}

// A package that ships its model's sources, not its library
// (package_cpp_only): the library built from them with their own flags
// against the runner's LibTorch, once (cached), as LibTorch's loader would
// at every load.
void Job::build_from_sources(Inspected& in, const fs::path& package_dir, const Settings& s) {
  const fs::path model_dir = package_dir / "data" / "aotinductor" / in.model->name;
  std::optional<SourcesOnly> src = sources_only(model_dir, *in.model);
  if (!src) {
    return;
  }
  m_rec.begin_phase("build", "the model's library from the package's own sources (package_cpp_only)");
  RunnerVersions runner = runner_versions(m_opt);
  if (runner.torch_dir.empty()) {
    throw Error(ErrorKind::cannot_test,
                "the package holds sources only (package_cpp_only), and the runner does not say where its LibTorch "
                "is, to compile them against");
  }
  fs::path cache = s.cache_dir.empty() ? default_cache_dir() : s.cache_dir;
  SourcesOnlyBuild built = build_sources_only(*src, runner.torch_dir, cache,
                                              s.build_timeout_s,
                                              [this](const std::string& line) { m_rec.progress().note(line); });
  BuildRecord record;
  record.purpose = "model library";
  record.source = "package sources (package_cpp_only)";
  record.fidelity = "the package's own sources and flags, compiled as LibTorch's loader compiles them";
  record.key = built.library.parent_path().filename().string();
  record.cache_hit = built.cache_hit;
  record.seconds = built.seconds;
  record.torch_version = runner.torch;
  m_rec.build(record, !built.cache_hit);
  m_rec.note(fmt::format("the package holds sources only (package_cpp_only): its model library was built from them "
                         "with their own flags against torch {} ({}, {})",
                         runner.torch, display_path(built.compiler),
                         built.cache_hit ? "found in the cache" : fmt::format("{:.1f} s", built.seconds)));
  in.built = *in.model;
  in.built.shared_object = in.built.dir + src->library.filename().string();
  in.model = &in.built;
}

// The matrix phase's steps (job/matrix_phase.hpp), then the kernel search.
JobResult Job::run_matrix(Inspected& in, JobContext& job, const ModelDir& model) {
  MatrixPhase matrix(job, model, in.model->name);
  auto baseline = matrix.run_baseline();
  if (auto damaged = settle_copies()) {
    return end(*damaged);
  }
  settle_host();
  if (baseline) {
    return end(*baseline);
  }
  if (auto stop = runner_fits(matrix.baseline())) {
    return end(*stop);
  }
  if (auto stop = matrix.refuse_inputs()) {
    return end(*stop);
  }
  std::optional<BisectOutcome> early;
  if (matrix.answers_first()) {
    auto first = search_first(in, job, model, matrix);
    if (auto* stop = std::get_if<Stop>(&first)) {
      return end(*stop);
    }
    early = std::get<BisectOutcome>(first);
  }
  if (auto stop = matrix.run_stages()) {
    return end(*stop);
  }
  if (auto stop = matrix.read()) {
    return end(*stop);
  }
  if (auto stop = matrix.without_failure()) {
    return end(*stop);
  }
  const BatchDimension dim =
      batch_dimension(in.wrapper, in.model->wrapper_cpp.empty() ? "" : in.pkg->read_entry(in.model->wrapper_cpp));
  shrink_trigger(job, model, matrix, dim);
  if (!job.settings.bisect) {
    return finish(Verdict::not_isolated, matrix.failure_text() + "; kernel bisection was not asked for (--no-bisect)");
  }
  return search_failure(in, job, model, matrix, dim, early);
}

// The baseline's word on the runner: one that cannot load the package, with
// both torches named where they differ (versions_apart); one of another
// torch that ran it, a note.
std::optional<Stop> Job::runner_fits(const ChildResult& baseline) {
  const auto& runner_env = baseline.cls.environment;
  if (auto stop = broken_run(baseline)) {
    return versions_apart(*stop, runner_env);
  }
  std::string runner = torch_release(runner_env.count("torch") ? runner_env.at("torch") : "");
  if (!m_built_with.version.empty() && !runner.empty() && m_built_with.version != runner) {
    m_rec.note(fmt::format("the package was built by torch {}, the runner's LibTorch is {}: a package runs with the "
                           "LibTorch it was built with (AOTInductor's runtime is compiled into it)",
                           m_built_with.version, runner));
  }
  return std::nullopt;
}

// The kernel search (search/search.hpp) as a step: a refused exported
// program or an interrupt ends the job.
std::variant<BisectOutcome, Stop> Job::search_kernels(JobContext& job, const BisectSetup& setup) {
  BisectOutcome b;
  try {
    b = run_bisection(job, setup, m_seams.source);
  } catch (const ProgramRefused& e) {
    return Stop{Verdict::could_not_test, e.what()};
  }
  if (b.verdict == Verdict::interrupted || interrupt_requested()) {
    return Stop{Verdict::interrupted, fmt::format("during the kernel bisection ({} phase)", m_rec.phase()),
                Stop::How::interrupted};
  }
  return b;
}

// The answer first: a NaN/Inf or wrong-values failure (the process stays
// sound) is searched right after the baseline, in its environment, and the
// matrix runs after the answer; search_failure keeps it where the matrix
// finds the failure steady there.
std::variant<BisectOutcome, Stop> Job::search_first(const Inspected& in, JobContext& job, const ModelDir& model,
                                                    const MatrixPhase& matrix) {
  const ChildResult& base = matrix.baseline();
  m_rec.note(fmt::format("the kernel search runs first, in the baseline's environment; the flag matrix follows ({}) "
                         "and completes the report (--matrix-first: the matrix before the search)",
                         matrix_plan_text(job.settings.plan,
                                          MatrixStage{base.cls.kind, job.settings.profile.backend != "cpu", false})));
  BisectSetup setup{*in.pkg, *in.model, in.wrapper, matrix.baseline_run().env, matrix.baseline_run().variant,
                    base.cls.kind, base.cls.first_line, true, base.status.seconds,
                    m_rec.report().environment.torch_version, {}, "model", model, matrix.run_list()};
  const std::string next = "; the flag matrix runs next and completes the report";
  setup.on_found = [this](const std::string& line) { m_rec.first_answer(line, false); };
  setup.on_culprit = [this, &next](const std::string& reason) { m_rec.answer_confirmed(reason + next); };
  auto first = search_kernels(job, setup);
  if (auto* b = std::get_if<BisectOutcome>(&first);
      b != nullptr && b->verdict == Verdict::isolated && !m_rec.report().first_answer_seconds) {
    m_rec.first_answer(b->reason + next);  // a search that names its culprit elsewhere (guide mode)
  }
  return first;
}

// The kernel search for the matrix's failure, in the environment it chose;
// or the first search's answer, where the matrix found the same failure
// steady in the baseline's environment.
JobResult Job::search_failure(const Inspected& in, JobContext& job, const ModelDir& model, const MatrixPhase& matrix,
                              const BatchDimension& dim,
                              const std::optional<BisectOutcome>& early) {
  const Failure& f = matrix.failure();
  const std::string reproduced = matrix.failure_text();
  int runs_before = 0;
  if (early) {
    if (f.kind == matrix.baseline().cls.kind && f.deterministic && matrix.chosen_env() == matrix.baseline_run().env) {
      m_rec.refresh_repro_command();
      check_batch_dependence(job, early->probed, matrix, dim);
      m_explain_later = early->explain_later;
      return finish(early->verdict, early->reason.empty() ? reproduced : reproduced + "; " + early->reason);
    }
    std::string why = f.kind != matrix.baseline().cls.kind
                          ? fmt::format("the matrix's failure is {}", outcome_name(f.kind))
                      : !f.deterministic ? std::string("not every run of the matrix reproduced it")
                                         : fmt::format("the matrix chose {} to search under", f.reproducing_variant);
    m_rec.set_aside_search();
    m_rec.note(fmt::format("the first search's answer is set aside ({}): the search runs again", why));
    clear_repro_folder(job.settings.out_dir / "repro");  // its saved tensors; the new search saves its own
    for (const auto& run : m_rec.report().runs) {  // the runs go on from the first search's numbers
      runs_before += run.group == "search" ? 1 : 0;
    }
  }
  BisectSetup setup{*in.pkg, *in.model, in.wrapper, matrix.chosen_env(), f.reproducing_variant, f.kind, f.first_line,
                    f.deterministic, matrix.baseline().status.seconds, m_rec.report().environment.torch_version, {},
                    "model", model, matrix.run_list()};
  setup.runs_before = runs_before;
  auto searched = search_kernels(job, setup);
  if (auto* stop = std::get_if<Stop>(&searched)) {
    return end(*stop);
  }
  const BisectOutcome& b = std::get<BisectOutcome>(searched);
  check_batch_dependence(job, b.probed, matrix, dim);
  m_explain_later = b.explain_later;
  return finish(b.verdict, b.reason.empty() ? reproduced : reproduced + "; " + b.reason);
}
}  // namespace

ExitCode exit_code_for(Verdict verdict) {
  switch (verdict) {
    case Verdict::clean: return ExitCode::clean;
    case Verdict::isolated: return ExitCode::isolated;
    case Verdict::not_isolated:
    case Verdict::inconclusive:
    case Verdict::suppressed_by_instrumentation: return ExitCode::not_isolated;
    case Verdict::could_not_test: return ExitCode::cannot_test;
    case Verdict::interrupted: return ExitCode::interrupted;
    case Verdict::running:
    case Verdict::internal_error: return ExitCode::internal;
  }
  return ExitCode::internal;
}

int git_bisect_exit_code(ExitCode code) {
  switch (code) {
    case ExitCode::clean: return 0;
    case ExitCode::isolated:
    case ExitCode::not_isolated: return 1;
    case ExitCode::cannot_test: return 125;
    case ExitCode::interrupted: return 130;
    case ExitCode::usage:
    case ExitCode::internal: return 128;
  }
  return 128;
}

JobResult run_job(const RunOptions& options, Progress& progress, const JobSeams& seams) {
  return Job(options, progress, seams).run();
}

}  // namespace aoti_bisect
