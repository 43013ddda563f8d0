#!/usr/bin/env python3
"""aoti-bisect's instrumented-build helper (embedded in the aoti-bisect binary).

Compiles an exported program into an AOTInductor package with the
intermediate-value debug printer on:

  aoti_bisect_build.py --exported-program PATH [--model-name NAME]
      --configs JSON_FILE --level N [--filter k1,k2] --out PKG.pt2
      --result RESULT.json

PATH is a torch.export.save file or a package_pt2 archive holding
models/<NAME>.json. JSON_FILE holds the inductor configs (an object of
scalars). The package is written atomically (compiled in a temporary folder
beside OUT, then renamed over it). RESULT.json is always written:
  {"ok": bool, "torch_version": str, "seconds": float,
   "error": first useful line or null,
   "error_kind": "no_torch" | "load" | "compile" | null}
Exit status: 0 built, 3 load or compile error, 4 torch cannot be imported,
2 bad arguments.

With --eager-inputs IN.pt --eager-out OUT.pt instead of --configs/--level/
--out, it runs the exported program eagerly on the inputs (a torch.save file
of tensors flattened in input order, as aoti-bisect takes them) and saves the
outputs, flattened, as a tuple (the reference for --against-eager).

Inductor's compile cache goes where TORCHINDUCTOR_CACHE_DIR says (the driver
sets it when the user has not). Python 3.9+.
"""

import argparse
import json
import os
import re
import shutil
import sys
import time
import traceback
import zipfile

EXIT_OK = 0
EXIT_BAD_ARGS = 2
EXIT_FAILED = 3
EXIT_NO_TORCH = 4

MAX_ERROR_CHARS = 500


class StepError(Exception):
    """A failure of one step, with the result's error_kind."""

    def __init__(self, kind, line):
        super().__init__(line)
        self.kind = kind
        self.line = line


def first_useful_line(exc):
    """One line that says what went wrong: a compiler diagnostic if the text
    holds one, else the first non-empty line; prefixed by the exception type."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    line = next((ln for ln in lines if re.search(r"\b(fatal )?error:", ln)), None)
    if line is None:
        line = lines[0] if lines else ""
    else:
        # "/long/cache/path/k.cpp:3:1: error: ..." -> "k.cpp:3:1: error: ..."
        line = re.sub(r"^\S*/(?=[^/\s]+:\d+:)", "", line)
    text = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 3] + "..."
    return text


def write_json_atomic(path, obj):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def archive_model_names(path):
    """Names of models/<name>.json in a zip archive (under its top folder);
    None when the file is not a zip or holds no models/ folder."""
    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as z:
        names = []
        for entry in z.namelist():
            m = re.match(r"^(?:[^/]+/)?models/([^/]+)\.json$", entry)
            if m:
                names.append(m.group(1))
    return sorted(names) if names else None


def load_exported_program(torch, path, model_name):
    names = archive_model_names(path)
    if names is not None:
        try:
            from torch.export.pt2_archive import _package as pt2
        except ImportError:
            pt2 = None
        if pt2 is not None:
            if model_name not in names:
                raise StepError(
                    "load",
                    f"'{path}' holds no exported program '{model_name}' "
                    f"(it holds: {', '.join(names)})",
                )
            return load_from_pt2_archive(pt2, path)[model_name]
    # torch.export.save files (and package_pt2 archives on a torch too old
    # to know them, which then fails with torch's own message).
    return torch.export.load(path)


def load_from_pt2_archive(pt2, path):
    # load_pt2 would also load (dlopen) every AOTI model in the archive, which
    # fails for a CUDA package on a machine without a GPU and is never needed
    # here: read only the exported programs where torch lets us.
    reader = getattr(pt2, "PT2ArchiveReader", None)
    loader = getattr(pt2, "_load_exported_programs", None)
    if reader is not None and loader is not None:
        try:
            with reader(path) as r:
                return loader(r, r.get_file_names(), None)
        except TypeError:
            pass  # a private signature that moved: use the public entry point
    return pt2.load_pt2(path).exported_programs


def inductor_configs(user_configs, level, kernel_filter):
    configs = dict(user_configs)
    configs["aot_inductor.debug_intermediate_value_printer"] = str(level)
    # The filter only acts at level 2 (levels 1 and 3 ignore it). Always set
    # it so that AOT_INDUCTOR_FILTERED_KERNELS_TO_PRINT in the environment
    # cannot change a build whose cache key does not know it.
    if level == 2 and kernel_filter:
        configs["aot_inductor.filtered_kernel_names"] = ",".join(kernel_filter)
    else:
        configs["aot_inductor.filtered_kernel_names"] = None
    return configs


def compile_package(torch, ep, configs, out):
    # Compiled into a private folder beside OUT under OUT's own file name (the
    # package's top-level folder is named after the file's stem), then renamed
    # over OUT: a reader never sees half a package.
    out_dir, out_name = os.path.split(os.path.abspath(out))
    work = os.path.join(out_dir, f".{out_name}.tmp-{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    tmp = os.path.join(work, out_name)
    try:
        # aoti_compile_and_package adds keys to the dict it is given: a copy.
        torch._inductor.aoti_compile_and_package(
            ep, package_path=tmp, inductor_configs=dict(configs)
        )
        os.replace(tmp, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="aoti_bisect_build.py", description=__doc__.splitlines()[0])
    p.add_argument("--exported-program", required=True)
    p.add_argument("--model-name", default="model")
    p.add_argument("--configs", help="JSON file: inductor configs")
    p.add_argument("--level", type=int, choices=[1, 2, 3])
    p.add_argument("--filter", default="", help="kernel names, comma-separated (level 2)")
    p.add_argument("--out", help="the package to write (.pt2)")
    p.add_argument("--eager-inputs", help="inputs (torch.save) to run the exported program on eagerly")
    p.add_argument("--eager-out", help="where to save the eager outputs (torch.save)")
    p.add_argument("--result", required=True, help="the result JSON to write")
    args = p.parse_args(argv)
    if args.eager_inputs or args.eager_out:
        if not (args.eager_inputs and args.eager_out):
            p.error("--eager-inputs and --eager-out go together")
        return args
    if not (args.configs and args.level and args.out):
        p.error("--configs, --level and --out are required for a build")
    if not args.out.endswith(".pt2"):
        p.error("--out must end in .pt2")
    return args


def flatten_inputs(value, out):
    """Tensors of a torch.save'd value in order: tuples, lists, dict values."""
    if isinstance(value, (tuple, list)):
        for v in value:
            flatten_inputs(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            flatten_inputs(v, out)
    else:
        out.append(value)
    return out


def run_eager(torch, ep, inputs_path, out_path):
    import torch.utils._pytree as pytree

    flat = flatten_inputs(torch.load(inputs_path, weights_only=True), [])
    args, kwargs = pytree.tree_unflatten(flat, ep.call_spec.in_spec)
    with torch.no_grad():
        outputs = ep.module()(*args, **kwargs)
    leaves = [t.detach().cpu() for t in pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]
    tmp = f"{out_path}.tmp-{os.getpid()}"
    torch.save(tuple(leaves), tmp)
    os.replace(tmp, out_path)


def load_step(torch, args):
    try:
        return load_exported_program(torch, args.exported_program, args.model_name)
    except StepError:
        raise
    except Exception as e:
        raise StepError("load", first_useful_line(e)) from e


def run(args):
    result = {"ok": False, "seconds": 0.0, "error": None, "error_kind": None}
    start = time.monotonic()
    try:
        import torch
        import torch._inductor
        import torch.export
    except Exception as e:  # ImportError, or a broken install
        traceback.print_exc()
        result.update(error=first_useful_line(e), error_kind="no_torch")
        result["seconds"] = round(time.monotonic() - start, 3)
        write_json_atomic(args.result, result)
        return EXIT_NO_TORCH
    result["torch_version"] = torch.__version__

    try:
        if args.eager_inputs:
            ep = load_step(torch, args)
            try:
                run_eager(torch, ep, args.eager_inputs, args.eager_out)
            except Exception as e:
                raise StepError("eager", first_useful_line(e)) from e
        else:
            with open(args.configs, encoding="utf-8") as f:
                user_configs = json.load(f)
            if not isinstance(user_configs, dict):
                raise StepError("load", f"--configs '{args.configs}' must hold a JSON object")
            kernel_filter = [k.strip() for k in args.filter.split(",") if k.strip()]
            configs = inductor_configs(user_configs, args.level, kernel_filter)
            ep = load_step(torch, args)
            try:
                compile_package(torch, ep, configs, args.out)
            except Exception as e:
                raise StepError("compile", first_useful_line(e)) from e
    except StepError as e:
        traceback.print_exc()
        result.update(error=e.line, error_kind=e.kind)
        result["seconds"] = round(time.monotonic() - start, 3)
        write_json_atomic(args.result, result)
        return EXIT_FAILED

    result.update(ok=True)
    result["seconds"] = round(time.monotonic() - start, 3)
    write_json_atomic(args.result, result)
    return EXIT_OK


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
