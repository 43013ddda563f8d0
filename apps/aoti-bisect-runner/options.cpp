// aoti-bisect-runner's command line: the options of one run, as the driver
// passes them (harness/children.cpp builds them) and a fork server's
// request repeats them.

#include "options.hpp"

namespace aoti_bisect::torchside {

void define_runner_options(CLI::App& app, RunnerOptions& opt) {
  app.add_option("--package-dir", opt.package_dir, "extracted package directory")->required();
  app.add_option("--model", opt.model, "model name in the package");
  app.add_option("--device-key", opt.device_key, "the model's AOTI_DEVICE_KEY")->required();
  auto* inputs = app.add_option("--inputs", opt.inputs, "inputs saved with torch.save");
  app.add_option("--batch-list", opt.batch_list,
                 "a file naming one inputs file per line: each runs in turn in this process (batch events), "
                 "probes on the last only")
      ->excludes(inputs);
  app.add_flag("--keep-going", opt.keep_going,
               "with --batch-list: go on after a batch that raises or makes NaN/Inf (its batch_end says so)");
  app.add_option("--events", opt.events, "events file (JSON Lines)")->required();
  app.add_option("--outputs", opt.outputs, "where to write the outputs (torch.save format)");
  app.add_option("--reference", opt.reference, "expected outputs (torch.save format)");
  app.add_option("--probe-plan", opt.probe_plan, "probe plan (JSON) for an instrumented build");
  app.add_option("--node-reference", opt.node_reference, "per-node eager values for the probes (torch.save dict)");
  app.add_option("--tolerances", opt.tolerances, "per-dtype tolerances (JSON) for --reference");
  app.add_option("--hooks", opt.hooks, "interposition hook library (generated per package) to bind into the model");
  app.add_flag("--contiguous-inputs", opt.contiguous_inputs,
               "copy inputs whose strides differ from the package's into its layout (else they are refused)");
  app.add_option("--load-library", opt.libraries,
                 "a shared library of custom operators (TORCH_LIBRARY) to load before the model (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--time-limit", opt.time_limit_s,
                 "seconds each call of the model may take (after the load); past it the run ends with exit 14");
  app.add_option("--samples", opt.samples,
                 "run these rows of the batch (0-based, comma-separated, repeats allowed) instead of the whole batch")
      ->delimiter(',');
  app.add_option("--batch-inputs", opt.batch_inputs,
                 "with --samples: the flat inputs whose dimension 0 is the batch (0-based, comma-separated)")
      ->delimiter(',');
  app.add_option("--save-inputs", opt.save_inputs,
                 "with --samples: write the inputs so cut, in the inputs file's own form (torch.save format)");
  app.add_option("--model-facts", opt.model_facts,
                 "the model's facts (JSON) as the driver parsed them from its wrapper");
}

}  // namespace aoti_bisect::torchside
