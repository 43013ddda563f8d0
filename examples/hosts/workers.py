"""A program whose calls happen in worker processes: `aoti-bisect capture` must see (or say it did not see) them.

    python workers.py PACKAGE [fork|spawn]

The parent loads PACKAGE (the zero_row_norm example: rows divided by their L2 norm, batch 8 x 16) with
torch._inductor.aoti_load_package and runs one batch; then two workers, started by multiprocessing with the
given start method (default spawn), each load the package and run three batches. Worker 1's second batch holds
an all-zero row (0/0 = NaN). Each process prints its steps; the parent waits for the workers.
"""
import multiprocessing as mp
import sys

import torch


def batch(worker, step):
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(100 * worker + step))
    if (worker, step) == (1, 2):
        x[3] = 0.0
    return x


def work(package, worker, model=None):
    model = model or torch._inductor.aoti_load_package(package)
    for step in range(1, 4):
        out = model(batch(worker, step))
        out = out[0] if isinstance(out, (list, tuple)) else out
        print(f"worker {worker} step {step}: {int(torch.isnan(out).sum())} NaN", flush=True)


def main():
    package = sys.argv[1]
    method = sys.argv[2] if len(sys.argv) > 2 else "spawn"
    model = torch._inductor.aoti_load_package(package)
    out = model(batch(0, 1))
    out = out[0] if isinstance(out, (list, tuple)) else out
    print(f"parent: {int(torch.isnan(out).sum())} NaN", flush=True)
    ctx = mp.get_context(method)
    procs = [ctx.Process(target=work, args=(package, w)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return max(p.exitcode for p in procs)


if __name__ == "__main__":
    sys.exit(main())
