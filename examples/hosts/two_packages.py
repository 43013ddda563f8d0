"""A program that calls two packages in turn: for `aoti-bisect capture --package NAME`.

    python two_packages.py PACKAGE_A PACKAGE_B [ROUNDS]

Loads both with torch._inductor.aoti_load_package and, ROUNDS times (default 3), calls A then B, each on
its own example inputs (NAME.inputs.pt beside NAME.pt2, as scripts/build-examples writes them). Prints
each call's NaN count.
"""
import os
import sys

import torch


def main():
    packages = sys.argv[1:3]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    models = [torch._inductor.aoti_load_package(p) for p in packages]
    inputs = [torch.load(os.path.splitext(p)[0] + ".inputs.pt", weights_only=True) for p in packages]
    for r in range(1, rounds + 1):
        for name, model, args in zip(packages, models, inputs):
            out = model(*args)
            out = out[0] if isinstance(out, (list, tuple)) else out
            print(f"round {r} {os.path.basename(name)}: {int(torch.isnan(out).sum())} NaN", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
