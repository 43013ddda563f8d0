"""Nine more examples for make_examples.py: packages and inputs in the forms users hand over
(a custom operator's library, a sources-only package, safetensors, a tokenizer's BatchEncoding,
a legacy torch.save file, a combined archive with sample inputs, provenance-tracked kernels, two
independent NaN origins, a Python custom operator).

make_examples.py merges EXAMPLES and BUILDERS into its own and builds these with its build_one.
A builder returns (model, inputs, configs, kwargs, extras); extras maps a files key (or, for kind
"meta", a NAME.json key) to (kind, value, base):

  "copy"         copy the file at value to base
  "bytes"        write value (bytes) to base
  "save"         torch.save(value)
  "legacy"       torch.save(value, _use_new_zipfile_serialization=False)
  "safetensors"  safetensors.torch.save_file(value), value a dict of tensors
  "combined"     one archive holding the exported program and the package's AOTI files
                 (package_pt2, with sample inputs); value unused
  "meta"         no file: value becomes NAME.json[key]

Kept free of torch at import time (make_examples.py --list imports this module).
"""

from __future__ import annotations

import inspect
import os
import shutil

# Set by make_examples.build_one before each builder runs: the output folder (the custom
# operator's library is built in OUT_DIR/.ops-build, which build_one does not delete).
OUT_DIR = None

_RUNS = {"exit_code": 0, "signal": None, "stderr_contains": None}

EXAMPLES = {
    "custom_op_nan": dict(
        description="a C++ custom operator (aoti_bisect_ex::scaled_log, a separate library) called through the "
        "AOTI proxy executor computes log of negative values: NaN made inside the operator",
        outcome="nonfinite",
        bug="h = relu(Linear(x)) - 0.5 is negative where relu is 0; aoti_bisect_ex::scaled_log(h, 2.0) = "
        "at::log(h * 2) (torch.utils.cpp_extension.load_inline, TORCH_LIBRARY) makes NaN there, and the final "
        "Linear spreads it to the output. In the package the operator is an "
        "aoti_torch_proxy_executor_call_function call site (extern node 0 of the package's extern-node JSON): "
        "the operator's library (NAME.ops.so) must be loaded before the package runs (torch.ops.load_library). "
        "The library is built with torch/extension.h, so it needs libpython. Eager computes the same NaN.",
        culprit_pattern=None,
        culprit_kernel="aoti_bisect_ex::scaled_log",
        expect=_RUNS,
    ),
    "sources_only_nan": dict(
        description="compiled with aot_inductor.package_cpp_only=True: the package holds the wrapper's C++ "
        "(kernels inside it), the compile flags and a weights object, and no .so; a sqrt makes NaN",
        outcome="nonfinite",
        bug="sqrt(tanh(Linear(x)) - 0.3) is NaN where tanh < 0.3; the sqrt kernel is defined after run_impl in "
        "the package's wrapper.cpp. The package must be compiled before it runs (aoti_load_package does it at "
        "load time). Eager computes the same NaN.",
        culprit_pattern=r"sqrt",
        expect=_RUNS,
    ),
    "safetensors_nan": dict(
        description="two positional inputs (features, scale), also given as a safetensors file "
        "(NAME.inputs.safetensors, keys features and scale); a log midway makes NaN",
        outcome="nonfinite",
        bug="log(Linear(gelu(Linear(features * scale)))) is NaN where the second Linear is negative, and the head "
        "spreads it to the output. NAME.inputs.safetensors holds the same tensors as NAME.inputs.pt, named after "
        "forward's parameters. Eager computes the same NaN.",
        culprit_pattern=r"log",
        expect=_RUNS,
    ),
    "batch_encoding_nan": dict(
        description="exported with keyword arguments (input_ids, attention_mask) and fed what a real Hugging Face "
        "tokenizer returns (a pickled transformers BatchEncoding, NAME.inputs.batch.pt); rsqrt of a masked mean "
        "minus 0.05 makes NaN",
        outcome="nonfinite",
        bug="the masked mean of tanh(Linear(embedding)) over each sentence, minus 0.05, is negative in many entries, "
        "and rsqrt of it is NaN; the final Linear spreads it to the logits. The inputs come from a "
        "PreTrainedTokenizerFast (a WordLevel tokenizers.Tokenizer) on four sentences with padding=True: "
        "NAME.inputs.batch.pt is the BatchEncoding as torch.save wrote it (unpickling it needs transformers); "
        "NAME.inputs.pt is a plain dict of the same tensors. Eager computes the same NaN.",
        culprit_pattern=r"rsqrt",
        expect=_RUNS,
    ),
    "legacy_inputs_nan": dict(
        description="three positional inputs of two dtypes (float x, int64 idx, float w), also saved in torch's "
        "legacy (pre-1.6, non-zip) format as NAME.inputs.legacy.pt; a log midway makes NaN",
        outcome="nonfinite",
        bug="log(Linear(x * w) + emb(idx)) is NaN where the sum is negative; the head spreads it to the output. "
        "NAME.inputs.legacy.pt holds the same tuple as NAME.inputs.pt, written with "
        "_use_new_zipfile_serialization=False. Eager computes the same NaN.",
        culprit_pattern=r"log",
        expect=_RUNS,
    ),
    "sample_inputs_nan": dict(
        description="a small model also packaged as one archive (NAME.combined.pt2) holding the exported program, "
        "its sample inputs and the AOTI files; a log midway makes NaN",
        outcome="nonfinite",
        bug="log(sigmoid(Linear(x)) - 0.5) is NaN where the sigmoid is below 0.5; the head spreads it to the "
        "output. NAME.combined.pt2 (package_pt2) holds models/model.json, data/sample_inputs/model.pt (the "
        "export's example inputs, the same as NAME.inputs.pt) and the AOTI files. Eager computes the same NaN.",
        culprit_pattern=r"log",
        expect=_RUNS,
    ),
    "provenance_nan": dict(
        description="nested submodules compiled with trace.provenance_tracking_level=1 and "
        "cpp.enable_kernel_profile=True: the package maps kernels to source lines (kernel_information.json, "
        "KernelContextGuard blocks); a log in the encoder block makes NaN",
        outcome="nonfinite",
        bug="encoder.forward returns torch.log(self.lin(x)) (NAME.json's culprit_source names that line of "
        "handoff.py): NaN where the Linear is negative, which the head spreads to the output. The package holds "
        "data/aotinductor/model/kernel_information.json, and wrapper.cpp wraps each call site in a "
        "KernelContextGuard block holding the Python stack trace. Eager computes the same NaN.",
        culprit_pattern=r"log",
        expect=_RUNS,
    ),
    "two_origins_nan": dict(
        description="two outputs holding NaN from two independent kernels: an early sqrt (output 1) and a later "
        "log on another branch (output 0)",
        outcome="nonfinite",
        bug="sqrt(x - 0.3) at the start makes NaN (the first cpp kernel), an mm, tanh and a Linear carry it to "
        "output 1; on a separate branch log(Linear(relu(Linear(x)))) makes NaN later, which the head carries to "
        "output 0. Neither NaN reaches the other's output. The culprit is the first origin in run order (the "
        "sqrt); NAME.json's other_origins names the log. Compiled with reorder_for_locality=False, which keeps "
        "the graph's order (on, the pass would run the log's branch first). Eager computes the same NaN.",
        culprit_pattern=r"sqrt",
        other_origin_patterns=(r"log",),
        expect=_RUNS,
    ),
    "python_op_nan": dict(
        description="a Python custom operator (torch.library.custom_op, aoti_bisect_py::shift) called through the "
        "AOTI proxy executor: its kernel is Python code, which no C++ program can run",
        outcome="nonfinite",
        bug="log(shift(x) * 2) with shift(x) = x - 1 written in Python (torch.library.custom_op, with a fake "
        "kernel for export) and x in [0, 2): NaN where x < 1. In the package the operator is a proxy-executor call "
        "whose extern node's metadata says torch_library_custom_op; it runs only in a Python process that "
        "defined it. Eager computes the same NaN.",
        culprit_pattern=None,
        culprit_kernel="aoti_bisect_py::shift",
        expect=_RUNS,
    ),
}


# --------------------------------------------------------------------------------------
# Builders (torch imported inside them).
# --------------------------------------------------------------------------------------

B, D, H = 8, 16, 32  # as make_examples.py


def _torch():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    return torch, nn, F


_OP_SOURCE = r"""
at::Tensor scaled_log(const at::Tensor& x, double s) {
  return at::log(x * s);
}

TORCH_LIBRARY(aoti_bisect_ex, m) {
  m.def("scaled_log(Tensor x, float s) -> Tensor");
}

TORCH_LIBRARY_IMPL(aoti_bisect_ex, CPU, m) {
  m.impl("scaled_log", &scaled_log);
}
"""
_OP_NAME = "aoti_bisect_ex_ops"
_op_library = None  # the .so path, once built and loaded in this process


def _scaled_log_library():
    """Builds (into OUT_DIR/.ops-build/) and loads the aoti_bisect_ex library, registers the
    operator's fake implementation; returns the library's path."""
    global _op_library
    if _op_library is not None:
        return _op_library
    torch, _, _ = _torch()
    from torch.utils.cpp_extension import load_inline

    build_dir = os.path.join(OUT_DIR or ".", ".ops-build", _OP_NAME)
    os.makedirs(build_dir, exist_ok=True)
    load_inline(name=_OP_NAME, cpp_sources=[_OP_SOURCE], is_python_module=False, build_directory=build_dir)
    path = os.path.join(build_dir, f"{_OP_NAME}.so")
    if not os.path.isfile(path):
        raise RuntimeError(f"load_inline built no {path}")

    @torch.library.register_fake("aoti_bisect_ex::scaled_log")
    def _(x, s):
        return torch.empty_like(x)

    _op_library = path
    return path


def build_custom_op_nan():
    torch, nn, F = _torch()
    so = _scaled_log_library()

    class CustomOp(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(D, D)
            self.b = nn.Linear(D, 4)

        def forward(self, x):
            h = F.relu(self.a(x)) - 0.5  # addmm, cpp kernel
            h = torch.ops.aoti_bisect_ex.scaled_log(h, 2.0)  # proxy executor call: log(-1) = NaN
            return (self.b(h),)  # addmm

    extras = {"op_library": ("copy", so, "custom_op_nan.ops.so")}
    return CustomOp(), (torch.randn(B, D),), {}, {}, extras


def build_sources_only_nan():
    torch, nn, F = _torch()

    class SourcesOnly(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(D, H)
            self.b = nn.Linear(H, 4)

        def forward(self, x):
            h = torch.tanh(self.a(x))  # addmm, cpp kernel ...
            h = torch.sqrt(h - 0.3)  # ... with the sqrt: NaN where tanh < 0.3
            return (self.b(h),)  # addmm

    return SourcesOnly(), (torch.randn(B, D),), {"aot_inductor.package_cpp_only": True}


def build_safetensors_nan():
    torch, nn, F = _torch()

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(D, H)
            self.b = nn.Linear(H, H)
            self.head = nn.Linear(H, 4)

        def forward(self, features, scale):
            h = F.gelu(self.a(features * scale))  # mul kernel, addmm, gelu kernel
            h = torch.log(self.b(h))  # addmm, log kernel: NaN
            return (F.softmax(self.head(h), dim=-1),)  # addmm, softmax kernel

    features = torch.randn(B, D)
    scale = torch.rand(D) + 0.5
    extras = {
        "safetensors_inputs": ("safetensors", {"features": features, "scale": scale},
                               "safetensors_nan.inputs.safetensors"),
    }
    return Scaled(), (features, scale), {}, {}, extras


_SENTENCES = [
    "the cat sat on the mat",
    "a dog ran to the old red barn",
    "birds sing",
    "the dog and the cat sat",
]


def build_batch_encoding_nan():
    torch, nn, F = _torch()
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    words = sorted({w for s in _SENTENCES for w in s.split()})
    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(words)}}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   model_input_names=["input_ids", "attention_mask"])
    batch = fast(_SENTENCES, return_tensors="pt", padding=True)

    class MaskedMean(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(len(vocab), D)
            self.proj = nn.Linear(D, D)
            self.out = nn.Linear(D, 4)

        def forward(self, input_ids, attention_mask):
            h = torch.tanh(self.proj(self.tok(input_ids)))  # embedding kernel, addmm
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            mean = (h * m).sum(1) / m.sum(1).clamp(min=1.0)  # one kernel: tanh, masked mean over the sequence ...
            z = torch.rsqrt(mean - 0.05)  # ... and rsqrt: NaN where the mean is below 0.05
            return {"logits": self.out(z)}  # addmm; a dict as a Hugging Face model returns

    kwargs = {k: batch[k] for k in batch.keys()}
    extras = {"batch_encoding_inputs": ("save", batch, "batch_encoding_nan.inputs.batch.pt")}
    return MaskedMean(), (), {}, kwargs, extras


def build_legacy_inputs_nan():
    torch, nn, F = _torch()
    vocab = 50

    class ThreeInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(D, H)
            self.emb = nn.Embedding(vocab, H)
            self.head = nn.Linear(H, 4)

        def forward(self, x, idx, w):
            h = torch.log(self.a(x * w) + self.emb(idx))  # mul kernel, addmm, embedding + add + log: NaN
            return (F.softmax(self.head(torch.tanh(h)), dim=-1),)  # addmm, softmax kernel

    inputs = (torch.randn(B, D), torch.randint(0, vocab, (B,), dtype=torch.int64), torch.rand(D) + 0.5)
    extras = {"legacy_inputs": ("legacy", inputs, "legacy_inputs_nan.inputs.legacy.pt")}
    return ThreeInputs(), inputs, {}, {}, extras


def build_sample_inputs_nan():
    torch, nn, F = _torch()

    class Sampled(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(D, H)
            self.head = nn.Linear(H, 4)

        def forward(self, x):
            h = torch.log(torch.sigmoid(self.a(x)) - 0.5)  # addmm, sigmoid + log kernel: NaN
            return (self.head(h),)  # addmm

    extras = {"combined_package": ("combined", None, "sample_inputs_nan.combined.pt2")}
    return Sampled(), (torch.randn(B, D),), {}, {}, extras


def build_provenance_nan():
    torch, nn, F = _torch()

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.lin = nn.Linear(d, d)

        def forward(self, x):
            return torch.log(self.lin(x))  # the bad op

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(H, 4)

        def forward(self, h):
            return F.softmax(self.lin(torch.tanh(h)), dim=-1)

    class Provenance(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Linear(D, H)
            self.encoder = Block(H)
            self.head = Head()

        def forward(self, x):
            h = F.gelu(self.stem(x))  # addmm, gelu kernel
            h = self.encoder(h)  # addmm, log (+ tanh) kernel
            return (self.head(h),)  # addmm, softmax kernel

    lines, first = inspect.getsourcelines(Block.forward)
    bad = [i for i, ln in enumerate(lines) if ln.rstrip().endswith("# the bad op")]
    assert len(bad) == 1, "Block.forward must hold exactly one '# the bad op' line"
    source = {
        "file": os.path.basename(inspect.getsourcefile(Block.forward)),
        "line": first + bad[0],
        "code": lines[bad[0]].strip(),
        "module": "encoder",  # the attribute Provenance.forward calls it through
    }
    configs = {"trace.provenance_tracking_level": 1, "cpp.enable_kernel_profile": True}
    extras = {"culprit_source": ("meta", source, None)}
    return Provenance(), (torch.randn(B, D),), configs, {}, extras


def build_two_origins_nan():
    torch, nn, F = _torch()

    class TwoOrigins(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(D, D) * D**-0.5)
            self.side = nn.Linear(D, 4)
            self.a = nn.Linear(D, H)
            self.b = nn.Linear(H, H)
            self.head = nn.Linear(H, 4)

        def forward(self, x):
            e = torch.sqrt(x - 0.3)  # the first cpp kernel: NaN where x < 0.3 (early origin)
            e = torch.tanh(e @ self.w)  # mm spreads it, tanh kernel
            out1 = self.side(e)  # addmm
            h = F.relu(self.a(x))  # addmm, relu kernel: finite
            h = torch.log(self.b(h))  # addmm, log kernel: NaN (later origin)
            out0 = self.head(h)  # addmm
            return out0, out1

    # Inductor's reorder_for_locality (a post-grad pass) would move each output's producers next to
    # it, the last output's last: the log branch would run first. Off, the graph's order stays.
    return TwoOrigins(), (torch.randn(B, D),), {"reorder_for_locality": False}


_PY_OP = []  # the Python custom operator, defined once per process


def build_python_op_nan():
    torch, nn, F = _torch()
    if not _PY_OP:

        # The schema given: this module's annotations are strings (from __future__ import annotations).
        @torch.library.custom_op("aoti_bisect_py::shift", mutates_args=(), schema="(Tensor x) -> Tensor")
        def shift(x):
            return x - 1.0

        @shift.register_fake
        def _(x):
            return torch.empty_like(x)

        _PY_OP.append(shift)
    shift = _PY_OP[0]

    class PythonOp(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(D, D)

        def forward(self, x):
            return (self.lin(torch.log(shift(x) * 2.0)),)

    return PythonOp(), (torch.rand(B, D) * 2.0,), {}


BUILDERS = {
    "custom_op_nan": build_custom_op_nan,
    "sources_only_nan": build_sources_only_nan,
    "safetensors_nan": build_safetensors_nan,
    "batch_encoding_nan": build_batch_encoding_nan,
    "legacy_inputs_nan": build_legacy_inputs_nan,
    "sample_inputs_nan": build_sample_inputs_nan,
    "provenance_nan": build_provenance_nan,
    "two_origins_nan": build_two_origins_nan,
    "python_op_nan": build_python_op_nan,
}
assert BUILDERS.keys() == EXAMPLES.keys()


def write_extra(kind, value, path):
    """Writes one extra file of a kind other than "combined" and "meta" (make_examples.py does those)."""
    if kind == "copy":
        shutil.copyfile(value, path)
    elif kind == "bytes":
        with open(path, "wb") as f:
            f.write(value)
    elif kind in ("save", "legacy"):
        torch, _, _ = _torch()
        if kind == "legacy":
            torch.save(value, path, _use_new_zipfile_serialization=False)
        else:
            torch.save(value, path)
    elif kind == "safetensors":
        from safetensors.torch import save_file

        save_file({k: v.detach().contiguous() for k, v in value.items()}, path)
    else:
        raise ValueError(f"unknown kind of extra file: {kind}")
