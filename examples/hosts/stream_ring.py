"""A streaming loop with a model that keeps state: `aoti-bisect capture`'s host for a failure that needs history.

    python stream_ring.py PACKAGE [FRAMES]

Loads PACKAGE (the ring_buffer_stream example) with torch._inductor.aoti_load_package and feeds it FRAMES
(default 8) frames of 8 x 16 features, as examples/capture_examples.py's frame(k) makes them. The package
keeps a ring buffer of the last 4 frames' means; from frame 5 on its standard deviation in feature 0 is 0 and
every output is NaN. The loop prints each step and goes on, as a loop that only logs does.
"""
import sys

import torch


def frame(k):
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(k))
    x[:, 0] = 1.0 if k == 1 else 2.0
    return x


def main():
    package = sys.argv[1]
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    model = torch._inductor.aoti_load_package(package)
    for step in range(1, frames + 1):
        out = model(frame(step))
        out = out[0] if isinstance(out, (list, tuple)) else out
        print(f"frame {step}: {int(torch.isnan(out).sum())} NaN in the outputs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
