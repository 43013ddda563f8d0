// The inspect phase: the package opened, its model chosen, the inputs checked.
#include "job/inspect.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "archive/elf.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "inductor/build.hpp"
#include "inputs/tensor_file.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

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

// With no --inputs, the package's own sample inputs (extracted into the
// output folder), else a usage error that says --inputs is needed.
PhaseFindings take_sample_inputs(const RunOptions& opt, const Package& pkg, const ModelFiles& model,
                                 Inspection& record) {
  std::string entry = pkg.sample_inputs(model);
  if (entry.empty()) {
    throw Error(ErrorKind::usage,
                fmt::format("no --inputs given, and package '{}' holds no sample inputs for model '{}' "
                            "(data/sample_inputs/{}.pt, which torch.export's package_pt2 writes beside an exported "
                            "program): give --inputs FILE (torch.save or safetensors)",
                            pkg.path().string(), model.name, model.name));
  }
  PhaseFindings found;
  found.inputs = opt.out_dir / "sample-inputs.pt";
  pkg.extract_file(entry, found.inputs);
  found.sample_inputs = true;
  record.sample_inputs = display_path(found.inputs);
  record.notes.push_back(fmt::format("no --inputs given: the run uses the package's own sample inputs ({})",
                                     entry.substr(pkg.prefix().size())));
  return found;
}

// Every inputs and reference file is read torch-free before any child
// loads it: the runner's unpickler trusts the sizes these files declare.
void check_inputs_files(const RunOptions& opt, const Inspected& in, const std::vector<fs::path>& batches,
                        Inspection& record) {
  TensorFile main = check_tensor_file(in.inputs(opt), "inputs file");
  record.inputs_format = std::string(tensor_file_format_name(main.format));
  record.inputs_read_as = main.notes;
  record.inputs_origin = in.found.sample_inputs ? "the package's own sample inputs" : "";
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
fs::path load_python_for_extensions(const RunOptions& opt, Inspection& record) {
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
    std::optional<fs::path> libpython = python_shared_library(opt.cache_dir, opt.python);
    if (!libpython) {
      record.notes.push_back(
          fmt::format("library '{}' is a Python extension module (it refers to Python's C API), and python3 "
                      "has no shared libpython to load before it",
                      display_path(lib)));
      return {};
    }
    record.notes.push_back(
        fmt::format("library '{}' is a Python extension module (it refers to Python's C API): {} is loaded "
                    "before it",
                    display_path(lib), display_path(*libpython)));
    return *libpython;
  }
  return {};
}

}  // namespace

void Inspected::hash_package() {
  if (pkg && package_sha256.valid() &&
      package_sha256.wait_for(std::chrono::seconds(0)) == std::future_status::deferred) {
    package_sha256 = std::async(std::launch::async, [path = pkg->path()] { return sha256_file(path); }).share();
  }
}

Step<Inspected> inspect(const RunOptions& opt, const std::vector<fs::path>& batches, Recorder& rec) {
  rec.begin_phase("inspect", display_path(opt.package));
  Inspected in;
  Inspection record;  // recorded once, whatever ends the phase
  try {
    in.pkg = Package::open(opt.package);
    in.package_sha256 =
        std::async(std::launch::deferred, [path = in.pkg->path()] { return sha256_file(path); }).share();
    in.model = &in.pkg->select_model(opt.model);
    in.wrapper = in.pkg->wrapper_info(*in.model);
    PackageSummary summary = summarize_package(*in.pkg, *in.model, in.wrapper);
    if (opt.inputs.empty()) {
      in.found = take_sample_inputs(opt, *in.pkg, *in.model, record);
    }
    require_file(in.inputs(opt), "inputs file");
    record.package = std::move(summary);
    record.inputs_sha256 = sha256_file(in.inputs(opt));
    for (const auto& lib : opt.load_libraries) {
      require_file(lib, "library (--load-library)");
    }
    in.found.python_library = load_python_for_extensions(opt, record);
    check_inputs_files(opt, in, batches, record);
  } catch (const Error& e) {
    rec.inspected(std::move(record));
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
  rec.inspected(std::move(record));
  if (in.model->device_key().empty()) {
    return Stop{Verdict::could_not_test,
                fmt::format("package '{}': model '{}' has no AOTI_DEVICE_KEY in its metadata; rebuild it with "
                            "aoti_compile_and_package",
                            opt.package.string(), in.model->name)};
  }
  return in;
}

}  // namespace aoti_bisect
