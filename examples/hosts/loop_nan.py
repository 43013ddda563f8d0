"""A serving loop over batches, as users run a package: `aoti-bisect capture`'s first host.

    python loop_nan.py PACKAGE [BAD]

Loads PACKAGE (the zero_row_norm example: rows divided by their L2 norm, batch 8 x 16) with
torch._inductor.aoti_load_package and feeds it six batches of random rows; batch BAD (default 4) holds an
all-zero row, whose 0/0 makes that output row NaN. The loop prints each step and goes on, as a loop that
only logs does.
"""
import sys

import torch


def main():
    package = sys.argv[1]
    bad = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    model = torch._inductor.aoti_load_package(package)
    torch.manual_seed(0)
    for step in range(1, 7):
        x = torch.randn(8, 16)
        if step == bad:
            x[3] = 0.0
        out = model(x)
        out = out[0] if isinstance(out, (list, tuple)) else out
        print(f"step {step}: {int(torch.isnan(out).sum())} NaN in the outputs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
