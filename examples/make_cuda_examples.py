#!/usr/bin/env python3
"""Build the CUDA example AOTInductor packages that scripts/device-check runs aoti-bisect on.

The same conventions as make_examples.py (the CPU examples): each example NAME is written into
--out DIR as NAME.pt2 (the package, device "cuda"), NAME.inputs.pt (plain CPU tensors; the
runner moves them to the device), NAME.expected.pt (eager outputs, where eager can run them
without breaking the CUDA context), NAME.ep.pt2 (the exported program), NAME.config.yaml (the
Inductor configs, for the exported program's build) and NAME.json (what it is and the expected
culprit call site; written last).

The models are tiny and autotuning is off ("max_autotune": False,
"triton.autotune_pointwise": False), so that all five build in a minute or two.

Usage:
  make_cuda_examples.py --out DIR [--only NAME[,NAME...]]
  make_cuda_examples.py --list
  make_cuda_examples.py --check     no device needed: imports torch, checks every Inductor config
                                    name used here and exports every model on the CPU
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_examples as base  # noqa: E402  (the CPU examples' helpers: staging, plain tensors)

# --------------------------------------------------------------------------------------
# The catalogue. Kept free of torch so that --list is fast.
# --------------------------------------------------------------------------------------

# "culprit" names the first bad call site: the first call site in run_impl whose kernel
# matches the regular expression (triton kernels are named without their "call_" prefix,
# as aoti-bisect names them).
EXAMPLES = {
    "cuda_gather_oob": dict(
        description="embedding gather in a Triton kernel compiled with assert_indirect_indexing=False, fed the "
        "index 1 << 40: an illegal memory access",
        outcome="crash",
        bug="idx[2] = 1 << 40 (inputs[1]) into an Embedding(50, 16) lowered by Inductor without its bounds check; "
        "the Triton kernel reads about 64 TiB past the weight. CUDA reports 'an illegal memory access was "
        "encountered', asynchronously: without CUDA_LAUNCH_BLOCKING a later call may be the one that sees it.",
        culprit=r"^triton_.*embedding",
        eager=False,
    ),
    "cuda_gather_assert": dict(
        description="the same gather with the bounds check on (assert_indirect_indexing=True, the default), fed "
        "an index past the table: a device-side assert",
        outcome="device_assert",
        bug="idx[2] = 57 for an Embedding(50, 16): Inductor's tl.device_assert in the gather kernel fires "
        "('index out of bounds: 0 <= tmpN < 50'), and CUDA reports 'device-side assert triggered'.",
        culprit=r"^triton_.*embedding",
        eager=False,
    ),
    "cuda_nan_triton": dict(
        description="finite inputs; a Triton kernel takes the log of a Linear output with negative entries: NaN",
        outcome="nonfinite",
        bug="torch.log of the output of a Linear layer (about half its entries are negative), in a Triton "
        "pointwise kernel (triton_poi_fused_..._log_...), with healthy call sites before and after it. Eager "
        "computes the same NaN: expected.pt holds NaN too.",
        culprit=r"^triton_.*log",
        eager=True,
    ),
    "cuda_fp16_overflow": dict(
        description="float16 model: a cuBLAS matmul of finite values (up to 300) overflows float16 (max 65504) "
        "to inf, which softmax turns into NaN",
        outcome="nonfinite",
        bug="q = sigmoid(x W) * 300 in float16, then s = q @ q.T sums 64 products of up to 9e4: +inf in float16. "
        "The first non-finite values come out of the one extern matmul call (aoti_torch_cuda_mm_out, cuBLAS), "
        "not a Triton kernel; the softmax after it makes NaN. Eager computes the same inf and NaN.",
        culprit=r"^aoti_torch_cuda_(mm|addmm|bmm)",
        eager=True,
    ),
    "cuda_relu_accuracy": dict(
        description="compiled with triton.inject_relu_bug_TESTING_ONLY='accuracy' (relu becomes x + 1): runs, "
        "finite, wrong values",
        outcome="mismatch",
        bug="Inductor's testing-only bug injection: the Triton kernel holding the relu computes x + 1 instead of "
        "max(x, 0); expected.pt holds the correct eager result.",
        culprit=r"^triton_.*relu",
        eager=True,
    ),
}

# Inductor configs every example is built with: tiny models, no autotuning.
COMMON_CONFIGS = {"max_autotune": False, "triton.autotune_pointwise": False}

torch = None
nn = None
F = None


def _import_torch():
    global torch, nn, F
    import torch as _torch
    import torch.nn as _nn
    import torch.nn.functional as _F

    torch, nn, F = _torch, _nn, _F


# --------------------------------------------------------------------------------------
# Models. Each builder returns (model, inputs tuple, inductor_configs), on the CPU; the
# builder below moves model and inputs to the device.
# --------------------------------------------------------------------------------------

B, D, H = 8, 16, 32
VOCAB = 50


def _gather_model(index_value, configs):
    class Gather(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.ModuleList([nn.Linear(D, H), nn.Linear(H, D), nn.Linear(D, 4)])
            self.emb = nn.Embedding(VOCAB, D)

        def forward(self, x, idx):
            h = F.gelu(self.fc[0](x))  # mm, gelu kernel
            h = torch.tanh(self.fc[1](h) + self.emb(idx))  # mm, the gather (+ add, tanh)
            return (F.softmax(self.fc[2](h), dim=-1),)  # mm, softmax kernel

    x = torch.randn(B, D)
    idx = torch.randint(0, VOCAB, (B,), dtype=torch.int64)
    idx[2] = index_value
    return Gather(), (x, idx), configs


def build_cuda_gather_oob():
    return _gather_model(1 << 40, {"assert_indirect_indexing": False})


def build_cuda_gather_assert():
    return _gather_model(VOCAB + 7, {"assert_indirect_indexing": True})


def build_cuda_nan_triton():
    class NanMidway(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.ModuleList([nn.Linear(D, H), nn.Linear(H, H), nn.Linear(H, 4)])

        def forward(self, x):
            h = F.gelu(self.fc[0](x))  # mm, gelu kernel
            h = torch.log(self.fc[1](h))  # mm, the log kernel: NaN from here on
            return (F.softmax(self.fc[2](torch.tanh(h)), dim=-1),)  # tanh, mm, softmax

    return NanMidway(), (torch.randn(B, D),), {}


def build_cuda_fp16_overflow():
    class Fp16Overflow(nn.Module):
        def forward(self, x):
            q = torch.sigmoid(x) * 300.0  # a Triton kernel: finite, up to 300
            s = q @ q.t()  # the one matmul (cuBLAS): sums of 64 products up to 9e4 overflow float16
            return (F.softmax(s, dim=-1) + 1.0,)  # softmax kernel: inf - inf = NaN

    return Fp16Overflow(), (torch.randn(B, 64).half(),), {}


def build_cuda_relu_accuracy():
    class ReluNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.ModuleList([nn.Linear(D, H), nn.Linear(H, H), nn.Linear(H, 4)])

        def forward(self, x):
            h = torch.tanh(self.fc[0](x))  # mm, tanh kernel
            h = F.relu(self.fc[1](h))  # mm, the relu kernel (the injected bug)
            return (F.softmax(self.fc[2](h), dim=-1),)  # mm, softmax kernel

    return ReluNet(), (torch.randn(B, D),), {"triton.inject_relu_bug_TESTING_ONLY": "accuracy"}


BUILDERS = {
    "cuda_gather_oob": build_cuda_gather_oob,
    "cuda_gather_assert": build_cuda_gather_assert,
    "cuda_nan_triton": build_cuda_nan_triton,
    "cuda_fp16_overflow": build_cuda_fp16_overflow,
    "cuda_relu_accuracy": build_cuda_relu_accuracy,
}
assert BUILDERS.keys() == EXAMPLES.keys()

# --------------------------------------------------------------------------------------
# The wrapper's call sites, as aoti-bisect numbers them (lib/wrapper/wrapper.cpp).
# --------------------------------------------------------------------------------------

_CALL_RES = (
    re.compile(r"\bcall_(triton_\w+)\("),
    re.compile(r"^kernels\.(\w+)\("),
    re.compile(r"\b(aoti_torch_cuda_\w+)\("),
    re.compile(r"\b(aoti_torch_proxy_executor_call_function)\("),
)


def kernel_call_order(package_path):
    """Kernel and extern call sites in the wrapper's run_impl, in source order."""
    with zipfile.ZipFile(package_path) as z:
        names = [n for n in z.namelist() if n.endswith(".cpp") and "/data/aotinductor/" in "/" + n]
        wrappers = [n for n in names if n.endswith(".wrapper.cpp")] or [n for n in names if ".kernel." not in n]
        if not wrappers:
            return [], None
        src = z.read(wrappers[0]).decode("utf-8", "replace")
    start = src.find("AOTInductorModel::run_impl(")
    if start < 0:
        return [], wrappers[0]
    body = src[start:]
    m = re.search(r"\n}\s*(//[^\n]*)?\n", body)
    if m:
        body = body[: m.start()]
    calls = []
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("//"):
            continue
        for rx in _CALL_RES:
            found = rx.search(s)
            if found:
                calls.append(found.group(1))
                break
    return calls, wrappers[0]


def find_culprit(spec, calls):
    rx = re.compile(spec["culprit"])
    for i, k in enumerate(calls):
        if rx.search(k):
            return {"call_index": i, "kernel": k}
    raise RuntimeError(f"no call site matches {spec['culprit']!r} among {calls}")


# --------------------------------------------------------------------------------------


def _config_names_missing(configs):
    """Inductor config keys (dotted) that the installed torch does not know."""
    import torch._inductor.config as cfg

    missing = []
    for key in configs:
        obj = cfg
        for part in key.split("."):
            if not hasattr(obj, part):
                missing.append(key)
                break
            obj = getattr(obj, part)
    return missing


def check(names):
    """What can be checked without a device: the configs exist, the models export."""
    problems = []
    if not hasattr(torch._inductor, "aoti_compile_and_package"):
        problems.append("torch._inductor.aoti_compile_and_package is missing")
    for n in names:
        torch.manual_seed(base.SEED)
        model, inputs, configs = BUILDERS[n]()
        configs = {**COMMON_CONFIGS, **configs}
        missing = _config_names_missing(configs)
        if missing:
            problems.append(f"{n}: unknown Inductor config(s) {', '.join(missing)}")
        try:
            with torch.no_grad():
                torch.export.export(model.eval(), inputs)
        except Exception as e:
            problems.append(f"{n}: torch.export failed: {type(e).__name__}: {e}")
            continue
        print(f"[make_cuda_examples] {n}: configs known, exports on the CPU", flush=True)
    import torch._inductor.config as cfg

    bug = getattr(cfg.triton, "inject_relu_bug_TESTING_ONLY", "missing")
    print(f"[make_cuda_examples] torch {torch.__version__}, triton.inject_relu_bug_TESTING_ONLY={bug!r}, "
          f"cuda available: {torch.cuda.is_available()}", flush=True)
    for p in problems:
        print(f"[make_cuda_examples] problem: {p}", file=sys.stderr, flush=True)
    return 1 if problems else 0


def build_one(name, out_dir):
    spec = EXAMPLES[name]
    t0 = time.monotonic()
    files = {
        "package": f"{name}.pt2",
        "inputs": f"{name}.inputs.pt",
        "expected": f"{name}.expected.pt",
        "exported_program": f"{name}.ep.pt2",
        "config": f"{name}.config.yaml",
    }
    meta_base = f"{name}.json"
    for b in [meta_base, *files.values()]:
        p = os.path.join(out_dir, b)
        if os.path.exists(p):
            os.unlink(p)

    torch.manual_seed(base.SEED)
    model, inputs, configs = BUILDERS[name]()
    configs = {**COMMON_CONFIGS, **configs}
    dev = torch.device("cuda")
    model = model.eval().to(dev)
    if inputs[0].dtype == torch.float16:
        model = model.half()
    inputs = tuple(base._plain(t) for t in inputs)
    dev_inputs = tuple(t.to(dev) for t in inputs)

    expected, expected_note = None, None
    if spec["eager"]:
        with torch.no_grad():
            out = model(*dev_inputs)
        torch.cuda.synchronize()
        expected = tuple(base._plain(t) for t in (out if isinstance(out, (tuple, list)) else (out,)))
    else:
        # Eager would fault or assert on the device and break this process's CUDA context.
        expected_note = "no reference: eager would fault on the device with these inputs"
        files["expected"] = None

    stage = base._Staging(out_dir, name)
    try:
        with torch.no_grad():
            ep = torch.export.export(model, dev_inputs)
        torch.export.save(ep, stage.path(files["exported_program"]))
        t_compile = time.monotonic()
        torch._inductor.aoti_compile_and_package(
            ep, package_path=stage.path(files["package"]), inductor_configs=dict(configs)
        )
        compile_s = time.monotonic() - t_compile
        torch.save(inputs, stage.path(files["inputs"]))
        if expected is not None:
            torch.save(expected, stage.path(files["expected"]))
        with open(stage.path(files["config"]), "w") as f:
            f.write(f"# aoti-bisect --config for the {name} example\ninductor_configs:\n")
            for key, value in configs.items():
                f.write(f"  {key}: {json.dumps(value)}\n")

        calls, wrapper = kernel_call_order(stage.path(files["package"]))
        meta = {
            "name": name,
            "description": spec["description"],
            "expected_outcome": spec["outcome"],
            "bug": spec["bug"],
            "culprit": find_culprit(spec, calls),
            "files": files,
            "expected_note": expected_note,
            "inputs": [base._tensor_desc(t) for t in inputs],
            "outputs": [base._tensor_desc(t) for t in expected] if expected is not None else None,
            "inductor_configs": configs,
            "kernels": calls,
            "wrapper_source": wrapper,
            "seed": base.SEED,
            "torch_version": torch.__version__,
            "device_name": torch.cuda.get_device_name(),
            "compile_seconds": round(compile_s, 2),
            "build_seconds": round(time.monotonic() - t0, 2),
        }
        stage.commit_example(files, meta_base, meta)
    finally:
        stage.cleanup()
    return meta


def main(argv=None):
    ap = argparse.ArgumentParser(description="Build the aoti-bisect CUDA example packages.")
    ap.add_argument("--out", help="output directory (created if missing)")
    ap.add_argument("--only", help="comma-separated example names (default: all)")
    ap.add_argument("--list", action="store_true", help="print the example names and descriptions, then exit")
    ap.add_argument("--check", action="store_true", help="no device: check config names and that the models export")
    args = ap.parse_args(argv)

    if args.list:
        w = max(map(len, EXAMPLES))
        for n, s in EXAMPLES.items():
            print(f"{n:<{w}}  {s['outcome']:<13} {s['description']}")
        return 0
    names = list(EXAMPLES)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in EXAMPLES]
        if unknown:
            ap.error(f"unknown example(s): {', '.join(unknown)} (known: {', '.join(EXAMPLES)})")
    if not args.check and not args.out:
        ap.error("--out DIR is required")

    if args.out:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(os.path.abspath(args.out), ".inductor-cache"))
    _import_torch()
    base._import_torch()
    if args.check:
        return check(names)
    if not torch.cuda.is_available():
        print("[make_cuda_examples] error: no CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2

    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    failed = []
    for n in names:
        t0 = time.monotonic()
        print(f"[make_cuda_examples] {n}: building ...", flush=True)
        try:
            meta = build_one(n, out_dir)
        except Exception as e:
            failed.append(n)
            print(f"[make_cuda_examples] {n}: FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            continue
        c = meta["culprit"]
        print(
            f"[make_cuda_examples] {n}: done in {time.monotonic() - t0:.1f} s (expected outcome "
            f"{meta['expected_outcome']}, culprit {c['call_index']}:{c['kernel']}, {len(meta['kernels'])} call sites)",
            flush=True,
        )
    if failed:
        print(f"[make_cuda_examples] failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
