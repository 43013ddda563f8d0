"""Generate real torch 2.11 / 2.15 AOTI CUDA codegen without a GPU (README.md). Usage: python gen.py OUTDIR NAME[,NAME]"""
import json, os, sys, shutil, traceback
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
import fakecuda  # noqa
import torch
from torch._subclasses.fake_tensor import FakeTensorMode, FakeTensor
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples"))
import make_cuda_examples as mce
mce._import_torch(); mce.base._import_torch()

out = os.path.abspath(sys.argv[1]); os.makedirs(out, exist_ok=True)

def build_cuda_cond():
    nn, F = torch.nn, torch.nn.functional
    class CondNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.ModuleList([nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 4)])
        def forward(self, x):
            h = torch.relu(self.fc[0](x))
            h = torch.cond(h.sum() > 0, lambda t: torch.log(self.fc[1](t)), lambda t: torch.tanh(self.fc[1](t)) * 2, (h,))
            return (F.softmax(self.fc[2](h), dim=-1),)
    return CondNet(), (torch.randn(8, 16),), {}
mce.BUILDERS["cuda_cond"] = build_cuda_cond
names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(mce.BUILDERS)

KEEP = []
def to_fake_cuda(mode, t):
    meta = t.to("meta")
    f = FakeTensor(mode, meta, torch.device("cuda", 0))
    fakecuda.REAL[id(f)] = t
    KEEP.append(f)  # its id stays its own
    return f

for name in names:
    print("=====", name, flush=True)
    torch.manual_seed(0)
    model, inputs, configs = mce.BUILDERS[name]()
    configs = {**mce.COMMON_CONFIGS, **configs, **{
        "triton.autotune_at_compile_time": True,
        "compile_threads": 1,
    }, **json.loads(os.environ.get("GEN_EXTRA_CONFIGS", "{}"))}
    model = model.eval()
    if inputs[0].dtype == torch.float16:
        model = model.half()
    fakecuda.NAMED.clear()
    fakecuda.NAMED.update({n: p.detach().clone() for n, p in model.state_dict().items()})
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    mode = FakeTensorMode(shape_env=ShapeEnv(tracked_fakes=[]), allow_non_fake_inputs=True, export=True)
    for mod in model.modules():
        for k, p in list(mod._parameters.items()):
            if p is not None:
                mod._parameters[k] = torch.nn.Parameter(to_fake_cuda(mode, p.data), requires_grad=False)
        for k, b in list(mod._buffers.items()):
            if b is not None:
                mod._buffers[k] = to_fake_cuda(mode, b)
    fin = tuple(to_fake_cuda(mode, t) for t in inputs)
    try:
        with torch.no_grad():
            with torch._guards.tracing(torch._guards.TracingContext(mode)):
                ep = torch.export.export(model, fin)
        print(ep.graph_module.code[:2000])
        pkg = os.path.join(out, name + ".pt2")
        r = torch._inductor.aoti_compile_and_package(ep, package_path=pkg, inductor_configs=dict(configs))
        print("package:", r, flush=True)
    except Exception:
        traceback.print_exc()
