#!/usr/bin/env python3
"""Builds the real-sized packages scripts/benchmark measures the probes on.

    make_bench_models.py OUT_DIR [--only NAME,...]

For each NAME it writes, as examples/make_examples.py does:
  NAME.pt2         the AOTI package (CPU, default Inductor configs)
  NAME.inputs.pt   its inputs (torch.save of a tuple)
  NAME.ep.pt2      the exported program (for --exported-program)
  NAME.json        the culprit's kernel kind and the weights' size, written last

Models (random weights, seeded):
  resnet50_nan   ResNet-50's layout (bottlenecks [3, 4, 6, 3], 25.6 M
                 parameters, about 100 MB) built from torch.nn alone, batch 2
                 at 224x224; a log of a shifted activation in layer 3 makes
                 NaN that reaches the logits.
  linear1g_nan   16 x Linear(4096, 4096) with ReLU (1 GiB of float32 weights,
                 embedded in the .so), batch 64; a log in layer 11 makes NaN.
  sites10k_nan   5000 x (x @ W_i, tanh) on a [4, 16] batch: about 10,000 call
                 sites (an extern mm and a tanh kernel per layer); a log at
                 layer 3500 makes NaN.
A model whose files exist with its .json is not rebuilt.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride, nan_here=False):
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        self.nan_here = nan_here

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        if self.nan_here:
            h = torch.log(h - 0.5)  # about half the entries: NaN from here on
        h = self.bn3(self.conv3(h))
        return F.relu(h + idt)


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for stage, (width, n) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
            for i in range(n):
                stride = 2 if i == 0 and stage > 0 else 1
                blocks.append(Bottleneck(cin, width, stride, nan_here=(stage == 2 and i == 3)))
                cin = width * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        h = self.blocks(self.stem(x))
        return (self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)),)


class Linear1G(nn.Module):
    def __init__(self, n=16, d=4096, nan_at=10):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d) for _ in range(n))
        self.nan_at = nan_at

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x))
            if i == self.nan_at:
                x = torch.log(x - 0.01)  # NaN where the ReLU gave 0
        return (x,)


class ManySites(nn.Module):
    """`layers` x (x @ W_i, tanh): an extern mm and one tanh kernel per layer
    (Inductor defines the kernel once and calls it every layer), so about two
    call sites per layer; a log at layer `nan_at` makes NaN (about half of a
    tanh's outputs are negative) that reaches the output."""

    def __init__(self, layers=5000, d=16, nan_at=3500):
        super().__init__()
        self.w = nn.Parameter(torch.randn(layers, d, d) * (1.5 / d**0.5))
        self.layers, self.nan_at = layers, nan_at

    def forward(self, x):
        for i in range(self.layers):
            x = torch.tanh(x @ self.w[i])
            if i == self.nan_at:
                x = torch.log(x)
        return (x,)


def build_resnet50_nan():
    return ResNet50(), (torch.randn(2, 3, 224, 224),), "cpp"


def build_linear1g_nan():
    return Linear1G(), (torch.randn(64, 4096),), "cpp"


def build_sites10k_nan(layers=5000):
    return ManySites(layers=layers, nan_at=layers * 7 // 10), (torch.randn(4, 16),), "cpp"


BUILDERS = {"resnet50_nan": build_resnet50_nan, "linear1g_nan": build_linear1g_nan,
            "sites10k_nan": build_sites10k_nan}


def build(name, out):
    t0 = time.monotonic()
    torch.manual_seed(0)
    model, inputs, kind = BUILDERS[name]()
    model = model.eval()
    meta = os.path.join(out, f"{name}.json")
    if os.path.exists(meta):
        os.unlink(meta)
    with torch.no_grad():
        ep = torch.export.export(model, inputs)
    torch.export.save(ep, os.path.join(out, f"{name}.ep.pt2"))
    torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(out, f"{name}.pt2"))
    torch.save(inputs, os.path.join(out, f"{name}.inputs.pt"))
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    with open(meta, "w") as f:
        json.dump({"name": name, "culprit_kind": kind, "weight_bytes": weights,
                   "build_seconds": round(time.monotonic() - t0, 1)}, f)
    print(f"{name}: built in {time.monotonic() - t0:.0f} s ({weights / 2**20:.0f} MiB of weights)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default=",".join(BUILDERS))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in [n for n in a.only.split(",") if n]:
        if name not in BUILDERS:
            sys.exit(f"make_bench_models.py: error: unknown model '{name}' (known: {', '.join(BUILDERS)})")
        if all(os.path.exists(os.path.join(a.out, f"{name}{ext}")) for ext in (".json", ".pt2", ".inputs.pt")):
            continue
        build(name, a.out)


if __name__ == "__main__":
    main()
