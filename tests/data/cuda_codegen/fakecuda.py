"""Make torch 2.11 or 2.15 + Triton believe there is one sm_90 H200, on a machine with no GPU and no driver.

Import this before anything else touches torch.cuda. Only for code generation: nothing runs on a device.
"""
import os
import sys
import types
from collections import namedtuple

import torch

# ---- torch.cuda -----------------------------------------------------------------------------------
_Props = namedtuple(
    "_CudaDeviceProperties",
    "name major minor total_memory multi_processor_count regs_per_multiprocessor "
    "max_threads_per_multi_processor warp_size gcnArchName L2_cache_size uuid "
    "max_threads_per_block shared_memory_per_block shared_memory_per_block_optin "
    "shared_memory_per_multiprocessor is_integrated clock_rate memory_clock_rate memory_bus_width",
)
PROPS = _Props("NVIDIA H200", 9, 0, 140 << 30, 132, 65536, 2048, 32, "", 50 << 20, "0", 1024, 49152, 232448,
               233472, False, 1980000, 3201000, 6144)

torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1
torch.cuda.current_device = lambda: 0
torch.cuda.get_device_properties = lambda device=None: PROPS
torch.cuda.get_device_capability = lambda device=None: (9, 0)
torch.cuda.get_device_name = lambda device=None: "NVIDIA H200"
torch.cuda._lazy_init = lambda: None
torch.cuda.is_initialized = lambda: True
torch.cuda.synchronize = lambda device=None: None
torch.cuda.set_device = lambda device: None
torch.cuda.get_arch_list = lambda: ["sm_90", "sm_100"]
torch.cuda.is_bf16_supported = lambda *a, **k: True
# torch 2.15's Dynamo asks, before tracing any frame (torch.cond's branches), whether a CUDA graph is being
# captured: the real query needs a driver.
torch.cuda.is_current_stream_capturing = lambda: False
torch.cuda.graphs.is_current_stream_capturing = torch.cuda.is_current_stream_capturing


class _FakeStream:
    cuda_stream = 0
    device = torch.device("cuda", 0)

    def synchronize(self):
        pass


torch.cuda.current_stream = lambda device=None: _FakeStream()
torch.cuda._get_device_index = lambda device=None, optional=False, allow_cpu=False: 0
torch._C._cuda_getCurrentRawStream = lambda idx=0: 0

# ---- Triton's driver --------------------------------------------------------------------------------
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia import driver as nvdriver  # noqa: E402


class _FakeUtils:
    def load_binary(self, name, kernel, shared, device):
        # (module, function, n_regs, n_spills, n_max_threads)
        return 1, 1, 32, 0, 1024

    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "max_num_regs": 65536, "multiprocessor_count": 132, "warpSize": 32,
                "sm_clock_rate": 1980000, "mem_clock_rate": 3201000, "mem_bus_width": 6144}

    def cuOccupancyMaxActiveClusters(self, *a):
        return 1

    def set_printf_fifo_size(self, *a):
        pass

    def fill_tma_descriptor(self, *a):
        pass


class _FakeLauncher:
    def __init__(self, src, metadata):
        pass

    def __call__(self, *args, **kwargs):
        pass


def _init(self):
    self.utils = _FakeUtils()
    self.launcher_cls = _FakeLauncher
    nvdriver.GPUDriver.__init__(self)


nvdriver.CudaDriver.__init__ = _init
nvdriver.CudaDriver.get_current_target = lambda self: GPUTarget("cuda", 90, 32)
nvdriver.CudaDriver.is_active = staticmethod(lambda: True)
nvdriver.CudaDriver.get_current_device = lambda self: 0
nvdriver.CudaDriver.get_current_stream = lambda self, device=None: 0
nvdriver.CudaDriver.get_device_capability = lambda self, device=None: (9, 0)

import torch._subclasses.fake_tensor as _ft  # noqa: E402
_ft.init_gpu_context = lambda device: None
_rng = torch.zeros(16, dtype=torch.uint8)
torch.cuda.get_rng_state = lambda device="cuda": _rng.clone()
torch.cuda.set_rng_state = lambda new_state, device="cuda": None
torch.cuda.get_rng_state_all = lambda: [_rng.clone()]
torch.cuda.set_rng_state_all = lambda states: None
torch._C._cuda_getDevice = lambda: 0
import torch._inductor.fx_passes.fuse_attention as _fa  # noqa: E402
_fa._sfdp_init = lambda input_device=None: None  # attention patterns: torch.tensor(2.0, device="cuda") needs a device
import torch._inductor.fx_passes.misc_patterns as _mp  # noqa: E402
_mp._misc_patterns_init = lambda input_device=None: None  # randperm/index_add patterns; not in these models
torch.cuda._exchange_device = lambda idx: 0
torch.cuda._maybe_exchange_device = lambda idx: 0
torch._C._cuda_exchangeDevice = lambda idx: 0
torch._C._cuda_maybeExchangeDevice = lambda idx: 0
torch._C._cuda_setDevice = lambda idx: None
# Real values behind the fake CUDA parameters (small constants get inlined by Inductor).
REAL = {}
_orig_tolist = _ft.FakeTensor.tolist
def _tolist(self):
    r = REAL.get(id(self))
    if r is not None and (tuple(r.shape) != tuple(self.shape) or r.dtype != self.dtype):
        r = None  # the id of a fake tensor since freed, now another's
    if r is None:
        same = [t for t in REAL.values() if tuple(t.shape) == tuple(self.shape) and t.dtype == self.dtype]
        if same:
            r = same[-1]
            print(f"[fakecuda] constant {tuple(self.shape)} {self.dtype}: value from a parameter of that shape "
                  f"({len(same)} candidates)", flush=True)
    return r.tolist() if r is not None else _orig_tolist(self)
_ft.FakeTensor.tolist = _tolist
from torch._dynamo import device_interface as _di  # noqa: E402
for _n, _f in dict(current_device=lambda: 0, set_device=lambda d: None, device_count=lambda: 1,
                   synchronize=lambda d=None: None, get_device_properties=lambda d=None: PROPS,
                   get_raw_stream=lambda idx=0: 0, exchange_device=lambda d: 0, maybe_exchange_device=lambda d: 0,
                   memory_allocated=lambda d=None: 0, is_bf16_supported=lambda *a, **k: True,
                   current_stream=lambda d=None: _FakeStream(), get_compute_capability=lambda d=None: 90).items():
    setattr(_di.CudaInterface, _n, staticmethod(_f))
_di.CudaInterface.is_available = staticmethod(lambda: True)
import torch._inductor.codegen.wrapper as _wr  # noqa: E402
import builtins as _bi  # noqa: E402
def _fake_exec(code, scope=None, *rest):
    # The autotune-at-compile-time block: its example tensors become fake CUDA tensors; launches are no-ops.
    try:
        with _ft.FakeTensorMode(allow_non_fake_inputs=True):
            return _bi.exec(code, scope, *rest)
    except Exception:
        import traceback
        traceback.print_exc()
        open(os.path.join(os.getcwd(), "failed_tuning.py"), "w").write(code)
        raise
_wr.exec = _fake_exec
# The weights blob: the real CPU values behind fake parameters, by name (fc.0.weight ~ fc_0_weight).
NAMED = {}
import re as _re  # noqa: E402
from torch._inductor.graph import GraphLowering as _GL  # noqa: E402
_orig_gov = _GL.get_original_value_of_constant
def _gov(self, name):
    v = _orig_gov(self, name)
    if isinstance(v, _ft.FakeTensor):
        key = _re.sub(r"\W", "_", name)
        for n, t in NAMED.items():
            nn_ = _re.sub(r"\W", "_", n)
            if key == nn_ or key.endswith("_" + nn_) or nn_.endswith(key):
                if tuple(t.shape) == tuple(v.shape):
                    return t.to(v.dtype).as_strided(v.shape, v.stride()) if t.is_contiguous() else t
        print(f"[fakecuda] constant {name}: no real value found, zeros", flush=True)
        return torch.zeros(v.shape, dtype=v.dtype)
    return v
_GL.get_original_value_of_constant = _gov
# Fake tensors all have data_ptr 0: without this, every constant of one shape is deduplicated into the first.
import torch._inductor.graph as _gr  # noqa: E402
import torch._inductor.utils as _iu  # noqa: E402
_orig_same = _iu.is_same_tensor
def _same(data, value):
    if isinstance(data, _ft.FakeTensor) or isinstance(value, _ft.FakeTensor):
        return (data.size() == value.size() and data.stride() == value.stride() and data.dtype == value.dtype
                and data.device == value.device and data.storage_offset() == value.storage_offset()
                and data.untyped_storage()._cdata == value.untyped_storage()._cdata)
    return _orig_same(data, value)
_iu.is_same_tensor = _same
if hasattr(_gr, "is_same_tensor"):
    _gr.is_same_tensor = _same
# Kernels with several configs (reductions) are benchmarked even without max_autotune: no device, so the
# first config wins (a real H200 may pick another block size; the wrapper's shape is the same).
from torch._inductor.runtime import triton_heuristics as _th  # noqa: E402
_th.CachingAutotuner.benchmark_all_configs = lambda self, *a, **k: {l: float(i) for i, l in enumerate(self.launchers)}
# Dynamo's stream tracking (torch.cond is traced by Dynamo) asks torch.accelerator for a real stream.
torch.accelerator.is_available = lambda: False
torch.accelerator.current_device_index = lambda: 0
