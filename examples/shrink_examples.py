"""Four examples for shrinking the trigger (lib/job/shrink.hpp): the failing samples inside a batch.

Imported by make_examples.py, which builds them like its own. Each NAME.json records in "truth" the
samples (numbered from 1, in the file's order) that make the failure, checked on the eager model
when the example is built (_measured): "samples", and "alone" (whether each of them fails alone).
Free of torch at import time, as the catalogue is.
"""

EXAMPLES = {
    "sample_log_nan": dict(
        description="a batch of 12 rows in which row 9 holds a negative scale: the log of a row's scaled sum makes "
        "NaN in that row only; two positional inputs share the batch dimension, exported dynamic (export makes "
        "its minimum 2)",
        outcome="nonfinite",
        bug="scale[8] = -1 (inputs[1]); log(|x|.sum(-1) * scale) is NaN for row 8 alone and reaches that row of the "
        "output. Run alone, the row must be repeated to batch 2, the smallest the package takes.",
        culprit_pattern=r"log",
        dynamic_batch=(2, 64),
        expect={"exit_code": 0, "signal": None, "stderr_contains": None},
    ),
    "sample_mask_nan": dict(
        description="attention exported with keyword arguments and a dynamic batch, fed the dict a tokenizer "
        "returns for 6 sequences, sequence 4 of which is all padding: its softmax makes NaN",
        outcome="nonfinite",
        bug="attention_mask[3] is all 0; masked_fill(mask == 0, -inf) and the softmax over keys make NaN for that "
        "sequence alone. input_ids, attention_mask and token_type_ids share the batch dimension.",
        culprit_pattern=r"_softmax",
        dynamic_batch=(1, 64),
        kwargs_order=("input_ids", "token_type_ids", "attention_mask"),
        expect={"exit_code": 0, "signal": None, "stderr_contains": None},
    ),
    "samples_pair_nan": dict(
        description="a gate computed over the whole batch, sqrt(min of feature 0 + min of feature 1 + 1.5): rows 3 "
        "and 6 each lower one of the minima, and only together do they make it negative",
        outcome="nonfinite",
        bug="x[2, 0] = -1 and x[5, 1] = -1, every other value of features 0 and 1 is at least 1: the sqrt is of "
        "-0.5 only when both rows are in the batch, and its NaN reaches every output. Either row alone, or any set "
        "without both, runs clean: the failure depends on the batch.",
        culprit_pattern=r"sqrt",
        dynamic_batch=(1, 64),
        expect={"exit_code": 0, "signal": None, "stderr_contains": None},
    ),
    "batch_norm_nan": dict(
        description="a normalization over the batch dimension where the feature dimension was meant: row 5 holds "
        "a negative value under a sqrt, and the batch's mean and variance carry its NaN into every row",
        outcome="nonfinite",
        bug="x[4, 3] = -1; sqrt(x) is NaN in row 5 alone, fc1 keeps it there, its mean over dimension 0 is NaN, and "
        "(h - mean) * rsqrt(var + eps) is NaN in every row. Row 5 fails alone; every other row runs clean alone, "
        "but its output in the batch is NaN: the batch's statistics reach across rows.",
        culprit_pattern=r"sqrt",
        dynamic_batch=(1, 64),
        expect={"exit_code": 0, "signal": None, "stderr_contains": None},
    ),
}


def _torch():
    import torch
    import torch.nn as nn

    return torch, nn


def build_sample_log_nan():
    torch, nn = _torch()

    class RowLog(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 4)

        def forward(self, x, scale):
            h = torch.relu(self.fc1(x))
            h = h + torch.log(x.abs().sum(-1, keepdim=True) * scale)
            return self.fc2(h)

    x = torch.randn(12, 16)
    scale = torch.rand(12, 1) + 0.5
    scale[8, 0] = -1.0
    model = RowLog().eval()
    return model, (x, scale), {}, {}, {"truth": _measured(model, (x, scale), {}, [9], True)}


def build_sample_mask_nan():
    torch, nn = _torch()
    vocab, d, t = 100, 16, 8

    class KwargsAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.typ = nn.Embedding(2, d)
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, 4)

        def forward(self, input_ids, attention_mask, token_type_ids):
            h = self.tok(input_ids) + self.typ(token_type_ids)
            q, k, v = self.qkv(h).chunk(3, dim=-1)
            s = (q @ k.transpose(1, 2)) * d**-0.5
            s = s.masked_fill(attention_mask[:, None, :] == 0, float("-inf"))
            return {"logits": self.out((torch.softmax(s, dim=-1) @ v).mean(1))}

    ids = torch.randint(0, vocab, (6, t))
    mask = torch.ones(6, t, dtype=torch.int64)
    mask[3, :] = 0  # an empty sequence
    mask[1, 6:] = 0  # a short one: padding is not the bug
    types = torch.zeros(6, t, dtype=torch.int64)
    types[:, 3:] = 1
    kwargs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    model = KwargsAttention().eval()
    from transformers import BatchEncoding  # the same dict as a tokenizer returns it

    encoding = BatchEncoding({k: kwargs[k] for k in ("input_ids", "token_type_ids", "attention_mask")})
    return model, (), {}, kwargs, {"truth": _measured(model, (), kwargs, [4], True),
                                   "batch_encoding_inputs": ("save", encoding, "sample_mask_nan.inputs.batch.pt")}


def build_samples_pair_nan():
    torch, nn = _torch()

    class PairGate(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 4)

        def forward(self, x):
            gate = torch.sqrt(x[:, 0].min() + x[:, 1].min() + 1.5)
            return self.fc(x) * gate

    x = torch.randn(8, 16)
    x[:, :2] = torch.rand(8, 2) + 1.0
    x[2, 0] = -1.0
    x[5, 1] = -1.0
    model = PairGate().eval()
    return model, (x,), {}, {}, {"truth": _measured(model, (x,), {}, [3, 6], False)}


def build_batch_norm_nan():
    torch, nn = _torch()

    class BatchAxisNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 4)

        def forward(self, x):
            h = self.fc1(torch.sqrt(x))
            mean = h.mean(0, keepdim=True)  # dim=-1 was meant
            var = ((h - mean) ** 2).mean(0, keepdim=True)
            return self.fc2(torch.relu((h - mean) * torch.rsqrt(var + 1e-5)))

    x = torch.rand(8, 16) + 0.1
    x[4, 3] = -1.0
    model = BatchAxisNorm().eval()
    truth = _measured(model, (x,), {}, [5], True)
    with torch.no_grad():  # another row: clean alone, NaN in the batch
        in_batch = model(x)[0]
        alone = model(x[[0, 0]])[0]
    if bool(torch.isfinite(in_batch).any()) or not bool(torch.isfinite(alone).all()):
        raise RuntimeError("the example's truth does not hold on the eager model: row 1 in the batch and alone")
    truth[1]["company"] = {"sample": 1, "nan_in_batch": True, "finite_alone": True}
    return model, (x,), {}, {}, {"truth": truth}


def _measured(model, args, kwargs, samples, alone):
    """The truth, checked on the eager model: the rows `samples` (from 1) fail (NaN/Inf out) as a
    sub-batch, each alone fails iff `alone`, and the batch without them runs clean."""
    torch, _ = _torch()
    batch = (args[0] if args else next(iter(kwargs.values()))).shape[0]

    def fails(rows):
        rows = rows if len(rows) >= 2 else rows * 2  # the smallest batch some of these packages take
        idx = torch.tensor([r - 1 for r in rows])
        with torch.no_grad():
            out = model(*[a[idx] for a in args], **{k: v[idx] for k, v in kwargs.items()})
        out = out["logits"] if isinstance(out, dict) else out
        return not bool(torch.isfinite(out).all())

    rest = [r for r in range(1, batch + 1) if r not in samples]
    if not fails(samples) or fails(rest) or any(fails([r]) != alone for r in samples):
        raise RuntimeError(f"the example's truth does not hold on the eager model: samples {samples}, alone {alone}")
    return ("meta", {"samples": samples, "alone": alone}, None)


BUILDERS = {
    "sample_log_nan": build_sample_log_nan,
    "sample_mask_nan": build_sample_mask_nan,
    "samples_pair_nan": build_samples_pair_nan,
    "batch_norm_nan": build_batch_norm_nan,
}
