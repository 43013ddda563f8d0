"""Pairs for `aoti-bisect verify` (lib/verify): a failing package and candidate fixes of the same model.

Imported by make_examples.py, which builds them like its own. Each failing example (outcome other than
"ok") has fixes named after it; a fix's NAME.json records in "fix_of" the failing example it fixes and in
"truth" what a careful check of the fix finds ("holds", or the neighbour that still fails and how). The
fixes run clean on the failing example's own inputs, which is why a check on those alone calls them fixed.
Free of torch at import time, as the catalogue is.

  zero_row_norm             rows divided by their L2 norm; sample 4 of 8 is all zeros: 0/0
    zero_row_masked         nan_to_num on the output: the divide still makes the NaN, a later kernel cleans
    zero_row_dropped        the all-zero rows dropped: 7 rows out for 8 samples
  batch_std_nan             a z-score over the batch; feature 3 is constant in the batch: std 0, 0/0
    batch_std_eps           eps added to the unbiased std: a batch of one sample still divides 0 by 0
    batch_std_fixed         eps added to the biased std: holds on every neighbour
  token_id_range            token ids past the vocabulary (index check), positions from a 32-row table
    token_id_clamped        the ids clamped: a sequence longer than 32 (compiled up to 64) trips the
                            position table's index check
  attn_padding_nan          attention with a padding mask; sequence 4 of 6 is all padding: softmax of a
                            row of -inf is NaN (inputs: the sequences and their mask, batch and length
                            both dynamic)
    attn_padding_masked     nan_to_num on the output: the softmax still makes the NaN, a later kernel
                            cleans them
"""

D = 16


def _runs(code=0):
    return {"exit_code": code, "signal": None, "stderr_contains": None}


EXAMPLES = {
    "zero_row_norm": dict(
        description="rows divided by their L2 norm, then a Linear: sample 4 of a batch of 8 is all zeros, so its "
        "row divides 0 by 0 and that output row is NaN",
        outcome="nonfinite",
        bug="x / x.norm(dim=1, keepdim=True) with x[3] == 0 (0/0); the Linear after it carries the NaN row to the "
        "output. Dynamic batch [2, 64].",
        culprit_pattern=r"div",
        dynamic_batch=(2, 64),
        expect=_runs(),
    ),
    "zero_row_masked": dict(
        description="zero_row_norm with nan_to_num on the output: no NaN leaves the package, but the divide still "
        "makes them and the nan_to_num kernel cleans them (a mask, not a fix)",
        outcome="ok",
        bug="the same 0/0 as zero_row_norm; torch.nan_to_num(out) after the Linear replaces the NaN row by zeros.",
        culprit_pattern=None,
        healed_pattern=r"div",
        dynamic_batch=(2, 64),
        fix_of="zero_row_norm",
        truth_fix={"status": "masked", "made_by": r"div", "cleaned_by": r"nan_to_num"},
        expect=_runs(),
    ),
    "zero_row_dropped": dict(
        description="zero_row_norm with the all-zero rows dropped before the divide: finite, but 7 rows come out "
        "for 8 samples (samples were dropped)",
        outcome="ok",
        bug="x = x[x.abs().sum(1) > 0] before the divide: a data-dependent batch; the all-zero sample is gone from "
        "the output instead of being handled.",
        culprit_pattern=None,
        dynamic_batch=(2, 64),
        fix_of="zero_row_norm",
        truth_fix={"status": "count_changed", "output": 0, "before": 8, "now": 7},
        expect=_runs(),
    ),
    "batch_std_nan": dict(
        description="a z-score over the batch, (x - mean(0)) / std(0), then a Linear: feature 4 is the same in "
        "every sample of the batch of 8, so its std is 0 and that column divides 0 by 0",
        outcome="nonfinite",
        bug="x[:, 3] == 1 for every sample; (x - x.mean(0)) / x.std(0) is 0/0 in that column of every row, and the "
        "Linear spreads the NaN to every output. Dynamic batch [2, 64].",
        culprit_pattern=r"div",
        dynamic_batch=(2, 64),
        expect=_runs(),
    ),
    "batch_std_eps": dict(
        description="batch_std_nan with eps added to the (unbiased) std: the batch of 8 runs clean, but the last "
        "batch of a loader, one sample, still divides 0 by 0 (the unbiased std of one sample is 0/0)",
        outcome="ok",
        bug="(x - x.mean(0)) / (x.std(0) + 1e-5): with one sample, std(0) divides by n - 1 = 0 and is NaN; the "
        "package runs batch 1 below its compiled minimum 2 with its input checks off, as a loader would feed it.",
        culprit_pattern=None,
        dynamic_batch=(2, 64),
        fix_of="batch_std_nan",
        truth_fix={"status": "fails", "neighbour": "batch of 1", "kind": "nonfinite"},
        expect=_runs(),
    ),
    "batch_std_fixed": dict(
        description="batch_std_nan fixed: eps added to the biased std, finite for every batch size from 1",
        outcome="ok",
        bug=None,
        culprit_pattern=None,
        dynamic_batch=(2, 64),
        fix_of="batch_std_nan",
        truth_fix={"status": "holds"},
        expect=_runs(),
    ),
    "token_id_range": dict(
        description="token and position embeddings summed, then a Linear: one token id (57) is past the 50-row "
        "vocabulary, and the token table's index check stops the run; the sequence (16) is dynamic up to 64",
        outcome="device_assert",
        bug="ids[1, 5] = 57 for an Embedding(50, 16): Inductor's check 'index out of bounds: 0 <= tmp < 50L'. The "
        "positions come from arange(seq) into an Embedding(32, 16), fine for the 16 tokens given.",
        culprit_pattern=r"embedding",
        dynamic_seq=(2, 64),
        no_eager="eager raises IndexError for the id past the vocabulary",
        expect=_runs(1),
    ),
    "token_id_clamped": dict(
        description="token_id_range with the ids clamped to the vocabulary: the 16 tokens given run clean, but a "
        "sequence of 33 or more (the package takes up to 64) trips the position table's index check",
        outcome="ok",
        bug="ids.clamp(0, 49) fixes the token lookup; positions arange(seq) index an Embedding(32, 16), so any "
        "sequence longer than 32 is out of bounds there.",
        culprit_pattern=None,
        dynamic_seq=(2, 64),
        fix_of="token_id_range",
        truth_fix={"status": "fails", "neighbour": "longest sequence", "kind": "device_assert"},
        expect=_runs(),
    ),
    "attn_padding_nan": dict(
        description="one attention layer with a padding mask, then a Linear: sequence 4 of 6 is all padding, so "
        "its softmax is over a row of -inf (NaN); the sequences and the mask share a dynamic batch and length",
        outcome="nonfinite",
        bug="scores.masked_fill(mask == 0, -inf).softmax(-1) with mask[3] == 0: -inf - -inf in the softmax. "
        "Inputs (x [6, 12, 16], mask [6, 12] int64), batch [2, 32] and length [2, 48] dynamic in both.",
        culprit_pattern=r"softmax",
        dynamic_batch_seq=((2, 32), (2, 48)),
        expect=_runs(),
    ),
    "attn_padding_masked": dict(
        description="attn_padding_nan with nan_to_num on the output: no NaN leaves the package, but the softmax "
        "still makes them (a mask, not a fix)",
        outcome="ok",
        bug="the same fully padded row; torch.nan_to_num(out) after the Linear replaces its NaN by zeros.",
        culprit_pattern=None,
        healed_pattern=r"softmax",
        dynamic_batch_seq=((2, 32), (2, 48)),
        fix_of="attn_padding_nan",
        truth_fix={"status": "masked", "made_by": r"softmax", "cleaned_by": r"nan_to_num"},
        expect=_runs(),
    ),
}


def _torch():
    import torch
    import torch.nn as nn

    return torch, nn


def _zero_row_model(variant):
    torch, nn = _torch()

    class RowNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, 4)

        def forward(self, x):
            if variant == "dropped":
                x = x[x.abs().sum(1) > 0]
            out = self.fc(x / x.norm(dim=1, keepdim=True))
            return torch.nan_to_num(out) if variant == "masked" else out

    x = torch.randn(8, D)
    x[3] = 0.0
    return RowNorm().eval(), (x,), {}


def _batch_std_model(variant):
    torch, nn = _torch()

    class BatchZScore(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(D, 32)
            self.fc2 = nn.Linear(32, 4)

        def forward(self, x):
            if variant == "eps":
                z = (x - x.mean(0)) / (x.std(0) + 1e-5)
            elif variant == "fixed":
                z = (x - x.mean(0)) / (x.std(0, unbiased=False) + 1e-5)
            else:
                z = (x - x.mean(0)) / x.std(0)
            return self.fc2(torch.relu(self.fc1(z)))

    x = torch.randn(8, D)
    x[:, 3] = 1.0
    return BatchZScore().eval(), (x,), {}


def _token_model(clamped):
    torch, nn = _torch()

    class TokensAndPositions(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(50, D)
            self.pos = nn.Embedding(32, D)
            self.fc = nn.Linear(D, 4)

        def forward(self, ids):
            if clamped:
                ids = ids.clamp(0, 49)
            positions = torch.arange(ids.shape[1], device=ids.device)
            return self.fc(torch.tanh(self.tok(ids) + self.pos(positions)))

    ids = torch.randint(0, 50, (2, 16))
    ids[1, 5] = 57
    return TokensAndPositions().eval(), (ids,), {}


def _attention_model(masked):
    torch, nn = _torch()

    class PaddedAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
            self.out = nn.Linear(D, 8)

        def forward(self, x, mask):
            scores = self.q(x) @ self.k(x).transpose(1, 2) / 4.0
            scores = scores.masked_fill(mask[:, None, :] == 0, float("-inf"))
            y = self.out((scores.softmax(-1) @ self.v(x)).mean(1))
            return torch.nan_to_num(y) if masked else y

    x = torch.randn(6, 12, D)
    mask = torch.ones(6, 12, dtype=torch.int64)
    mask[1, 8:] = 0
    mask[3] = 0  # all padding
    return PaddedAttention().eval(), (x, mask), {}


BUILDERS = {
    "zero_row_norm": lambda: _zero_row_model(""),
    "zero_row_masked": lambda: _zero_row_model("masked"),
    "zero_row_dropped": lambda: _zero_row_model("dropped"),
    "batch_std_nan": lambda: _batch_std_model(""),
    "batch_std_eps": lambda: _batch_std_model("eps"),
    "batch_std_fixed": lambda: _batch_std_model("fixed"),
    "token_id_range": lambda: _token_model(False),
    "token_id_clamped": lambda: _token_model(True),
    "attn_padding_nan": lambda: _attention_model(False),
    "attn_padding_masked": lambda: _attention_model(True),
}
