"""Ten more examples for make_examples.py: one failure family each, with what is true of the failure
measured by the builder and recorded in NAME.json["truth"] (from eager PyTorch, from the built
package run in Python, and from the package's wrapper.cpp), so that a tool's findings can be checked
against it.

make_examples.py merges EXAMPLES and BUILDERS into its own and builds these with its build_one.
Builders return (model, inputs, configs, kwargs, extras) with extras as in handoff.py, plus the kind
build_one runs after the package is built:

  "after_build"  value: fn(package_path, info) -> (fields, inputs or None); info holds "calls"
                 (kernel_call_order's list), "ep" (the exported program), "inputs" and "expected"
                 (the eager outputs, or None) and "stage_dir". fields are added to NAME.json; inputs,
                 where given, replace the example's inputs (NAME.inputs.pt, and NAME.expected.pt is
                 recomputed from the model).

Call sites in "truth" are counted from 1, in the order kernel_call_order lists them (NAME.json's
"kernels"); culprit.call_index counts from 0.

Kept free of torch at import time (make_examples.py --list imports this module).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile

_RUNS = {"exit_code": 0, "signal": None, "stderr_contains": None}

EXAMPLES = {
    "kl_softmax_underflow": dict(
        description="a distillation loss KL(p || softmax(30 * Linear(x))) per row: in one row softmax entries "
        "underflow to exactly 0 in float32, their log is -inf and that row's loss is +inf (no NaN anywhere)",
        outcome="nonfinite",
        bug="q = softmax(Linear(x) * 30) and kl = (p * (p.log() - q.log())).sum(-1), with p (inputs[1]) a strictly "
        "positive target distribution. Row 5 of x (inputs[0]) is scaled by 4: there eager's q holds exact zeros "
        "(truth.zero_softmax_entries), q.log() is -inf and kl[5] = +inf. The other rows are finite and no output "
        "holds NaN, in the package and in eager. The softmax, the logs and the sum are one cpp kernel "
        "(cpp_fused__softmax_*log*), after the addmm. Eager computes the same +inf: expected.pt holds it too. "
        "truth.rows: the output rows holding Inf in the package's run.",
        culprit_pattern=r"log",
        expect=_RUNS,
    ),
    "zero_row_normalize": dict(
        description="a frozen MLP (freezing, under no_grad) that normalizes its relu activations to sum 1: one "
        "input row makes every relu output 0, so that row divides 0 by 0",
        outcome="nonfinite",
        bug="h = relu(fc1(x)) is one aoti_torch_cpu__linear_pointwise call (relu fused by oneDNN); "
        "w = h / h.sum(-1, keepdim=True) is one cpp kernel (cpp_fused_div_sum_*); fc2 is another linear call. Row 2 "
        "of x solves fc1(x) = -2 (through the pseudo-inverse of fc1's 16 x 32 weight), so all 16 relu outputs of "
        "that row are 0 (in eager) and its w is 0/0 = NaN, which fc2 carries to that output row; the other rows "
        "are finite. Eager computes the same NaN in the same row. truth.rows: the output rows holding NaN in the "
        "package's run.",
        culprit_pattern=r"div",
        compile_no_grad=True,
        expect=_RUNS,
    ),
    "cancelled_variance_sqrt": dict(
        description="a bfloat16 feature standardizer with a one-pass variance (E[x^2] - E[x]^2) over 4096 "
        "near-constant features: in the package one row's variance rounds negative and its sqrt makes NaN",
        outcome="nonfinite",
        bug="mean = x.mean(-1); var = (x * x).mean(-1) - mean**2; the outputs are head((x - mean) / var.sqrt()) "
        "and var. Model and inputs are bfloat16; one cpp kernel (cpp_fused_div_mean_mul_pow_sqrt_sub_*) computes "
        "the means, the variance and the sqrt. On a row whose entries nearly all round to one bfloat16 value the "
        "difference cancels to rounding: the package's variance is negative where the exact variance of the "
        "row's values (float64, truth.exact_variance) is positive. The inputs are chosen after the build by running the package on candidate "
        "rows (offsets 10 to 10^4, spread 2^-11 of the offset; seeds 0, 1, ...): 15 rows whose variance (output 1) "
        "is positive and whose output is finite, and at row 3 the first row whose variance is negative and whose "
        "output is NaN. truth.rows are the package's NaN rows, truth.variance the package's variance there. Eager's "
        "variance (bfloat16) is 0 or negative in every row "
        "(truth.eager_zero_variance_rows, eager_negative_variance_rows), so expected.pt's output 0 is NaN in every "
        "row (truth.eager_nan_rows).",
        culprit_pattern=r"sqrt",
        expect=_RUNS,
    ),
    "pool_all_padding": dict(
        description="bfloat16 attention pooling for sequence classification (Inductor's CPU code takes "
        "bfloat16): one sequence is all padding, its masked scores are all -inf and the softmax makes NaN",
        outcome="nonfinite",
        bug="s = score(x).squeeze(-1); a = s.masked_fill(~mask, -inf).softmax(dim=1); "
        "pooled = (a.unsqueeze(-1) * x).sum(1); cls(pooled). mask (inputs[1], bool) holds sequence lengths "
        "8, 5, 0 and 3: sequence 2 has no True entry, its softmax row is NaN (one cpp kernel does the masked_fill, "
        "the softmax and the pooling: cpp_fused__softmax_*masked_fill*), and the classifier's addmm carries it to "
        "output row 2. Model, x and outputs are bfloat16. Eager computes the same NaN in the same row. truth.rows: "
        "the output rows holding NaN in the package's run.",
        culprit_pattern=r"_softmax",
        expect=_RUNS,
    ),
    "frozen_residual_binary_nan": dict(
        description="a small channels-last ResNet compiled with freezing under no_grad: a negative running_var in "
        "block2's first BatchNorm is folded into that convolution's constants as NaN, oneDNN's fused relu turns "
        "them into 0, and the package's outputs are finite and wrong where eager's are NaN",
        outcome="mismatch",
        bug="stem conv (stride 2) + BN + relu, two residual blocks (conv-bn-relu-conv-bn, skip add, relu), global "
        "average pool, Linear; model and input channels_last; block2.bn1.running_var[5] = -2. Freezing folds each "
        "BN into its convolution: block2's first convolution, an aoti_torch_cpu_mkldnn__convolution_pointwise call "
        "with attr 'relu', reads a weight and a bias constant holding NaN (read back from the package's model "
        "library: truth.nan_constants; the freezing pass named them, no fqn is recorded); the package's outputs "
        "are finite. Each block's second convolution, BN, skip add and relu are one "
        "aoti_torch_cpu_mkldnn__convolution_pointwise_binary_ call (attr 'add', then 'relu') writing in place into "
        "the skip buffer, which an earlier call site wrote (truth.inplace_writes, from the wrapper). Eager's relu keeps NaN: expected.pt is "
        "all NaN. NAME.intended.pt holds eager's outputs with running_var[5] at its positive value; the package's "
        "outputs differ from it (truth.max_abs_diff_vs_intended).",
        culprit_kernel="aoti_torch_cpu_mkldnn__convolution_pointwise",
        culprit_occurrence=2,  # 0-based among that kernel's call sites: block2's first convolution
        compile_no_grad=True,
        expect=_RUNS,
    ),
    "concat_view_inf": dict(
        description="three Linear branches concatenated: the wrapper writes the slices of one buffer through "
        "views at offsets; the middle branch's exp writes Inf through its view, and the layer_norm over the "
        "concatenation makes NaN",
        outcome="nonfinite",
        bug="h = cat([a(x), exp(b(x) * 60), c(x)], -1); head(layer_norm(h)). The wrapper allocates the "
        "concatenation buffer once and takes three reinterpret_tensor_wrapper views of it, at offsets 0, 32 and 64 "
        "elements (truth.views); the addmm calls for a and c write into two of them, and one cpp kernel "
        "(cpp_fused_exp_mul_native_layer_norm_*: the exp fused with the layer norm) writes exp(b(x) * 60) into the "
        "middle one (truth.view) and then normalizes the whole buffer. Row 5 of x solves b(x) = 2 at feature 9, "
        "so exp(120) = Inf there (truth.inf_count elements, from finite inputs), and the layer norm makes NaN "
        "(inf - inf) in that row; the middle branch's finite values stay below 1e19. Eager computes the same NaN "
        "in the same row.",
        culprit_pattern=r"exp",
        expect=_RUNS,
    ),
    "folded_nan_bias_reference": dict(
        description="a frozen MLP (freezing, under no_grad) whose first bias holds NaN: oneDNN's fused relu turns "
        "it into 0, so the package's outputs are finite and wrong; NAME.intended.pt holds the outputs the finite "
        "bias gives",
        outcome="mismatch",
        bug="fc1.bias[3] = NaN (its original value is NAME.json's original_value). With freezing each Linear + relu "
        "is an aoti_torch_cpu__linear_pointwise call with attr 'relu'; the first reads the constant fc1_bias "
        "(fqn fc1.bias; the NaN read back from the package's model library). The package's outputs are finite; eager's relu keeps NaN, so expected.pt is all NaN. "
        "NAME.intended.pt (eager with the original bias) differs from the package's outputs "
        "(truth.max_abs_diff_vs_intended).",
        culprit_kernel="aoti_torch_cpu__linear_pointwise",
        compile_no_grad=True,
        expect=_RUNS,
    ),
    "nan_threshold_buffer": dict(
        description="a registered buffer threshold holding NaN in a gate where(h > threshold, h, 0): a comparison "
        "with NaN is False, so one column is always 0: finite, wrong values, which eager computes too",
        outcome="mismatch",
        bug="threshold[5] = NaN (a buffer: the constant threshold in the wrapper, fqn threshold). h = fc1(x); "
        "torch.where(h > threshold, h, 0.0) is a cpp kernel (cpp_fused_gt_scalar_tensor_where_*) reading the "
        "constant; in eager the gate's column 5 is 0 in every row, where the intended threshold passes some rows "
        "(truth.zeroed_column: the one column in which the gate differs from the intended one). tanh(fc2) and fc3 "
        "follow. The outputs are finite and agree "
        "with eager's to float rounding (expected.pt, truth.max_abs_diff_vs_eager): the wrong values show only against NAME.intended.pt, "
        "eager's outputs with threshold[5] = 0.0 (truth.max_abs_diff_vs_intended).",
        culprit_pattern=r"where",
        expect=_RUNS,
    ),
    "batch_of_one_unbiased": dict(
        description="features standardized by their batch's unbiased variance, exported with a dynamic batch "
        "dimension of 1 to 64 (compiled as 2 to 64) and run on a batch of 1: the variance is 0/0 and, with its "
        "input check off (the default), the package returns NaN",
        outcome="nonfinite",
        bug="h = fc(x); c = h.mean(0); s = ((h - c)**2).sum(0) / (h.shape[0] - 1); head((h - c) / s.sqrt()). "
        "Exported with a batch of 4 and Dim('batch', min=1, max=64) (NAME.json's exported_range, from the exported "
        "program's range_constraints). The package's own input check (AOTI_RUNTIME_CHECK_INPUTS=1, in a fresh "
        "process) refuses a batch of 1 and a batch of 65 and accepts 2 and 64 (truth.compiled_min, compiled_max, "
        "input_check). NAME.inputs.pt is a batch of 1: without the check the package runs it and returns NaN, made "
        "by 0/0 in the kernel that normalizes (cpp_fused_div_mean_pow_sqrt_sub_sum_*). Eager computes the same NaN.",
        culprit_pattern=r"div",
        dynamic_batch=(1, 64),
        expect=_RUNS,
    ),
    "single_kernel_log1p_bug": dict(
        description="one call site: (log1p(|x|) * 0.5,) compiled with cpp.inject_log1p_bug_TESTING_ONLY='accuracy' "
        "(log1p(x) becomes x + 1): runs, finite, wrong values",
        outcome="mismatch",
        bug="the whole model is one cpp kernel (cpp_fused_abs_log1p_mul_*); Inductor's testing-only bug injection "
        "makes it compute (|x| + 1) * 0.5 instead of log1p(|x|) * 0.5. truth.call_sites is the number of call "
        "sites in the package's wrapper, truth.max_abs_diff_vs_eager the largest difference between the "
        "package's outputs and expected.pt (eager, correct).",
        culprit_pattern=r"log1p",
        expect=_RUNS,
    ),
}


# --------------------------------------------------------------------------------------
# Measuring helpers (torch imported inside them).
# --------------------------------------------------------------------------------------


def _torch():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    return torch, nn, F


def _outputs(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


_LOADED = {}  # the last package loaded in this process, by path


def _run_package(package_path, inputs):
    """The package's outputs on these inputs, loaded and run in this process."""
    torch, _, _ = _torch()
    if package_path not in _LOADED:
        _LOADED.clear()
        _LOADED[package_path] = torch._inductor.aoti_load_package(package_path)
    model = _LOADED[package_path]
    with torch.no_grad():
        return _outputs(model(*inputs))


def _eager(model, inputs):
    torch, _, _ = _torch()
    with torch.no_grad():
        return _outputs(model(*inputs))


def _max_abs_diff(a, b):
    return max(float((x.float() - y.float()).abs().max()) for x, y in zip(a, b))


def _all_finite(outs):
    torch, _, _ = _torch()
    return all(bool(torch.isfinite(t).all()) for t in outs)


def _rows_where(outs, test):
    """The indices along dim 0 where test(t) holds for some element of some output."""
    rows = set()
    for t in outs:
        hit = test(t)
        rows.update(int(i) for i in hit.reshape(hit.shape[0], -1).any(1).nonzero().flatten())
    return sorted(rows)


def _nan_rows(outs):
    torch, _, _ = _torch()
    return _rows_where(outs, torch.isnan)


def _inf_rows(outs):
    torch, _, _ = _torch()
    return _rows_where(outs, torch.isinf)


def _check(cond, what):
    if not cond:
        raise RuntimeError(f"measured truth does not hold: {what}")


# --------------------------------------------------------------------------------------
# Reading the package: its constants (through the model library) and its wrapper's call sites.
# --------------------------------------------------------------------------------------


def _package_member(package_path, suffix):
    with zipfile.ZipFile(package_path) as z:
        names = [n for n in z.namelist() if n.endswith(suffix) and "/data/aotinductor/" in "/" + n]
        if len(names) != 1:
            raise RuntimeError(f"{package_path}: {len(names)} files ending in {suffix}")
        return names[0], z.read(names[0])


def _nan_constants(package_path):
    """The package's constants holding NaN, as [{"name", "fqn", "nan_count"}], read from the model
    library the package holds (AOTIModelContainerRunnerCpu.extract_constants_map, keyed by original
    fqn; get_constant_names_to_original_fqns maps the wrapper's names to them). oneDNN-packed
    (mkldnn-layout) constants are read through to_dense()."""
    torch, _, _ = _torch()
    member, blob = _package_member(package_path, ".wrapper.so")
    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, os.path.basename(member))
        with open(so, "wb") as f:
            f.write(blob)
        runner = torch._C._aoti.AOTIModelContainerRunnerCpu(so, 1)
        fqns = runner.get_constant_names_to_original_fqns()
        values = runner.extract_constants_map(False)
        names = {fqn: name for name, fqn in fqns.items()}
        found = []
        for fqn, t in values.items():
            dense = t.to_dense() if t.layout == torch._mkldnn else t
            n = int(torch.isnan(dense).sum()) if dense.is_floating_point() else 0
            if n:
                name = names.get(fqn, fqn)
                # A name the freezing pass made up is recorded as its own "fqn": no original name.
                found.append({"name": name, "fqn": None if fqn == name and name.startswith("_frozen_param") else fqn,
                              "nan_count": n, "shape": list(dense.shape)})
        del runner
    return sorted(found, key=lambda c: c["name"])


_CALL_RE = re.compile(
    r"\b(cpp_fused_\w+|aoti_torch_cpu_\w+)\("
    r"|\baoti_torch_proxy_executor_call_function\(\s*proxy_executor\s*,\s*(\d+)\s*,"
)


def _run_impl(package_path):
    """The wrapper's source and the body of its run_impl (as make_examples.kernel_call_order reads it)."""
    _, raw = _package_member(package_path, ".wrapper.cpp")
    src = raw.decode("utf-8", "replace")
    start = src.find("AOTInductorModel::run_impl(")
    body = re.sub(r'R"\((.*?)\)"', '""', src[start:], flags=re.S)
    m = re.search(r"\n}\s*(//[^\n]*)?\n", body)
    return src, body[: m.start()] if m else body


def _args(text, open_paren):
    """The text between the parenthesis at open_paren and its match."""
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1 : i]
    return text[open_paren + 1 :]


def _call_sites(package_path, calls):
    """[(kernel, argument text)] for each call site of run_impl, in the order kernel_call_order
    gives (checked against its list, `calls`)."""
    _, body = _run_impl(package_path)
    sites = []
    for line in body.splitlines(keepends=True):
        s = line.strip()
        if s.startswith("//"):
            continue
        for m in _CALL_RE.finditer(s):
            before = s[: m.start()].rstrip()
            if before and (before[-1].isalnum() or before[-1] in "_>*&") and not before.endswith("return"):
                continue
            paren = s.index("(", m.start())
            sites.append((m.group(1) or m.group(0), _args(s, paren)))
    names = [k for k, _ in sites]
    if len(names) != len(calls) or any(a != b for a, b in zip(names, calls) if not a.startswith("aoti_torch_proxy")):
        raise RuntimeError(f"call sites {[k for k, _ in sites]} do not match kernel_call_order's {calls}")
    return sites


def _mentions(text, name):
    return re.search(r"(?<![\w.])" + re.escape(name) + r"(?!\w)", text) is not None


def _first_reader(package_path, calls, name):
    """The 1-based call site whose arguments first name the constant `name`."""
    for i, (_, args) in enumerate(_call_sites(package_path, calls)):
        if _mentions(args, name):
            return i + 1
    raise RuntimeError(f"no call site of run_impl names {name}")


# --------------------------------------------------------------------------------------
# Builders.
# --------------------------------------------------------------------------------------


def _gen(seed):
    torch, _, _ = _torch()
    return torch.Generator().manual_seed(seed)


def _after(fn):
    return {"truth": ("after_build", fn, None)}


def build_kl_softmax_underflow():
    torch, nn, F = _torch()

    class DistillHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 8)

        def forward(self, x, p):
            q = torch.softmax(self.fc(x) * 30, -1)  # a sharpened student distribution
            return ((p * (p.log() - q.log())).sum(-1),)  # KL(p || q) per row: log(0) = -inf where q underflows

    model = DistillHead()
    g = _gen(11)
    x = torch.randn(8, 16, generator=g)
    p = torch.softmax(torch.randn(8, 8, generator=g), -1)  # the teacher's distribution: strictly positive
    x[5] *= 4.0  # larger logits in row 5: exp(z - max) below float32's smallest value

    def after(package_path, info):
        got = _run_package(package_path, (x, p))
        ref = info["expected"]
        with torch.no_grad():
            q = torch.softmax(model.fc(x) * 30, -1)
        zero_rows = _rows_where((q,), lambda t: t == 0)
        rows = _inf_rows(got)
        _check(bool((p > 0).all()), "the target distribution is strictly positive")
        _check(rows and rows == _inf_rows(ref), f"Inf rows: package {rows}, eager {_inf_rows(ref)}")
        _check(rows == zero_rows, f"Inf rows {rows} are the rows where eager's softmax holds exact 0 ({zero_rows})")
        _check(not _nan_rows(got) and not _nan_rows(ref), "no NaN anywhere (package and eager)")
        _check(all(bool((t[rows] == float("inf")).all()) for t in got), "the Inf is +inf")
        return {"truth": {"family": "log of an underflowed softmax", "rows": rows, "operation": "log of 0",
                          "made": "inf", "zero_softmax_entries": int((q == 0).sum())}}, None

    return model, (x, p), {}, {}, _after(after)


def build_zero_row_normalize():
    torch, nn, F = _torch()

    class NormalizedMix(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(32, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            w = h / h.sum(-1, keepdim=True)  # weights that sum to 1: 0/0 in a row where relu is 0 everywhere
            return (self.fc2(w),)

    model = NormalizedMix()
    x = torch.randn(8, 32, generator=_gen(12))
    with torch.no_grad():
        # Row 2 solves fc1(x) = -2 (fc1 maps 32 features to 16: a solution exists).
        x[2] = torch.linalg.pinv(model.fc1.weight) @ (-2.0 - model.fc1.bias)

    def after(package_path, info):
        got = _run_package(package_path, (x,))
        with torch.no_grad():
            h = F.relu(model.fc1(x))
        zero_rows = [i for i in range(h.shape[0]) if bool((h[i] == 0).all())]
        rows = _nan_rows(got)
        _check(rows and rows == _nan_rows(info["expected"]), f"NaN rows: package {rows}, eager {_nan_rows(info['expected'])}")
        _check(rows == zero_rows, f"NaN rows {rows} are the rows whose relu output is all 0 in eager ({zero_rows})")
        _check(not _inf_rows(got), "no Inf")
        return {"truth": {"family": "0/0 in a normalization", "rows": rows, "operation": "0/0", "made": "nan"}}, None

    return model, (x,), {"freezing": True}, {}, _after(after)


VARIANCE_DTYPE = "bfloat16"
VARIANCE_ROWS, VARIANCE_FEATURES, VARIANCE_BAD_ROW = 16, 4096, 3


def _variance_candidates(seed):
    """A batch of near-constant rows: offsets over three decades (10 to 10^4), spread 2^-11 of the
    offset (an eighth of a bfloat16 step or less: most entries round to one value)."""
    torch, _, _ = _torch()
    g = _gen(seed)
    offset = 10.0 ** (1.0 + 3.0 * torch.rand(VARIANCE_ROWS, 1, generator=g))
    x = offset + offset * 2.0**-11 * torch.randn(VARIANCE_ROWS, VARIANCE_FEATURES, generator=g)
    return x.to(getattr(torch, VARIANCE_DTYPE))


def build_cancelled_variance_sqrt():
    torch, nn, F = _torch()
    dtype = getattr(torch, VARIANCE_DTYPE)

    class Standardizer(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(VARIANCE_FEATURES, 4)

        def forward(self, x):
            mean = x.mean(-1, keepdim=True)
            var = (x * x).mean(-1, keepdim=True) - mean**2  # one pass: cancels for a large offset
            y = (x - mean) / var.sqrt()
            return self.head(y), var.squeeze(-1)

    model = Standardizer().to(dtype)

    def after(package_path, info):
        # Each row is computed alone (a per-row reduction, a per-row Linear). From candidate batches
        # (seeds 0, 1, ...) run in the package: rows whose variance (the second output) is positive
        # and whose output is finite, and the first row whose variance is negative and whose output
        # is NaN. The inputs: the first 15 good rows with that bad row at VARIANCE_BAD_ROW.
        good, bad = [], None
        for seed in range(256):
            cand = _variance_candidates(seed)
            y, var = _run_package(package_path, (cand,))
            for i in range(VARIANCE_ROWS):
                if bad is None and var[i] < 0 and bool(torch.isnan(y[i]).all()):
                    bad = (cand[i], seed, i)
                elif var[i] > 0 and bool(torch.isfinite(y[i]).all()):
                    good.append(cand[i])
            if bad is not None and len(good) >= VARIANCE_ROWS - 1:
                break
        else:
            raise RuntimeError("no candidate row whose package variance is negative and output NaN")
        rows = good[: VARIANCE_ROWS - 1]
        rows.insert(VARIANCE_BAD_ROW, bad[0])
        x = torch.stack(rows)
        y, var = _run_package(package_path, (x,))
        nan_rows = _nan_rows((y,))
        neg = [int(i) for i in (var < 0).nonzero().flatten()]
        _check(nan_rows == neg == [VARIANCE_BAD_ROW], f"NaN rows {nan_rows}, negative-variance rows {neg}")
        _check(not _inf_rows((y,)), "no Inf")
        exact = x[VARIANCE_BAD_ROW].double().var(unbiased=False).item()
        _check(exact > 0, f"the bad row's exact variance is positive ({exact})")
        ref_y, ref_var = _eager(model, (x,))
        return {"truth": {"family": "sqrt of a cancelled variance", "rows": nan_rows,
                          "operation": "square root of a negative value", "made": "nan",
                          "dtype": VARIANCE_DTYPE, "variance": [float(var[i]) for i in nan_rows], "exact_variance": [exact],
                          "candidate": {"seed": bad[1], "row": bad[2]},
                          "eager_nan_rows": _nan_rows((ref_y,)),
                          "eager_negative_variance_rows": [int(i) for i in (ref_var < 0).nonzero().flatten()],
                          "eager_zero_variance_rows": [int(i) for i in (ref_var == 0).nonzero().flatten()]}}, (x,)

    return model, (_variance_candidates(0),), {}, {}, _after(after)


POOL_DTYPE = "bfloat16"


def build_pool_all_padding():
    torch, nn, F = _torch()
    dtype = getattr(torch, POOL_DTYPE)

    class AttentionPool(nn.Module):
        def __init__(self):
            super().__init__()
            self.score = nn.Linear(16, 1)
            self.cls = nn.Linear(16, 4)

        def forward(self, x, mask):
            s = self.score(x).squeeze(-1)  # [B, T]
            a = s.masked_fill(~mask, float("-inf")).softmax(dim=1)  # all -inf for an all-padding sequence
            pooled = (a.unsqueeze(-1) * x).sum(1)
            return (self.cls(pooled),)

    model = AttentionPool().to(dtype)
    g = _gen(14)
    x = torch.randn(4, 8, 16, generator=g).to(dtype)
    lengths = torch.tensor([8, 5, 0, 3])  # sequence 2 is all padding
    mask = torch.arange(8)[None, :] < lengths[:, None]

    def after(package_path, info):
        got = _run_package(package_path, (x, mask))
        rows = _nan_rows(got)
        padded = [i for i in range(mask.shape[0]) if not bool(mask[i].any())]
        _check(rows and rows == padded, f"NaN rows {rows} are the all-padding sequences {padded}")
        _check(rows == _nan_rows(info["expected"]), f"eager's NaN rows {_nan_rows(info['expected'])}")
        return {"truth": {"family": "softmax of an all -inf row", "rows": rows, "made": "nan",
                          "dtype": POOL_DTYPE}}, None

    return model, (x, mask), {}, {}, _after(after)


_BINARY = "aoti_torch_cpu_mkldnn__convolution_pointwise_binary_"


def _written(kernel, args):
    """The buffers a call site writes, by its argument text: an output it creates (&bufN_handle), a
    cpp kernel's non-const pointer, the in-place first argument of a *_ call."""
    out = set(re.findall(r"&(buf\d+)_handle", args))
    out.update(re.findall(r"\((?!const)\w+\*\)\((buf\d+)\.data_ptr\(\)", args))
    if kernel.endswith("_"):
        first = re.match(r"\s*(buf\d+)\b", args)
        if first:
            out.add(first.group(1))
    return out


def build_frozen_residual_binary_nan():
    torch, nn, F = _torch()

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            h = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(h)) + x)

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(16)
            self.block1 = Block(16)
            self.block2 = Block(16)
            self.fc = nn.Linear(16, 4)

        def forward(self, x):
            h = F.relu(self.bn(self.stem(x)))
            h = self.block2(self.block1(h))
            return (self.fc(h.mean(dim=(2, 3))),)

    model = TinyResNet()
    g = _gen(15)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.1 * torch.randn(16, generator=g))
                m.running_var.copy_(0.5 + torch.rand(16, generator=g))
                m.weight.copy_(0.5 + torch.rand(16, generator=g))
                m.bias.copy_(0.1 * torch.randn(16, generator=g))
        # Channel 5 of block2's first batch norm weighs enough for its loss to show in the outputs.
        model.block2.bn1.weight[5] = 3.0
        model.block2.bn1.bias[5] = 0.5
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 32, 32, generator=g).contiguous(memory_format=torch.channels_last)
    model.eval()
    intended = _eager(model, (x,))
    with torch.no_grad():
        model.block2.bn1.running_var[5] = -2.0  # sqrt(var + eps) of a negative number: NaN folded into conv1

    def after(package_path, info):
        calls = info["calls"]
        sites = _call_sites(package_path, calls)
        got = _run_package(package_path, (x,))
        ref = info["expected"]
        _check(not _all_finite(ref), "eager's outputs hold NaN")
        _check(_all_finite(got), "the package's outputs are finite")
        diff = _max_abs_diff(got, intended)
        _check(diff > 1e-3, f"the package's outputs differ from the intended ones (max abs diff {diff})")
        nan = _nan_constants(package_path)
        _check(nan, "a package constant holds NaN")
        readers = sorted({_first_reader(package_path, calls, c["name"]) for c in nan})
        _check(len(readers) == 1, f"one call site reads the NaN constants: {readers}")
        _check('"relu"' in sites[readers[0] - 1][1], f"call site {readers[0]} fuses relu as a post-op")
        # In-place binary convolutions, and the call site that wrote the buffer each writes into.
        inplace, written_before = [], {}
        for i, (kernel, args) in enumerate(sites):
            if kernel == _BINARY:
                _check('"add"' in args, f"call site {i + 1} adds (attr 'add')")
                buf = re.match(r"\s*(buf\d+)\b", args).group(1)
                inplace.append({"call_index": i + 1, "buffer": buf, "written_by": written_before.get(buf)})
            for b in _written(kernel, args):
                written_before[b] = i + 1
        _check(any(c["written_by"] for c in inplace), f"an in-place binary convolution writes into a buffer an "
               f"earlier call site wrote: {inplace}")
        return {"truth": {"family": "wrong values under in-place buffer reuse", "culprit_call_index": readers[0],
                          "culprit_kernel": calls[readers[0] - 1],
                          "nan_constant": nan[0]["name"] if len(nan) == 1 else [c["name"] for c in nan],
                          "nan_constants": nan,
                          "inplace_calls": [c["call_index"] for c in inplace], "inplace_writes": inplace,
                          "max_abs_diff_vs_intended": round(diff, 4)}}, None

    extras = {"intended": ("save", intended, "frozen_residual_binary_nan.intended.pt"), **_after(after)}
    return model, (x,), {"freezing": True}, {}, extras


def build_concat_view_inf():
    torch, nn, F = _torch()

    class ThreeBranches(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(32, 32)
            self.b = nn.Linear(32, 32)
            self.c = nn.Linear(32, 32)
            self.head = nn.Linear(96, 4)

        def forward(self, x):
            mid = torch.exp(self.b(x) * 60)  # Inf where b(x) > 88.7 / 60
            h = torch.cat([self.a(x), mid, self.c(x)], dim=-1)
            return (self.head(F.layer_norm(h, (96,))),)  # the mean holds inf: inf - inf = NaN

    model = ThreeBranches()
    x = 0.25 * torch.randn(8, 32, generator=_gen(16))
    with torch.no_grad():
        # Row 5 solves b(x) = its old value with feature 9 set to 2 (exp(120) is Inf in float32); every
        # other value of the middle branch stays below 1e19, whose square (in eager's layer_norm) is finite.
        target = model.b(x[5])
        target[9] = 2.0
        x[5] = torch.linalg.solve(model.b.weight, target - model.b.bias)

    def after(package_path, info):
        calls = info["calls"]
        sites = _call_sites(package_path, calls)
        _, body = _run_impl(package_path)
        got = _run_package(package_path, (x,))
        with torch.no_grad():
            mid = torch.exp(model.b(x) * 60)
            side = (model.a(x), model.c(x))
        _check(bool(torch.isinf(mid).any()) and all(_all_finite((t,)) for t in side),
               "in eager the middle branch alone holds Inf")
        inf_rows = _inf_rows((mid,))
        _check(float(mid[torch.isfinite(mid)].abs().max()) < 1e19, "the middle branch's finite values are below 1e19")
        _check(_nan_rows(got) == inf_rows == _nan_rows(info["expected"]), f"the NaN rows of the package "
               f"({_nan_rows(got)}) and of eager ({_nan_rows(info['expected'])}) are the rows where eager's middle "
               f"branch holds Inf ({inf_rows})")
        # Views at a nonzero offset into one buffer: reinterpret_tensor_wrapper(bufN, ..., offset).
        views = {}
        view_re = r"auto (\w+) = (?:wrap_with_raii_handle_if_needed\()?reinterpret_tensor_wrapper\((buf\d+),[^;]*?,\s*(\d+)L?\)"
        for m in re.finditer(view_re, body):
            views[m.group(1)] = (m.group(2), int(m.group(3)))
        exp_sites = [i for i, (k, _) in enumerate(sites) if k.startswith("cpp_fused_") and "exp" in k]
        _check(len(exp_sites) == 1, f"one cpp kernel computes exp: {[sites[i][0] for i in exp_sites]}")
        i = exp_sites[0]
        kernel, args = sites[i]
        target = [(v, *views[v]) for v in re.findall(r"\((?!const)\w+\*\)\((\w+)\.data_ptr\(\)", args) if v in views]
        _check(len(target) == 1 and target[0][2] > 0, f"{kernel} writes through one view at a nonzero offset: {target}")
        view, of, offset = target[0]
        # The other two slices are the out= arguments of addmm calls; the kernel also reads the whole buffer.
        addmm_outs = {re.match(r"\s*(\w+)", a).group(1) for k, a in sites if k == "aoti_torch_cpu_addmm_out"}
        _check({v for v in views if v != view} <= addmm_outs, f"addmm calls write the other views: {addmm_outs}")
        _check(re.search(r"\(const \w+\*\)\(" + of + r"\.data_ptr\(\)", args) is not None, f"{kernel} reads {of}")
        _check(len({b for b, _ in views.values()}) == 1 and sorted(o for _, o in views.values()) == [0, 32, 64],
               f"the views are the three slices of one buffer: {views}")
        return {"truth": {"family": "Inf written through a view into a concatenation", "culprit_kernel": kernel,
                          "culprit_call_index": i + 1, "view_of": of, "view": view, "view_offset": offset,
                          "rows": inf_rows, "inf_count": int(torch.isinf(mid).sum()),
                          "views": {v: {"of": b, "offset": o} for v, (b, o) in sorted(views.items())}}}, None

    return model, (x,), {}, {}, _after(after)


def _intended_and_nan(model, inputs, set_bad, set_good):
    torch, _, _ = _torch()
    with torch.no_grad():
        set_good()
    intended = _eager(model, inputs)
    with torch.no_grad():
        set_bad()
    return intended


def _nan_constant_truth(family, package_path, info, inputs, intended, expect_eager_nan, relu_post_op):
    got = _run_package(package_path, inputs)
    _check(_all_finite(got), "the package's outputs are finite")
    _check(_all_finite(info["expected"]) != expect_eager_nan, f"eager's outputs {'hold' if expect_eager_nan else 'do not hold'} NaN")
    diff = _max_abs_diff(got, intended)
    _check(diff > 1e-3, f"the package's outputs differ from the intended ones (max abs diff {diff})")
    nan = _nan_constants(package_path)
    _check(len(nan) == 1, f"one package constant holds NaN: {nan}")
    truth = {"family": family, "nan_constant": nan[0]["name"], "fqn": nan[0]["fqn"],
             "culprit_call_index": _first_reader(package_path, info["calls"], nan[0]["name"]),
             "nan_count": nan[0]["nan_count"], "max_abs_diff_vs_intended": round(diff, 4)}
    if relu_post_op:
        reader = _call_sites(package_path, info["calls"])[truth["culprit_call_index"] - 1]
        _check('"relu"' in reader[1], f"the call site reading {nan[0]['name']} fuses relu as a post-op: {reader[0]}")
    if not expect_eager_nan:
        truth["max_abs_diff_vs_eager"] = _max_abs_diff(got, info["expected"])
        _check(truth["max_abs_diff_vs_eager"] < 1e-5, f"the package agrees with eager: {truth['max_abs_diff_vs_eager']}")
    return {"truth": truth}, None


def build_folded_nan_bias_reference():
    torch, nn, F = _torch()

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 32)
            self.fc3 = nn.Linear(32, 4)

        def forward(self, x):
            return (self.fc3(F.relu(self.fc2(F.relu(self.fc1(x))))),)

    model = Mlp()
    x = torch.randn(8, 16, generator=_gen(17))
    original = float(model.fc1.bias[3].detach())
    intended = _eager(model, (x,))
    with torch.no_grad():
        model.fc1.bias[3] = float("nan")

    def after(package_path, info):
        return _nan_constant_truth("NaN constant behind wrong values", package_path, info, (x,), intended, True, True)

    extras = {"intended": ("save", intended, "folded_nan_bias_reference.intended.pt"), **_after(after),
              "original_value": ("meta", {"fc1.bias[3]": original}, None)}
    return model, (x,), {"freezing": True}, {}, extras


def build_nan_threshold_buffer():
    torch, nn, F = _torch()

    class Gated(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 32)
            self.fc3 = nn.Linear(32, 4)
            self.register_buffer("threshold", 0.1 * torch.rand(32, generator=_gen(18)))

        def forward(self, x):
            h = self.fc1(x)
            h = torch.where(h > self.threshold, h, 0.0)  # h > NaN is False: column 5 is 0
            return (self.fc3(torch.tanh(self.fc2(h))),)

    model = Gated()
    x = torch.randn(8, 16, generator=_gen(19))
    with torch.no_grad():
        model.threshold[5] = 0.0
    intended = _eager(model, (x,))
    with torch.no_grad():
        model.threshold[5] = float("nan")

    def after(package_path, info):
        fields, _ = _nan_constant_truth("NaN constant behind wrong values", package_path, info, (x,), intended, False,
                                        False)
        with torch.no_grad():
            h = model.fc1(x)
            gate = torch.where(h > model.threshold, h, 0.0)
            fixed = model.threshold.clone()
            fixed[5] = 0.0
            gate_intended = torch.where(h > fixed, h, 0.0)
        differ = [j for j in range(gate.shape[1]) if not torch.equal(gate[:, j], gate_intended[:, j])]
        _check(differ == [5] and bool((gate[:, 5] == 0).all()), f"the gate differs from the intended one in column 5 "
               f"alone, where it is 0 in every row: {differ}")
        fields["truth"]["zeroed_column"] = differ[0]
        return fields, None

    extras = {"intended": ("save", intended, "nan_threshold_buffer.intended.pt"), **_after(after)}
    return model, (x,), {}, {}, extras


_INPUT_CHECK = r"""
import sys, torch
m = torch._inductor.aoti_load_package(sys.argv[1])
try:
    m(*torch.load(sys.argv[2], weights_only=True))
    print("accepted")
except Exception as e:
    print("refused: " + " ".join(str(e).split()))
"""


def _input_check(package_path, inputs, stage_dir):
    """What the package says of these inputs under AOTI_RUNTIME_CHECK_INPUTS=1, in a fresh process."""
    torch, _, _ = _torch()
    path = os.path.join(stage_dir, "check.inputs.pt")
    torch.save(inputs, path)
    try:
        env = dict(os.environ, AOTI_RUNTIME_CHECK_INPUTS="1")
        r = subprocess.run([sys.executable, "-c", _INPUT_CHECK, package_path, path], env=env, capture_output=True,
                           text=True, timeout=300)
    finally:
        os.unlink(path)
    said = [ln for ln in r.stdout.splitlines() if ln.startswith(("accepted", "refused"))]
    return said[-1] if said else f"exit {r.returncode}: {r.stderr.strip()[-300:]}"


def build_batch_of_one_unbiased():
    torch, nn, F = _torch()

    class BatchStandardize(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 32)
            self.head = nn.Linear(32, 4)

        def forward(self, x):
            h = self.fc(x)
            c = h.mean(0)
            s = ((h - c) ** 2).sum(0) / (h.shape[0] - 1)  # unbiased: 0/0 for a batch of one
            return (self.head((h - c) / s.sqrt()),)

    g = _gen(20)
    x4 = torch.randn(4, 16, generator=g)  # the export's example batch
    x1 = torch.randn(1, 16, generator=g)  # the batch the package is run on

    def after(package_path, info):
        ep = info["ep"]
        ranges = {str(k): (int(v.lower), int(v.upper)) for k, v in ep.range_constraints.items()}
        got = _run_package(package_path, (x1,))
        _check(bool(torch.isnan(got[0]).all()), "the package run on a batch of 1 (no input check) returns NaN")
        low = _input_check(package_path, (x1,), info["stage_dir"])
        high = _input_check(package_path, (torch.zeros(65, 16),), info["stage_dir"])
        ok = [_input_check(package_path, (torch.zeros(n, 16),), info["stage_dir"]) for n in (2, 64)]
        _check(low.startswith("refused") and high.startswith("refused") and ok == ["accepted"] * 2,
               f"the input check refuses batches 1 and 65, accepts 2 and 64: {low!r}, {high!r}, {ok}")
        # The compiled range, as the package's own check states it.
        m_low = re.search(r">= (\d+), but got: 1\b", low)
        m_high = re.search(r"<= (\d+), but got: 65\b", high)
        _check(m_low and m_high, f"the input check names the compiled bounds: {low!r}, {high!r}")
        _check(len(ranges) == 1, f"one symbolic size in the exported program: {ranges}")
        (lo, hi), = ranges.values()
        return {"truth": {"family": "inputs outside the compiled range", "compiled_min": int(m_low.group(1)),
                          "compiled_max": int(m_high.group(1)), "batch": 1, "made": "nan",
                          "input_check": low, "input_check_65": high},
                "exported_range": {"min": lo, "max": hi}}, (x1,)

    return BatchStandardize(), (x4,), {}, {}, _after(after)


def build_single_kernel_log1p_bug():
    torch, nn, F = _torch()

    class OneKernel(nn.Module):
        def forward(self, x):
            return (torch.log1p(x.abs()) * 0.5,)

    x = torch.randn(8, 16, generator=_gen(21))

    def after(package_path, info):
        calls = info["calls"]
        got = _run_package(package_path, (x,))
        diff = _max_abs_diff(got, info["expected"])
        _check(len(calls) == 1, f"one call site, the wrapper has {calls}")
        _check(_all_finite(got) and diff > 0.1, f"finite outputs that differ from eager (max abs diff {diff})")
        return {"truth": {"family": "one call site", "call_sites": len(calls),
                          "max_abs_diff_vs_eager": round(diff, 4)}}, None

    return OneKernel(), (x,), {"cpp.inject_log1p_bug_TESTING_ONLY": "accuracy"}, {}, _after(after)


BUILDERS = {
    "kl_softmax_underflow": build_kl_softmax_underflow,
    "zero_row_normalize": build_zero_row_normalize,
    "cancelled_variance_sqrt": build_cancelled_variance_sqrt,
    "pool_all_padding": build_pool_all_padding,
    "frozen_residual_binary_nan": build_frozen_residual_binary_nan,
    "concat_view_inf": build_concat_view_inf,
    "folded_nan_bias_reference": build_folded_nan_bias_reference,
    "nan_threshold_buffer": build_nan_threshold_buffer,
    "batch_of_one_unbiased": build_batch_of_one_unbiased,
    "single_kernel_log1p_bug": build_single_kernel_log1p_bug,
}
assert BUILDERS.keys() == EXAMPLES.keys()
