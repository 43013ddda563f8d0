// The reference phase: the exported program run eagerly on the inputs (--against-eager).
#include "job/reference.hpp"

#include <fmt/format.h>

#include "common/files.hpp"
#include "inductor/build.hpp"
#include "inputs/tensor_file.hpp"
#include "search/search.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

Step<fs::path> reference_phase(const Settings& s, const Inspected& in, const fs::path& work, Recorder& rec) {
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
  req.python = s.python;
  try {
    // torch.load (weights_only) reads torch.save's zip format only.
    req.inputs = plain_torch_save(s.inputs, "inputs file", work);
    compute_eager_reference(req);
  } catch (const EagerRunFailed& e) {
    // Eager fails on these inputs too: the package's run may still fault or
    // make NaN/Inf, which needs no reference.
    rec.note(
        fmt::format("{} (output values are not compared with eager; faults and NaN/Inf are still searched)", e.what()));
    return fs::path();
  } catch (const Error& e) {
    return stop_of(e);
  }
  rec.reference(display_path(req.out) + " (eager, from the exported program" +
                (s.eager_device.empty() ? ")" : ", on the " + s.eager_device + ")"));
  if (!s.eager_device.empty() && s.eager_device != in.model->device_key()) {
    rec.note(
        fmt::format("eager ran on the {} (--eager-device {}), the package on {}: outputs that agree are a hint, "
                    "not a validation on {}; outputs that differ may differ by the device's own kernels",
                    s.eager_device, s.eager_device, in.model->device_key(), in.model->device_key()));
  }
  return req.out;
}

}  // namespace aoti_bisect
