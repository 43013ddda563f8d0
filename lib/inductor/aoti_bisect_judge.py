#!/usr/bin/env python3
"""aoti-bisect's judge (embedded in the aoti-bisect binary): whose bug is it.

  aoti_bisect_judge.py --helper BUILD_HELPER.py --request REQUEST.json --result RESULT.json

The request (written by the driver):
  {"exported_program": path, "model_name": str, "inputs": path (torch.save),
   "device": "" | "cpu", "libraries": [path],
   "package_outputs": path or null (the failing run's outputs, torch.save tuple),
   "culprit_nodes": [graph node, ...] (what the culprit's buffers compute; may be empty),
   "tolerances": {dtype: {"atol", "rtol"}},
   "upstream": null | {"dir": path, "configs": {...}, "symptom": "nonfinite" | "mismatch",
                       "max_compiles": int, "timeout_s": float}}

It runs the exported program eagerly node by node in the inputs' own dtypes
(the first node that makes NaN/Inf from finite operands, a parameter, constant
or input that already holds them, the node that raised), then in float64 (the
AOTI minifier's rule: floating parameters, buffers and inputs widened, dtype
arguments in the graph set to float64, integer and bool tensors left as they
are), and measures each output of eager and of the package against float64:
root mean square error (torch._dynamo.utils.rmse), the largest difference,
and how many elements leave the tolerance.

With "upstream", it writes OUT/repro.py, inputs.pt and constants.pt: the
culprit's graph nodes as a module, exported and compiled with
aoti_compile_and_package under the package's configs, run eager, float64
and compiled on the culprit's inputs (the values eager computes for them,
dtype, shape and strides kept), and runs it once; where the nodes alone do
not show the symptom, it adds the nodes just upstream, by halves, up to the
whole graph.

RESULT.json: {"ok", "seconds", "error", "error_kind", "eager", "fp64",
"outputs", "culprit", "upstream"}; non-finite figures are written as the
strings "nan", "inf", "-inf".
"""

import argparse
import copy
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
import traceback


def load_helper(path):
    spec = importlib.util.spec_from_file_location("aoti_bisect_build_helper", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def number(x):
    """A float for JSON: non-finite values as strings."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def nonfinite_counts(torch, t):
    if not isinstance(t, torch.Tensor) or not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return 0, 0
    return int(torch.isnan(t).sum()), int(torch.isinf(t).sum())


def tensors_of(torch, value):
    import torch.utils._pytree as pytree

    return [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def node_desc(helper, torch, n, exported):
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    src = exported.get(n.name, n)
    loc = helper.source_location(src, torch_dir) or helper.source_location(n, torch_dir)
    op = str(src.target) if src.op == "call_function" else src.op
    return {"node": n.name, "op": op,
            "source": f"{loc['file']}:{loc['line']} in {loc['function']}" if loc else "",
            "code": loc["code"] if loc else ""}


def make_watch(torch, gm, keep):
    """An interpreter that notes where NaN/Inf first appear and keeps the values of `keep`."""

    class Watch(torch.fx.Interpreter):
        def __init__(self):
            super().__init__(gm)
            self.values = {}
            self.made_nan = None  # (node, nan, inf): the first node making NaN from operands without NaN
            self.made_inf = None  # the first node making Inf from finite operands
            self.nan_nodes = set()
            self.holds = None  # (node, nan, inf): a parameter, constant or input holding them
            self.raised = None  # the node that raised
            self.bad = set()  # nodes whose value holds NaN/Inf

        def run_node(self, n):
            try:
                result = super().run_node(n)
            except Exception:
                self.raised = n
                raise
            nan = inf = 0
            for t in tensors_of(torch, result):
                a, b = nonfinite_counts(torch, t)
                nan += a
                inf += b
            if nan or inf:
                self.bad.add(n.name)
                if nan:
                    self.nan_nodes.add(n.name)
                operands = n.all_input_nodes
                if n.op in ("placeholder", "get_attr"):
                    if self.holds is None:
                        self.holds = (n, nan, inf)
                elif nan and self.made_nan is None and not any(a.name in self.nan_nodes for a in operands):
                    self.made_nan = (n, nan, inf)
                if (inf and n.op == "call_function" and self.made_inf is None
                        and not any(a.name in self.bad for a in operands)):
                    self.made_inf = (n, nan, inf)
            if n.name in keep:
                # Parameters and inputs cloned: nothing done to the program later changes them.
                self.values[n.name] = (result.detach().clone() if n.op in ("placeholder", "get_attr")
                                       and isinstance(result, torch.Tensor) else result)
            return result

    return Watch()


def index_source(n):
    """The user input a raising node reads its indices from directly (through views or dtype casts), or None."""
    def walk(a, depth):
        if depth > 4 or not hasattr(a, "op"):
            return None
        if a.op == "placeholder":
            val = a.meta.get("val")
            dtype = getattr(val, "dtype", None)
            if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
                return a.name
            return None
        if a.op == "call_function":
            name = getattr(a.target, "__name__", str(a.target)).split(".")[0]
            if name in ("view", "reshape", "_unsafe_view", "unsqueeze", "squeeze", "flatten", "_to_copy", "to",
                        "clone", "expand", "permute", "select", "slice"):
                return walk(a.args[0], depth + 1) if a.args else None
        return None

    for a in n.all_input_nodes:
        found = walk(a, 0)
        if found:
            return found
    return None


def widen_graph(torch, gm):
    """The minifier's cast (torch._dynamo.debug_utils.cast_to_fp64), with positional dtype arguments too."""
    floats = (torch.float16, torch.bfloat16, torch.float32)

    def widen(a):
        return torch.float64 if isinstance(a, torch.dtype) and a in floats else a

    gm = gm.to(torch.float64)
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        node.args = tuple(widen(a) for a in node.args)
        node.kwargs = {k: widen(v) for k, v in node.kwargs.items()}
    gm.recompile()
    return gm


def widen_inputs(torch, flat):
    widened, kept = 0, []
    out = []
    for t in flat:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            out.append(t.to(torch.float64))
            widened += 1
        else:
            if isinstance(t, torch.Tensor):
                kept.append(str(t.dtype).replace("torch.", ""))
            out.append(t)
    return out, widened, kept


def tolerance_for(tolerances, dtype):
    tol = tolerances.get(dtype) or tolerances.get("float32") or {"atol": 1e-5, "rtol": 1.3e-6}
    return float(tol["atol"]), float(tol["rtol"])


def against(torch, x, ref, tol):
    """rmse, largest difference and elements out of tolerance of x against the float64 ref."""
    atol, rtol = tol
    xd = x.detach().to("cpu", torch.float64)
    rd = ref.detach().to("cpu", torch.float64)
    diff = (xd - rd).abs()
    same_nan = torch.isnan(xd) & torch.isnan(rd)
    same_inf = torch.isinf(xd) & torch.isinf(rd) & (xd == rd)
    ok = (diff <= atol + rtol * rd.abs()) | same_nan | same_inf
    err = torch.sqrt(torch.mean(torch.square(rd - xd))).item() if xd.numel() else 0.0
    finite = torch.where(same_nan | same_inf, torch.zeros_like(diff), diff)
    return {"rmse": number(err), "max_abs": number(finite.max().item() if finite.numel() else 0.0),
            "beyond_tolerance": int((~ok).sum()), "nan": int(torch.isnan(xd).sum()),
            "inf": int(torch.isinf(xd).sum())}


def output_figures(torch, eager, fp64, package, tolerances):
    out = []
    for i, ref in enumerate(fp64):
        e = eager[i] if i < len(eager) else None
        if not isinstance(ref, torch.Tensor) or not isinstance(e, torch.Tensor) or not e.is_floating_point():
            continue
        dtype = str(e.dtype).replace("torch.", "")
        tol = tolerance_for(tolerances, dtype)
        row = {"index": i, "dtype": dtype, "numel": e.numel(), "shape": list(e.shape),
               "tolerance": {"atol": tol[0], "rtol": tol[1]},
               "fp64_nan": int(torch.isnan(ref).sum()), "fp64_inf": int(torch.isinf(ref).sum()),
               "fp64_rms": number(torch.sqrt(torch.mean(torch.square(ref.double()))).item() if ref.numel() else 0.0),
               "eager": against(torch, e, ref, tol)}
        p = package[i] if package is not None and i < len(package) else None
        if isinstance(p, torch.Tensor) and p.shape == e.shape:
            row["package"] = against(torch, p, ref, tol)
        out.append(row)
    return out


# --- the smallest program that shows it -------------------------------------

SCRIPT_HEAD = '''#!/usr/bin/env python3
"""{title}

Written by aoti-bisect. {nodes_line}
It runs them eagerly, eagerly in float64, and compiled with
torch._inductor.aoti_compile_and_package (the package's Inductor configs
below) on the inputs saved beside it (inputs.pt: the values eager computes
for them, dtype, shape and strides kept), prints the figures, and exits 1
when the symptom shows ({symptom_line}), 0 when it does not, 2 when it
cannot run.
Needs only torch; run it from any folder: python repro.py
"""
import math
import os
import sys
import tempfile

import torch
from torch import device  # noqa: F401  (the graph's code may name devices)

inf = math.inf
nan = math.nan
HERE = os.path.dirname(os.path.abspath(__file__))
INDUCTOR_CONFIGS = {configs}
SYMPTOM = {symptom!r}
TOLERANCES = {tolerances}


class Repro(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for name, value in torch.load(os.path.join(HERE, "constants.pt"), weights_only=True).items():
            self.register_buffer(name, value)

'''

SCRIPT_TAIL = '''

def widened(model, inputs):
    floats = (torch.float16, torch.bfloat16, torch.float32)
    model = torch.fx.symbolic_trace(model).to(torch.float64)
    for node in model.graph.nodes:
        if node.op == "call_function":
            node.args = tuple(torch.float64 if a in floats else a for a in node.args)
            node.kwargs = {k: torch.float64 if v in floats else v for k, v in node.kwargs.items()}
    model.recompile()
    return model, [t.double() if t.is_floating_point() else t for t in inputs]


def leaves(value):
    return [t for t in torch.utils._pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def figures(x, ref):
    xd, rd = x.double(), ref.double()
    err = torch.sqrt(torch.mean(torch.square(rd - xd))).item() if x.numel() else 0.0
    return err, int(torch.isnan(x).sum()), int(torch.isinf(x).sum())


def main():
    saved = torch.load(os.path.join(HERE, "inputs.pt"), weights_only=True)
    inputs = lambda: [t.clone() for t in saved]  # noqa: E731  (each run on copies: some update them in place)
    model = Repro().eval()
    with torch.no_grad():
        eager = leaves(model(*inputs()))
        m64, in64 = widened(model, inputs())
        fp64 = leaves(m64(*in64))
        ep = torch.export.export(model, tuple(inputs()))
        path = os.path.join(tempfile.mkdtemp(prefix="repro-"), "repro.pt2")
        torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=dict(INDUCTOR_CONFIGS))
        compiled = leaves(torch._inductor.aoti_load_package(path)(*inputs()))
    shows = False
    print(f"torch {torch.__version__}")
    for i, (e, c, r) in enumerate(zip(eager, compiled, fp64)):
        if not e.is_floating_point():
            continue
        ee, en, ei = figures(e, r)
        ce, cn, ci = figures(c, r)
        atol, rtol = TOLERANCES.get(str(e.dtype).replace("torch.", ""), (1e-5, 1.3e-6))
        close = torch.allclose(c.double(), e.double(), atol=atol, rtol=rtol, equal_nan=True)
        print(f"output {i} {str(e.dtype).replace('torch.', '')} {list(e.shape)}: "
              f"eager {en} NaN {ei} Inf, rmse vs float64 {ee:.6g}; "
              f"compiled {cn} NaN {ci} Inf, rmse vs float64 {ce:.6g}; "
              f"compiled {'matches' if close else 'differs from'} eager (atol {atol:g}, rtol {rtol:g})")
        if SYMPTOM == "nonfinite" and (cn or ci):
            shows = True
        if SYMPTOM == "mismatch" and not close:
            shows = True
    print("symptom shows" if shows else "symptom does not show")
    return 1 if shows else 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:  # not the symptom: the script could not run (exit 2)
        import traceback

        traceback.print_exc()
        code = 2
    sys.exit(code)
'''


def build_subgraph(torch, gm, names, values):
    """A GraphModule of the nodes `names` of gm: their outside operands become inputs (or constants for
    parameters), the values used outside become outputs. Returns (module, inputs, constants, outputs)."""
    chosen = [n for n in gm.graph.nodes if n.name in names and n.op == "call_function"]
    chosen_set = set(chosen)
    graph = torch.fx.Graph()
    env, inputs, constants = {}, [], {}
    for n in chosen:
        for a in n.all_input_nodes:
            if a in chosen_set or a in env:
                continue
            if a.op == "get_attr":
                name = f"c{len(constants)}"
                constants[name] = (a.target, values[a.name])
                env[a] = graph.get_attr(name)
            else:
                if a.name not in values:
                    return None
                ph = graph.placeholder(f"in_{a.name}")
                inputs.append((a.name, values[a.name]))
                env[a] = ph
        env[n] = graph.node_copy(n, lambda x: env[x])
    outputs = [n for n in chosen if n.users and any(u not in chosen_set for u in n.users)]
    if not outputs and chosen:
        outputs = [chosen[-1]]
    graph.output(tuple(env[n] for n in outputs))
    root = torch.nn.Module()
    for name, (_, value) in constants.items():
        root.register_buffer(name, value)
    return torch.fx.GraphModule(root, graph), inputs, constants, outputs


def forward_source(sub):
    code = sub.code.strip("\n")
    return "\n".join("    " + line if line.strip() else "" for line in code.splitlines())


def write_script(torch, out_dir, sub, inputs, constants, outputs, req, title, nodes_line):
    os.makedirs(out_dir, exist_ok=True)
    tol = {k: (float(v["atol"]), float(v["rtol"])) for k, v in (req.get("tolerances") or {}).items()}
    symptom = req["upstream"]["symptom"]
    text = SCRIPT_HEAD.format(
        title=title, nodes_line=nodes_line,
        symptom_line="NaN/Inf in the compiled outputs" if symptom == "nonfinite"
        else "the compiled outputs differ from eager beyond the tolerance",
        configs=repr(dict(req["upstream"].get("configs") or {})), symptom=symptom, tolerances=repr(tol))
    text += forward_source(sub) + SCRIPT_TAIL
    keep = lambda t: t.detach().cpu().clone() if isinstance(t, torch.Tensor) else t  # noqa: E731
    torch.save([keep(v) for _, v in inputs], os.path.join(out_dir, "inputs.pt"))
    torch.save({k: keep(v) for k, (_, v) in constants.items()}, os.path.join(out_dir, "constants.pt"))
    with open(os.path.join(out_dir, "repro.py"), "w", encoding="utf-8") as f:
        f.write(text)


def run_script(out_dir, timeout_s):
    start = time.monotonic()
    env = dict(os.environ)
    try:
        p = subprocess.run([sys.executable, "repro.py"], cwd=out_dir, capture_output=True, text=True,
                           timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"exit": None, "seconds": round(time.monotonic() - start, 2), "output": "timed out"}
    tail = (p.stdout + p.stderr).strip().splitlines()[-12:]
    return {"exit": p.returncode, "seconds": round(time.monotonic() - start, 2), "output": "\n".join(tail)}


def ancestors_nearest_first(gm, names):
    order = {n.name: i for i, n in enumerate(gm.graph.nodes)}
    by_name = {n.name: n for n in gm.graph.nodes}
    seen, frontier = set(), [by_name[x] for x in names if x in by_name]
    while frontier:
        n = frontier.pop()
        for a in n.all_input_nodes:
            if a.op == "call_function" and a.name not in names and a.name not in seen:
                seen.add(a.name)
                frontier.append(a)
    return sorted(seen, key=lambda x: -order[x])


def upstream_repro(torch, helper, gm, values_of, req, culprit_nodes, exported):
    """Writes the smallest program from the culprit's nodes outward; returns the record."""
    up = req["upstream"]
    out_dir = up["dir"]
    all_call = [n.name for n in gm.graph.nodes if n.op == "call_function"]
    ancestors = ancestors_nearest_first(gm, set(culprit_nodes))
    record = {"script": "repro.py", "reproduced": False, "nodes": 0, "graph_nodes": len(all_call),
              "compile_seconds": 0.0, "tries": [], "note": None}
    max_compiles = int(up.get("max_compiles", 6))

    def attempt(extra):
        names = set(culprit_nodes) | set(ancestors[:extra])
        values = values_of(names)
        built = build_subgraph(torch, gm, names, values)
        if built is None:
            return None
        sub, inputs, constants, outputs = built
        ops = sorted({str(n.target) for n in sub.graph.nodes if n.op == "call_function"})
        title = (f"aoti-bisect upstream repro: {len(names)} of the exported program's {len(all_call)} graph nodes"
                 f" ({', '.join(ops[:6])}{', ...' if len(ops) > 6 else ''})")
        nodes_line = ("It holds the graph nodes " + ", ".join(sorted(names)[:12])
                      + (", ..." if len(names) > 12 else "") + " as a module.")
        write_script(torch, out_dir, sub, inputs, constants, outputs, req, title, nodes_line)
        ran = run_script(out_dir, float(up.get("timeout_s", 600)))
        ran["nodes"] = len(names)
        record["tries"].append(ran)
        record["compile_seconds"] = round(record["compile_seconds"] + ran["seconds"], 2)
        return ran

    # The culprit alone, then the whole upstream, then halves between.
    first = attempt(0)
    record["alone"] = first["exit"] if first is not None else None
    if first is not None and first["exit"] == 1:
        record.update(reproduced=True, nodes=len(culprit_nodes))
        return record
    if not ancestors:
        record["note"] = "the culprit's nodes alone do not show the symptom, and it has no upstream nodes"
        if first is not None and first["exit"] not in (0, 1):
            last = (first["output"].strip().splitlines() or ["no output"])[-1]
            record["note"] = f"the script could not run ({last})"
        return record
    whole = attempt(len(ancestors))
    if whole is None or whole["exit"] != 1:
        record["note"] = (f"no subgraph up to the whole graph ({len(all_call)} nodes) shows the symptom"
                          if whole is not None else "the upstream values could not be kept")
        failed = [t for t in record["tries"] if t["exit"] not in (0, 1)]
        if failed:
            last = (failed[-1]["output"].strip().splitlines() or ["no output"])[-1]
            record["note"] += f"; {len(failed)} of its {len(record['tries'])} runs could not run the script ({last})"
        return record
    lo, hi = 0, len(ancestors)  # lo fails, hi reproduces
    while hi - lo > 1 and len(record["tries"]) < max_compiles:
        mid = (lo + hi) // 2
        r = attempt(mid)
        if r is not None and r["exit"] == 1:
            hi = mid
        else:
            lo = mid
    if record["tries"][-1].get("nodes") != len(culprit_nodes) + hi:
        attempt(hi)  # leave the smallest reproducing script in the folder
    record.update(reproduced=True, nodes=len(culprit_nodes) + hi, added=ancestors[:hi],
                  farthest=ancestors[hi - 1])
    if hi - lo > 1:
        record["note"] = f"stopped after {max_compiles} compiles; a smaller subgraph may show it"
    return record


def judge(torch, helper, req):
    import torch.utils._pytree as pytree

    ep = helper.load_exported_program(torch, req["exported_program"], req.get("model_name", "model"))
    exported = {n.name: n for n in ep.graph.nodes}
    value = torch.load(req["inputs"], weights_only=True)
    args, kwargs = helper.bind_inputs(torch, value, ep.call_spec.in_spec)
    ep, args, kwargs = helper.on_device(torch, ep, args, kwargs, req.get("device") or None)
    flat = pytree.tree_leaves((args, kwargs))
    culprit_nodes = [x for x in req.get("culprit_nodes") or []]
    gm = ep.module()
    present = {n.name for n in gm.graph.nodes}
    culprit_nodes = [x for x in culprit_nodes if x in present]
    keep = set()
    if req.get("upstream") and culprit_nodes:
        keep = {n.name for n in gm.graph.nodes}  # any node may become an input of the repro
    result = {"eager": {}, "fp64": {}, "outputs": [], "culprit": {"nodes": culprit_nodes}}
    watch = make_watch(torch, gm, keep)
    eager_out = None
    fresh = lambda ts: [t.clone() if isinstance(t, torch.Tensor) else t for t in ts]  # noqa: E731
    with torch.no_grad():
        try:
            # On copies: a program that updates its inputs in place would change them for the float64 run.
            eager_out = tensors_of(torch, watch.run(*fresh(flat)))
        except Exception as e:
            n = watch.raised
            raised = {"line": helper.first_useful_line(e)}
            if n is not None:
                raised.update(node_desc(helper, torch, n, exported))
                raised["in_culprit"] = n.name in culprit_nodes
                raised["index_input"] = index_source(n)
            result["eager"]["raised"] = raised
    ev = result["eager"]
    if watch.holds is not None:
        n, nan, inf = watch.holds
        kind = "input" if n.op == "placeholder" else "parameter"
        ev["holds"] = {"node": n.name, "kind": kind, "target": str(n.target), "nan": nan, "inf": inf}
    made = watch.made_nan or watch.made_inf
    if made is not None:
        n, nan, inf = made
        ev["made"] = dict(node_desc(helper, torch, n, exported), nan=nan, inf=inf, what="NaN" if nan else "Inf",
                          in_culprit=n.name in culprit_nodes)
    ev["culprit_nonfinite"] = sorted(x for x in culprit_nodes if x in watch.bad)
    if eager_out is not None:
        ev["outputs_nan"] = sum(nonfinite_counts(torch, t)[0] for t in eager_out)
        ev["outputs_inf"] = sum(nonfinite_counts(torch, t)[1] for t in eager_out)
    # float64
    # A copy: .to() swaps the data of parameters the program's modules share.
    gm64 = widen_graph(torch, copy.deepcopy(ep.module()))
    flat64, widened, kept = widen_inputs(torch, fresh(flat))
    fp = result["fp64"]
    fp.update(widened_inputs=widened, kept=sorted(set(kept)),
              widened_parameters=sum(1 for t in list(gm64.parameters()) + list(gm64.buffers())
                                     if t.dtype == torch.float64))
    fp64_out = None
    with torch.no_grad():
        try:
            fp64_out = tensors_of(torch, torch.fx.Interpreter(gm64).run(*flat64))
        except Exception as e:
            fp["raised"] = helper.first_useful_line(e)
    if fp64_out is not None:
        fp["outputs_nan"] = sum(nonfinite_counts(torch, t)[0] for t in fp64_out)
        fp["outputs_inf"] = sum(nonfinite_counts(torch, t)[1] for t in fp64_out)
    package = None
    if req.get("package_outputs"):
        package = tensors_of(torch, torch.load(req["package_outputs"], weights_only=True))
    if eager_out is not None and fp64_out is not None:
        result["outputs"] = output_figures(torch, eager_out, fp64_out, package, req.get("tolerances") or {})
    if req.get("upstream") and culprit_nodes and eager_out is not None:
        result["upstream"] = upstream_repro(torch, helper, gm, lambda names: watch.values, req, culprit_nodes,
                                            exported)
    return result


def main(argv=None):
    p = argparse.ArgumentParser(prog="aoti_bisect_judge.py")
    p.add_argument("--helper", required=True)
    p.add_argument("--request", required=True)
    p.add_argument("--result", required=True)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    helper = load_helper(args.helper)
    start = time.monotonic()
    result = {"ok": False, "error": None, "error_kind": None}
    try:
        import torch
        import torch.fx
    except Exception as e:
        result.update(error=helper.first_useful_line(e), error_kind="no_torch")
        helper.write_json_atomic(args.result, result)
        return 4
    with open(args.request, encoding="utf-8") as f:
        req = json.load(f)
    try:
        for library in req.get("libraries") or []:
            torch.ops.load_library(library)
        result.update(judge(torch, helper, req))
        result["ok"] = True
    except helper.Refused as e:
        traceback.print_exc()
        result.update(error=str(e), error_kind="unsafe")
    except Exception as e:
        traceback.print_exc()
        result.update(error=helper.first_useful_line(e), error_kind="judge")
    result["seconds"] = round(time.monotonic() - start, 3)
    result["torch_version"] = torch.__version__
    helper.write_json_atomic(args.result, result)
    return 0 if result["ok"] else 3


if __name__ == "__main__":
    sys.exit(main())
