"""Packages whose failure moves when probes watch them (docs/run.md, "The first run probes").

Imported by make_examples.py, which builds them like its own. Free of torch at import time, as the
catalogue is.

  heap_garbage_nan  a Linear over torch.empty rows nothing writes (640 bytes): malloc hands back a chunk
                    something freed earlier in the process, so what the Linear reads is whatever that chunk
                    held. In a plain run of the runner built against torch 2.13 it held NaN in the rows that
                    reach half the outputs (measured: 10 of 10 runs, 16 NaN of 32); with the probes reading
                    every call site (the job's first run) the heap's history differs and the outputs are finite.
                    The job must still see the failure, through its plain run, and say that the probes hide it
                    (suppressed_by_instrumentation). The bytes are not part of the contract: another torch, or
                    another runner, may leave other bytes there.
"""


def _runs(code=0):
    return {"exit_code": code, "signal": None, "stderr_contains": None}


EXAMPLES = {
    "heap_garbage_nan": dict(
        description="a Linear over an 8 x 20 torch.empty buffer nothing writes: NaN from the bytes a freed heap "
        "chunk held in a plain run, finite outputs with probes at every call site (the heap's history differs)",
        outcome="nonfinite",
        bug="scratch = torch.empty(8, 20); y = proj(scratch): the addmm reads memory no kernel wrote. It is 640 "
        "bytes, below malloc's mmap threshold, so it is a reused chunk, not fresh zero pages; in a plain run of "
        "the 2.13 runner it held NaN. With probes the job's first run is finite: a plain run decides, and the "
        "search's own runs (probed too) do not show it either, so the verdict is suppressed_by_instrumentation.",
        culprit_kernel="aoti_torch_cpu_addmm_out",
        culprit_occurrence=1,
        expect=_runs(),
    ),
}


def _torch():
    import torch
    from torch import nn

    return torch, nn


def _heap_garbage_nan():
    torch, nn = _torch()

    class HeapGarbage(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 24)
            self.proj = nn.Linear(20, 4)

        def forward(self, x):
            a = self.fc(x)
            masked = torch.where(a > 0, torch.log(a), 0.0)  # finite: log only where a > 0
            scratch = torch.empty(8, 20)  # nothing writes it
            return masked.sum(1, keepdim=True) + self.proj(scratch)

    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(0))
    return HeapGarbage().eval(), (x,), {}


BUILDERS = {
    "heap_garbage_nan": _heap_garbage_nan,
}
