"""Whose bug is it: packages for `aoti-bisect run --exported-program` to judge (lib/evidence/judgement.hpp).

Imported by make_examples.py, which builds them like its own. NAME.json["truth"]["judgement"] records the
kind a careful check finds, and how it was checked (eager, float64 eager and the package compared by hand).
Free of torch at import time, as the catalogue is.

  param_nan_linear        a Linear weight holds one NaN: the data's (a parameter), eager carries it too
  fp16_sumsq_overflow     an RMS scale in float16: eager's x * x overflows to Inf, the package computes in
                          float32 and is the one close to float64 (numerics, not a compiler bug)
  nearest_2x_upsample     F.interpolate(scale_factor=2.1, mode="nearest") from 6x6 to 12x12: Inductor's
                          index (floor(dst * float32(1/2.1))) reads the wrong source row and column for 5 of
                          12 where eager takes dst >> 1 (pytorch/pytorch#175154, a compiler bug on 2.13)
  frozen_conv_bn_nan      conv + batch norm compiled with freezing: running_var holds a negative entry, the
                          batch norm folded into the convolution's weights makes their NaN
  frozen_conv_bn_upsample conv + batch norm (healthy) + relu compiled with freezing, then the nearest 2x
                          upsample of nearest_2x_upsample: the folded convolution's buffer holds the batch
                          norm's value, not conv2d's; the wrong values start at the upsample
  mutated_input_flip      x.index_put_(...) then x.add_(x.flip(0)) on the input: the fused kernel writes x in
                          place while reading its mirrored rows (pytorch/pytorch#198270, a compiler bug)
"""

D = 16


def _runs(code=0):
    return {"exit_code": code, "signal": None, "stderr_contains": None}


EXAMPLES = {
    "param_nan_linear": dict(
        description="a Linear whose weight holds one NaN: every output row is NaN; the parameter holds it (data)",
        outcome="nonfinite",
        bug="fc1.weight[2, 5] = NaN in Linear(16, 32) -> relu -> Linear(32, 4); the first addmm reads the NaN "
        "weight and makes a NaN column. Eager makes the same NaN from the same parameter.",
        culprit_pattern=r"addmm|linear|mm",
        truth={"judgement": "data", "holder": "fc1.weight"},
        expect=_runs(),
    ),
    "fp16_sumsq_overflow": dict(
        description="an RMS scale in float16: eager's x * x overflows to Inf for row 1 (x = 300), so eager "
        "divides by Inf; the package computes the reduction in float32 and matches float64",
        outcome="mismatch",
        bug="x / sqrt(mean(x * x) + 1e-3) then Linear(64, 8), all float16; x[1, 7] = 300 so 300^2 = 90000 > "
        "65504. Eager rounds x * x to float16 (Inf); Inductor's CPU kernel loads float16 into float32 and "
        "reduces there. Measured on 2.13: rmse against float64 eager 0.255, package 0.00016. expected.pt is "
        "eager's (wrong) output, so the package 'mismatches' it.",
        culprit_pattern=r"mean|mul|div|sqrt|add",
        truth={"judgement": "numerics"},
        expect=_runs(),
    ),
    "nearest_2x_upsample": dict(
        description="conv, relu, nearest upsample by 2.1 (6x6 -> 12x12), conv: Inductor picks the wrong source "
        "pixel for 5 of 12 rows and columns (pytorch/pytorch#175154)",
        outcome="mismatch",
        bug="upsample_nearest2d with scale 2.1 whose output is exactly twice the input: eager's CPU kernel "
        "(nearest_idx) takes src = dst >> 1, Inductor's lowering floor(dst * float32(1 / 2.1)), so rows and "
        "columns 2, 4, 6, 8, 10 read the pixel before. Fixed upstream by PR #184848, not in 2.13. Measured: "
        "rmse against float64 eager 3e-08, package 0.21.",
        culprit_pattern=r"unsafe_index",
        truth={"judgement": "compiler"},
        expect=_runs(),
    ),
    "frozen_conv_bn_nan": dict(
        description="conv + batch norm (eval) compiled with freezing under no_grad: running_var[3] is "
        "negative, and the batch norm folded into the convolution's weights holds NaN",
        outcome="nonfinite",
        bug="bn.running_var[3] = -2 after Conv2d(3, 16); freezing folds the batch norm into the convolution "
        "(weight * rsqrt(var + eps)): channel 3's folded weights are NaN, so the convolution's output is. "
        "Eager makes the NaN at the batch norm node. (No relu after it: oneDNN's fused relu turns NaN into 0.)",
        culprit_pattern=r"convolution|conv",
        compile_no_grad=True,
        truth={"judgement": "model"},
        expect=_runs(),
    ),
    "frozen_conv_bn_upsample": dict(
        description="conv + batch norm + relu compiled with freezing, then a nearest upsample by 2.1 and a conv: "
        "the wrong values start at the upsample (pytorch/pytorch#175154), not at the folded convolution",
        outcome="mismatch",
        bug="freezing folds the batch norm into the first convolution, so its buffer holds batch_norm's value "
        "(9% away from conv2d's); the upsample kernel after it reads the wrong source pixels as in "
        "nearest_2x_upsample.",
        culprit_pattern=r"unsafe_index",
        compile_no_grad=True,
        truth={"judgement": "compiler", "culprit": "unsafe_index"},
        expect=_runs(),
    ),
    "mutated_input_flip": dict(
        description="a model that updates its input in place, x.index_put_ then x.add_(x.flip(0)): the package's "
        "one kernel overwrites rows of x it still reads (pytorch/pytorch#198270)",
        outcome="mismatch",
        bug="the exported program's index_put and add (the input mutation) fuse into one cpp kernel that gets the "
        "user's x as in_ptr0 and out_ptr1: rows 4-7 read mirrored rows already overwritten. Measured on 2.13: "
        "rmse against float64 eager of x * w 0.43 (eager 5e-8), of x.sum(1) 11.2 (eager 2e-6).",
        culprit_pattern=r"flip|index_put",
        truth={"judgement": "compiler"},
        expect=_runs(),
    ),
}


def _torch():
    import torch
    import torch.nn as nn

    return torch, nn


def _param_nan():
    torch, nn = _torch()

    class TwoLayers(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(D, 32)
            self.fc2 = nn.Linear(32, 4)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    model = TwoLayers().eval()
    with torch.no_grad():
        model.fc1.weight[2, 5] = float("nan")
    return model, (torch.randn(8, D),), {}


def _fp16_sumsq():
    torch, nn = _torch()

    class RmsScale(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 8)

        def forward(self, x):
            ms = (x * x).mean(-1, keepdim=True)
            return self.fc(x / torch.sqrt(ms + 1e-3))

    model = RmsScale().half().eval()
    x = torch.randn(4, 64).half()
    x[1, 7] = 300.0
    return model, (x,), {}


def _nearest_2x():
    torch, nn = _torch()
    import torch.nn.functional as F

    class UpNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.conv2 = nn.Conv2d(8, 4, 3, padding=1)

        def forward(self, x):
            y = torch.relu(self.conv1(x))
            y = F.interpolate(y, scale_factor=2.1, mode="nearest")  # 6x6 -> floor(12.6) = 12, exactly 2x
            return self.conv2(y)

    return UpNet().eval(), (torch.randn(4, 3, 6, 6),), {}


def _frozen_conv_bn():
    torch, nn = _torch()

    class ConvBnHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1)
            self.bn = nn.BatchNorm2d(16)
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            h = self.bn(self.conv(x))
            return self.head(h.mean(dim=(2, 3)))

    model = ConvBnHead().eval()
    with torch.no_grad():
        model.bn.running_mean.normal_(0, 0.1)
        model.bn.running_var.uniform_(0.5, 2.0)
        model.bn.running_var[3] = -2.0
    return model, (torch.randn(2, 3, 8, 8),), {"freezing": True}


def _frozen_conv_bn_upsample():
    torch, nn = _torch()
    import torch.nn.functional as F

    class ConvBnUp(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 4, 3, padding=1)

        def forward(self, x):
            y = self.bn(self.conv1(x))
            y = F.interpolate(y, scale_factor=2.1, mode="nearest")
            return self.conv2(y)

    model = ConvBnUp().eval()
    with torch.no_grad():
        model.bn.running_mean.normal_(0, 0.3)
        model.bn.running_var.uniform_(0.5, 2.0)
        model.bn.weight.uniform_(0.5, 1.5)
    return model, (torch.randn(4, 3, 6, 6),), {"freezing": True}


def _mutated_input():
    torch, nn = _torch()

    class FlipAdd(nn.Module):
        def forward(self, x, w):
            x.index_put_((torch.arange(x.size(0)),), x * 2.0)
            x.add_(x.flip(0))
            return x * w, x.sum(dim=1)

    return FlipAdd().eval(), (torch.rand(8, 16), torch.rand(8, 16)), {}


BUILDERS = {
    "param_nan_linear": _param_nan,
    "fp16_sumsq_overflow": _fp16_sumsq,
    "nearest_2x_upsample": _nearest_2x,
    "frozen_conv_bn_nan": _frozen_conv_bn,
    "frozen_conv_bn_upsample": _frozen_conv_bn_upsample,
    "mutated_input_flip": _mutated_input,
}
