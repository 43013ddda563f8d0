"""Packages that the programs in examples/hosts/ call, for `aoti-bisect capture` (docs/capture.md).

Imported by make_examples.py, which builds them like its own. Free of torch at import time, as the
catalogue is.

  ring_buffer_stream  a streaming normaliser with state: a ring buffer (a registered buffer the package
                      updates in place at every call) of the last 4 frames' means; each frame is normalised
                      by the ring's mean and standard deviation, then a Linear. Frame 1's feature 0 is 1.0,
                      every later frame's is 2.0: from call 5 on the ring holds four equal values of it, its
                      standard deviation is 0 and (x - mean) / std is 0/0 = NaN, which the Linear spreads to
                      every output. Call 5 alone, in a fresh process, is healthy (the ring holds zeros
                      beside it): calls 1 to 4 are what reproduce it. hosts/stream_ring.py feeds the frames.
"""

D = 16
RING = 4


def _runs(code=0):
    return {"exit_code": code, "signal": None, "stderr_contains": None}


EXAMPLES = {
    "ring_buffer_stream": dict(
        description="a streaming normaliser whose ring buffer of the last 4 frames makes NaN at call 5 of "
        "the stream (hosts/stream_ring.py), and only after calls 1 to 4; each frame alone is healthy",
        outcome="ok",
        bug="ring (4 x 16, a buffer) <- cat(ring[1:], frame.mean(0)); out = Linear((x - ring.mean(0)) / "
        "ring.std(0)). Feature 0 of frame 1 is 1.0 and of every later frame 2.0, so after call 5 the ring's "
        "feature 0 is [2, 2, 2, 2]: std 0, and 0 / 0 = NaN in every output. NAME.inputs.pt is frame 1; "
        "NAME.frameK.pt (K = 1..6) are the stream's frames as the host makes them. Eager and the package "
        "both make the NaN at call 5 (checked on 2.13).",
        culprit_pattern=r"div|std|sub|mean|cat",
        truth={"first_bad_call": 5, "needs_history": True},
        expect=_runs(),
    ),
}


def _torch():
    import torch
    from torch import nn

    return torch, nn


def frame(k):
    """Frame k (from 1) of the stream: 8 rows of random features, feature 0 set (1.0 for frame 1, else 2.0).
    examples/hosts/stream_ring.py makes the same frames."""
    torch, _ = _torch()
    x = torch.randn(8, D, generator=torch.Generator().manual_seed(k))
    x[:, 0] = 1.0 if k == 1 else 2.0
    return x


def _ring_buffer_stream():
    torch, nn = _torch()

    class RingNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("ring", torch.zeros(RING, D))
            self.proj = nn.Linear(D, D)

        def forward(self, x):
            self.ring.copy_(torch.cat([self.ring[1:], x.mean(0, keepdim=True)]))
            return self.proj((x - self.ring.mean(0)) / self.ring.std(0))

    extras = {f"frame{k}": ("save", (frame(k),), f"ring_buffer_stream.frame{k}.pt") for k in range(1, 7)}
    return RingNorm().eval(), (frame(1),), {}, {}, extras


BUILDERS = {
    "ring_buffer_stream": _ring_buffer_stream,
}
