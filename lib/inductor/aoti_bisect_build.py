#!/usr/bin/env python3
"""aoti-bisect's instrumented-build helper (embedded in the aoti-bisect binary).

Compiles an exported program into an AOTInductor package with the
intermediate-value debug printer on:

  aoti_bisect_build.py --exported-program PATH [--model-name NAME]
      --configs JSON_FILE --level N [--filter k1,k2] --out PKG.pt2
      --result RESULT.json

PATH is a torch.export.save file or a package_pt2 archive holding
models/<NAME>.json. JSON_FILE holds the inductor configs (an object of
scalars). The package is written atomically (compiled in a temporary folder
beside OUT, then renamed over it). RESULT.json is always written:
  {"ok": bool, "torch_version": str, "seconds": float,
   "error": first useful line or null,
   "error_kind": "no_torch" | "load" | "unsafe" | "compile" | "eager" | null}
Exit status: 0 built, 3 load or compile error, 4 torch cannot be imported,
2 bad arguments.

The exported program is loaded weights-only (WeightsOnlyLoading): a program
whose pickled parts hold anything but tensors and plain containers, or whose
symbolic shapes are not plain sympy, is refused ("unsafe", naming the file
and the part) and nothing in it runs.

With --node-map MAP.json, a build also writes which graph node's value each
buffer of the generated code holds (read from Inductor's scheduler while it
generates the wrapper; format below). Only the mapping is read: the package
is the same.

With --eager-inputs IN.pt --eager-out OUT.pt instead of --configs/--level/
--out, it runs the exported program eagerly on the inputs (a torch.save file
of tensors flattened in input order, as aoti-bisect takes them) and saves the
outputs, flattened, as a tuple (the reference for --against-eager). With
--node-map MAP.json --node-values VALUES.pt --node-info INFO.json as well, it
runs the program node by node and saves, for each mapped buffer, the eager
values of its candidate nodes ({buffer: [tensor, ...]} with torch.save), and
writes each graph node's op and source location to INFO.json.

The node map: {"format": 1, "buffers": {name: {"nodes": [graph node, ...],
"origin": post-grad node or null, "why": null or why it holds no node's
value}}}. A buffer can name several nodes (one storage written in place by a
later kernel): its value matches one of them at any time.

Inductor's compile cache goes where TORCHINDUCTOR_CACHE_DIR says (the driver
sets it when the user has not). Python 3.9+.
"""

import argparse
import collections
import contextlib
import io
import json
import os
import re
import shutil
import sys
import time
import traceback
import zipfile

EXIT_OK = 0
EXIT_BAD_ARGS = 2
EXIT_FAILED = 3
EXIT_NO_TORCH = 4

MAX_ERROR_CHARS = 500


class StepError(Exception):
    """A failure of one step, with the result's error_kind."""

    def __init__(self, kind, line):
        super().__init__(line)
        self.kind = kind
        self.line = line


def first_useful_line(exc):
    """One line that says what went wrong: a compiler diagnostic if the text
    holds one, else the first non-empty line; prefixed by the exception type."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    line = next((ln for ln in lines if re.search(r"\b(fatal )?error:", ln)), None)
    if line is None:
        line = lines[0] if lines else ""
    else:
        # "/long/cache/path/k.cpp:3:1: error: ..." -> "k.cpp:3:1: error: ..."
        line = re.sub(r"^\S*/(?=[^/\s]+:\d+:)", "", line)
    text = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 3] + "..."
    return text


def write_json_atomic(path, obj):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def archive_model_names(path):
    """Names of models/<name>.json in a zip archive (under its top folder);
    None when the file is not a zip or holds no models/ folder."""
    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as z:
        names = []
        for entry in z.namelist():
            m = re.match(r"^(?:[^/]+/)?models/([^/]+)\.json$", entry)
            if m:
                names.append(m.group(1))
    return sorted(names) if names else None


class Refused(Exception):
    """A part of the exported program that only an unsafe load could restore
    (pickled code, a custom class). Not a RuntimeError: torch.export.load
    swallows those and retries another way."""


def refusal_reason(exc):
    """What a weights-only unpickler refused, in a few words."""
    text = str(exc)
    m = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
    if m:
        return f"it would call {m.group(1)}"
    m = re.search(r"WeightsUnpickler error: ([^\n]+)", text)
    line = m.group(1) if m else first_useful_line(exc)
    return line if len(line) <= 200 else line[:197] + "..."


class ModuleView:
    """A module as one other module sees it through its globals, with some
    names replaced. Patching only that module's view leaves every other
    user (and any `from M import name` made meanwhile) untouched."""

    def __init__(self, real, **replaced):
        self.__dict__["_real"] = real
        self.__dict__.update(replaced)

    def __getattr__(self, name):
        return getattr(self.__dict__["_real"], name)


class WeightsOnlyLoading:
    """While loading an exported program, nothing it holds can run code.

    torch.export.load and the pt2-archive loader unpickle with
    torch.load(weights_only=False): pickled weights and constants
    (_load_state_dict, _load_constants in
    torch/export/pt2_archive/_package.py), and the sample inputs, the legacy
    weights and constants files and the old format's parts through
    deserialize_torch_artifact (torch/_export/serde/serialize.py), which falls
    back to weights_only=False when weights_only=True fails. _load_constants
    also restores opaque constants with pickle.loads (2.13) and torchbind
    objects with torch._C._pickle_load_obj. And the deserializer parses
    symbolic shapes with sympy.sympify, which evaluates its text as Python.

    Here, in those two modules' views of torch, pickle and sympy: torch.load
    is always weights_only=True (tensors and plain containers), plain pickle
    and the torchbind unpickler refuse, and sympify takes only text that
    reads as sympy's own printing. TORCH_FORCE_WEIGHTS_ONLY_LOAD makes any
    other torch.load weights-only too."""

    MODULES = ("torch.export.pt2_archive._package", "torch._export.serde.serialize")

    def __init__(self, torch, path):
        self.torch = torch
        self.path = path
        self.records = {}  # bytes read from the archive -> the record's name, for the message
        self.record = None  # the record being unpickled
        self._undo = []

    def refuse(self, what, part=None):
        if part is None:
            part = f"its part '{self.record}'" if self.record else "a part of it"
        return Refused(f"exported program '{self.path}' cannot be loaded safely: {part} {what}; aoti-bisect "
                       f"loads only tensors and plain data from an exported program (weights-only), never code")

    def _set(self, owner, name, value):
        old = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, old))

    def _setenv(self, name, value):
        old = os.environ.get(name)
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
        self._undo.append(lambda: os.environ.pop(name, None) if old is None else os.environ.__setitem__(name, old))

    def _views(self):
        import pickle

        torch = self.torch
        guard = self

        def weights_only_load(f, *args, **kwargs):
            kwargs["weights_only"] = True
            kwargs.pop("pickle_module", None)  # weights_only refuses an explicit one
            if isinstance(f, io.BytesIO):
                guard.record = guard.records.get(f.getvalue(), guard.record)
            try:
                return torch.load(f, *args, **kwargs)
            except pickle.UnpicklingError as e:
                raise guard.refuse(f"holds a pickled object ({refusal_reason(e)})") from None

        def refusing(what):
            def refuse(*args, **kwargs):
                raise guard.refuse(what)
            return refuse

        views = {
            "torch": ModuleView(torch, load=weights_only_load,
                                _C=ModuleView(torch._C, _pickle_load_obj=refusing("holds a custom (torchbind) object"))),
            "pickle": ModuleView(pickle, **{name: refusing("holds an object saved with plain pickle")
                                            for name in ("load", "loads", "Unpickler")}),
        }
        try:
            import sympy
        except ImportError:
            return views

        def checked_sympify(a, *args, **kwargs):
            if isinstance(a, str):
                why = unsafe_sym_expr(a, sympy, kwargs.get("locals") or {})
                if why:
                    raise guard.refuse(f"holds a symbolic expression that is not plain sympy ({why})",
                                       part="its graph")
            return sympy.sympify(a, *args, **kwargs)

        views["sympy"] = ModuleView(sympy, sympify=checked_sympify)
        return views

    def __enter__(self):
        import importlib

        # A TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD in the environment would make
        # torch.load reject the forced weights_only.
        self._setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
        self._setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
        views = self._views()
        for module_name in self.MODULES:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            for name, view in views.items():
                if name in vars(module):
                    self._set(module, name, view)
        self._track_records()
        return self

    def _track_records(self):
        try:
            from torch.export.pt2_archive import _package as pt2
        except ImportError:
            return
        reader = getattr(pt2, "PT2ArchiveReader", None)
        orig = getattr(reader, "read_bytes", None)
        if orig is None:
            return
        guard = self

        def read_bytes(r, name, *args, **kwargs):
            data = orig(r, name, *args, **kwargs)
            if isinstance(data, bytes):
                guard.records[data] = name
            guard.record = name  # plain pickle unpickles right after reading
            return data

        self._set(reader, "read_bytes", read_bytes)

    def __exit__(self, *exc):
        for undo in reversed(self._undo):
            undo()
        self._undo = []
        return False


SYM_EXPR_OPS = {"(", ")", ",", "+", "-", "*", "/", "//", "**", "%", "=", "<", ">", "<=", ">=", "==", "!=",
                "&", "|", "~"}


def unsafe_sym_expr(text, sympy, local_names):
    """Why `text` is no plain sympy expression (as sympy's srepr or str write
    them), or None. sympify evaluates its text as Python: this lets through
    names of sympy's own classes and constants, the names sympify was given,
    numbers, keyword arguments, arithmetic, and string literals that hold a
    symbol name or a number; no attribute access, subscripts, lambdas, or
    calls of anything else (open, exec, ...)."""
    import builtins
    import keyword
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError) as e:
        return f"cannot be read: {e}"
    skip = {tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT}
    tokens = [t for t in tokens if t.type not in skip]
    for i, t in enumerate(tokens):
        if t.type == tokenize.NUMBER:
            continue
        if t.type == tokenize.OP:
            if t.string not in SYM_EXPR_OPS:
                return f"operator '{t.string}'"
            continue
        if t.type == tokenize.STRING:
            if not re.fullmatch(r"""(['"])([A-Za-z][A-Za-z0-9_]*|[-+]?[0-9.]+([eE][-+]?[0-9]+)?)\1""", t.string):
                return f"string {t.string[:40]}"
            continue
        if t.type != tokenize.NAME:
            return f"token '{t.string[:40]}'"
        name = t.string
        if name in ("True", "False", "None") or name in local_names:
            continue
        if name.startswith("_") or keyword.iskeyword(name):
            return f"name '{name}'"
        if i + 1 < len(tokens) and tokens[i + 1].string == "=" and i > 0 and tokens[i - 1].string in ("(", ","):
            continue  # a keyword argument
        obj = getattr(sympy, name, None)
        if obj is not None:
            if isinstance(obj, sympy.Basic) or (isinstance(obj, type) and issubclass(obj, sympy.Basic)):
                continue
            return f"name '{name}'"
        if hasattr(builtins, name):
            return f"name '{name}'"
        # Any other name becomes a sympy Symbol.
    return None


def load_exported_program(torch, path, model_name):
    with WeightsOnlyLoading(torch, path):
        return load_exported_program_unguarded(torch, path, model_name)


def load_exported_program_unguarded(torch, path, model_name):
    names = archive_model_names(path)
    if names is not None:
        try:
            from torch.export.pt2_archive import _package as pt2
        except ImportError:
            pt2 = None
        if pt2 is not None:
            if model_name not in names:
                raise StepError(
                    "load",
                    f"'{path}' holds no exported program '{model_name}' "
                    f"(it holds: {', '.join(names)})",
                )
            return load_from_pt2_archive(pt2, path)[model_name]
    # torch.export.save files (and package_pt2 archives on a torch too old
    # to know them, which then fails with torch's own message).
    return torch.export.load(path)


def load_from_pt2_archive(pt2, path):
    # load_pt2 would also load (dlopen) every AOTI model in the archive, which
    # fails for a CUDA package on a machine without a GPU and is never needed
    # here: read only the exported programs where torch lets us.
    reader = getattr(pt2, "PT2ArchiveReader", None)
    loader = getattr(pt2, "_load_exported_programs", None)
    if reader is not None and loader is not None:
        try:
            with reader(path) as r:
                return loader(r, r.get_file_names(), None)
        except TypeError:
            pass  # a private signature that moved: use the public entry point
    return pt2.load_pt2(path).exported_programs


def inductor_configs(user_configs, level, kernel_filter):
    configs = dict(user_configs)
    configs["aot_inductor.debug_intermediate_value_printer"] = str(level)
    # The filter only acts at level 2 (levels 1 and 3 ignore it). Always set
    # it so that AOT_INDUCTOR_FILTERED_KERNELS_TO_PRINT in the environment
    # cannot change a build whose cache key does not know it.
    if level == 2 and kernel_filter:
        configs["aot_inductor.filtered_kernel_names"] = ",".join(kernel_filter)
    else:
        configs["aot_inductor.filtered_kernel_names"] = None
    return configs


def compile_package(torch, ep, configs, out, node_map=None, no_grad=False):
    # Compiled into a private folder beside OUT under OUT's own file name (the
    # package's top-level folder is named after the file's stem), then renamed
    # over OUT: a reader never sees half a package.
    out_dir, out_name = os.path.split(os.path.abspath(out))
    work = os.path.join(out_dir, f".{out_name}.tmp-{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    tmp = os.path.join(work, out_name)
    grad = torch.no_grad() if no_grad else contextlib.nullcontext()
    try:
        # aoti_compile_and_package adds keys to the dict it is given: a copy.
        if node_map:
            with NodeMapRecorder(torch, ep) as recorder, grad:
                torch._inductor.aoti_compile_and_package(
                    ep, package_path=tmp, inductor_configs=dict(configs)
                )
            write_json_atomic(node_map, recorder.result())
        else:
            with grad:
                torch._inductor.aoti_compile_and_package(
                    ep, package_path=tmp, inductor_configs=dict(configs)
                )
        os.replace(tmp, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="aoti_bisect_build.py", description=__doc__.splitlines()[0])
    p.add_argument("--exported-program", required=True)
    p.add_argument("--model-name", default="model")
    p.add_argument("--configs", help="JSON file: inductor configs")
    p.add_argument("--level", type=int, choices=[1, 2, 3])
    p.add_argument("--filter", default="", help="kernel names, comma-separated (level 2)")
    p.add_argument("--no-grad", action="store_true",
                   help="compile with grad off (freezing takes effect only then), as the package was")
    p.add_argument("--out", help="the package to write (.pt2)")
    p.add_argument("--eager-inputs", help="inputs (torch.save) to run the exported program on eagerly")
    p.add_argument("--eager-out", help="where to save the eager outputs (torch.save)")
    p.add_argument("--eager-device", help="eager: move the exported program and the inputs to this device first")
    p.add_argument("--node-map", help="build: where to write the node map; eager: the map to read")
    p.add_argument("--node-values", help="eager: where to save each mapped buffer's eager values")
    p.add_argument("--node-info", help="eager: where to write the mapped nodes' ops and source locations")
    p.add_argument("--result", required=True, help="the result JSON to write")
    p.add_argument("--load-library", action="append", default=[],
                   help="a library of custom operators the program calls (torch.ops.load_library), repeatable")
    args = p.parse_args(argv)
    if args.eager_inputs or args.eager_out or args.node_values:
        if not args.eager_inputs or not (args.eager_out or args.node_values):
            p.error("--eager-inputs goes with --eager-out or --node-values")
        if args.node_values and not (args.node_map and args.node_info):
            p.error("--node-values needs --node-map and --node-info")
        return args
    if not (args.configs and args.level and args.out):
        p.error("--configs, --level and --out are required for a build")
    if not args.out.endswith(".pt2"):
        p.error("--out must end in .pt2")
    return args


def flatten_inputs(value, out):
    """Tensors of a torch.save'd value in order: tuples, lists, dict values."""
    if isinstance(value, (tuple, list)):
        for v in value:
            flatten_inputs(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            flatten_inputs(v, out)
    else:
        out.append(value)
    return out


def _spec_children(spec):
    children = getattr(spec, "children_specs", None)
    return list(children) if children is not None else [spec.child(i) for i in range(spec.num_children)]


def _conform(value, spec):
    """`value` with every dict in the key order of `spec` (what the exported module checks), recursively."""
    children = _spec_children(spec)
    if isinstance(value, dict) and spec.type in (dict, collections.OrderedDict) and set(value) == set(spec.context):
        return {k: _conform(value[k], children[i]) for i, k in enumerate(spec.context)}
    if isinstance(value, (tuple, list)) and spec.type in (tuple, list) and len(value) == len(children):
        return type(value)(_conform(v, c) for v, c in zip(value, children))
    return value


def bind_inputs(torch, value, in_spec):
    """(args, kwargs) for the exported module from what an inputs file holds, bound the way the runner binds
    it (lib/inputs/call_spec.hpp): (args, kwargs); a dict of the keyword arguments; a tuple of the positional
    arguments; the one positional argument itself; else every tensor in file order."""
    import torch.utils._pytree as pytree

    args_spec, kwargs_spec = _spec_children(in_spec)
    n_args = len(_spec_children(args_spec))
    keys = list(kwargs_spec.context or [])
    if (isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], (tuple, list))
            and isinstance(value[1], dict)):
        args, kwargs = tuple(value[0]), value[1]
    elif isinstance(value, dict) and n_args == 0:
        args, kwargs = (), value
    elif not keys and isinstance(value, (tuple, list)) and len(value) == n_args:
        args, kwargs = tuple(value), {}
    elif not keys and n_args == 1:
        args, kwargs = (value,), {}
    else:
        return pytree.tree_unflatten(flatten_inputs(value, []), in_spec)
    return _conform(args, args_spec), _conform(kwargs, kwargs_spec)


def on_device(torch, ep, args, kwargs, device):
    """The program and its inputs moved to `device` (--eager-device), or as they are."""
    if not device:
        return ep, args, kwargs
    import torch.utils._pytree as pytree
    from torch.export.passes import move_to_device_pass

    move = lambda t: t.to(device) if isinstance(t, torch.Tensor) else t  # noqa: E731
    return move_to_device_pass(ep, device), pytree.tree_map(move, args), pytree.tree_map(move, kwargs)


def run_eager(torch, ep, inputs_path, out_path, device=None):
    import torch.utils._pytree as pytree

    args, kwargs = bind_inputs(torch, torch.load(inputs_path, weights_only=True), ep.call_spec.in_spec)
    ep, args, kwargs = on_device(torch, ep, args, kwargs, device)
    with torch.no_grad():
        outputs = ep.module()(*args, **kwargs)
    leaves = [t.detach().cpu() for t in pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]
    tmp = f"{out_path}.tmp-{os.getpid()}"
    torch.save(tuple(leaves), tmp)
    os.replace(tmp, out_path)


# --- the node map: which exported-program node each buffer holds ------------

# Post-grad ops that only reshape: a buffer feeding its node's value through
# them still holds that value (in row-major order).
VIEW_OPS = ("view", "reshape", "_unsafe_view", "squeeze", "unsqueeze", "alias", "flatten")


def _pre_grad_names(node, pre_grad_id):
    """The exported-program nodes a post-grad node came from (node.meta["from_node"])."""
    out = []

    def walk(sources):
        for src in sources or []:
            if getattr(src, "graph_id", None) == pre_grad_id:
                if src.name not in out:
                    out.append(src.name)
            walk(getattr(src, "from_node", None))

    walk(node.meta.get("from_node"))
    return out


def _is_view(node):
    name = getattr(getattr(node, "target", None), "__name__", "") or str(getattr(node, "target", ""))
    return node.op == "call_function" and name.split(".")[0] in VIEW_OPS


def _holds_value_of(node, pre, pre_grad_id):
    """True when the post-grad `node` carries `pre`'s value out of `pre`'s
    decomposition (to the graph output or a node of another origin), maybe
    through view-only nodes; False when it is an internal temporary (the
    exp inside a softmax, the mean of a layer_norm)."""
    seen = set()
    frontier = list(node.users)
    while frontier:
        user = frontier.pop()
        if user in seen:
            continue
        seen.add(user)
        if user.op == "output":
            return True
        if pre not in _pre_grad_names(user, pre_grad_id):
            return True
        if _is_view(user):
            frontier.extend(user.users)
    return False


FOLDS_INTO = ("conv2d", "conv1d", "conv3d", "convolution", "_convolution", "linear", "addmm", "mm", "matmul")
FOLDED_OPS = ("batch_norm", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit",
              "native_batch_norm", "getitem")
BINARY_FOLDED = ("add", "sub", "mul", "div")


def _op_name(node):
    name = getattr(node.target, "__name__", str(node.target))
    return name.split(".")[0]


def _folds(user, value):
    """Whether freezing folds `user` (which reads `value`) into the weights of the op before it."""
    op = _op_name(user)
    if op in FOLDED_OPS:
        return True
    if op in BINARY_FOLDED:
        others = [a for a in user.all_input_nodes if a is not value]
        return all(a.op in ("get_attr", "placeholder") and a.name not in _user_input_names(user.graph)
                   for a in others)
    return False


def _user_input_names(graph):
    """The placeholders that are not parameters, buffers or constants (lifted ones are named p_, b_, c_)."""
    return {n.name for n in graph.nodes if n.op == "placeholder" and not n.name.startswith(("p_", "b_", "c_"))}


class NodeMapRecorder:
    """Wraps GraphLowering.codegen_with_cpp_wrapper and KernelArgs.make_inplace
    while a package compiles, and records the node map."""

    def __init__(self, torch, ep=None):
        self.torch = torch
        self.ep = ep
        self.folded = {}  # exported node -> the node whose value it carries once freezing folded the chain
        self.buffers = {}
        self.stale = set()
        self.inplace = []
        self.notes = []
        self._undo = []

    def __enter__(self):
        try:
            from torch._inductor.codegen import common
            from torch._inductor.graph import GraphLowering
        except Exception as e:  # an Inductor without these: no map, say why
            self.notes.append(f"cannot hook Inductor ({first_useful_line(e)})")
            return self
        recorder = self
        orig_codegen = GraphLowering.codegen_with_cpp_wrapper
        orig_inplace = common.KernelArgs.make_inplace

        def codegen_with_cpp_wrapper(graph, *args, **kwargs):
            result = orig_codegen(graph, *args, **kwargs)
            try:
                recorder.record(graph)
            except Exception as e:  # never fail a build over the map
                recorder.notes.append(f"node map incomplete: {first_useful_line(e)}")
            return result

        def make_inplace(args_self, input_name, output_name):
            recorder.inplace.append((input_name, output_name))
            return orig_inplace(args_self, input_name, output_name)

        GraphLowering.codegen_with_cpp_wrapper = codegen_with_cpp_wrapper
        common.KernelArgs.make_inplace = make_inplace
        self._undo = [
            lambda: setattr(GraphLowering, "codegen_with_cpp_wrapper", orig_codegen),
            lambda: setattr(common.KernelArgs, "make_inplace", orig_inplace),
        ]
        return self

    def __exit__(self, *exc):
        for undo in self._undo:
            undo()
        return False

    def record(self, graph):
        pre_grad_id = getattr(self.torch._inductor.debug, "_pre_grad_graph_id", None)
        if not pre_grad_id:
            self.notes.append("Inductor recorded no pre-grad graph id: no buffer can be mapped")
        buffers = {}
        for name, buf in graph.name_to_buffer.items():
            origin = getattr(buf, "origin_node", None)
            entry = {"nodes": [], "origin": origin.name if origin is not None else None, "why": None}
            # Every exported node the code writing this buffer computes (fused in).
            computes = []
            if pre_grad_id:
                for o in sorted(getattr(buf, "origins", None) or (), key=lambda n: n.name):
                    for pre_name in _pre_grad_names(o, pre_grad_id):
                        if pre_name not in computes:
                            computes.append(pre_name)
            entry["computes"] = computes
            if origin is None:
                entry["why"] = "Inductor records no single origin node for it (a layout copy, or fused from several)"
            elif origin.op in ("get_attr", "placeholder"):
                entry["why"] = f"a copy of {origin.name} (a parameter, constant or input)"
            elif not pre_grad_id:
                entry["why"] = "no pre-grad graph to map to"
            else:
                pre = _pre_grad_names(origin, pre_grad_id)
                if len(pre) != 1:
                    entry["why"] = (f"{origin.name} comes from {len(pre)} graph nodes"
                                    + (f" ({', '.join(pre[:4])})" if pre else ""))
                elif not _holds_value_of(origin, pre[0], pre_grad_id):
                    entry["why"] = f"an internal value of {pre[0]} ({origin.name}); no graph node holds it"
                else:
                    entry["nodes"] = pre
            buffers[name] = entry
        # Buffers written in place by another op (a oneDNN binary post-op
        # convolution writes its result into its `other` operand): the
        # MutationOutput names the buffer it mutates and the op that writes.
        # In write order: the buffer's own value first, then each op's.
        writes = {}
        for name, buf in graph.name_to_buffer.items():
            if type(buf).__name__ != "MutationOutput":
                continue
            mutated = list(buf.get_mutation_names()) if hasattr(buf, "get_mutation_names") else []
            op = getattr(buf, "mutating_node", None)
            by = op.get_name() if op is not None and hasattr(op, "get_name") else None
            if len(mutated) != 1 or mutated[0] not in buffers or not by:
                continue
            nodes = []
            if pre_grad_id:
                for o in sorted(getattr(buf, "origins", None) or (), key=lambda n: n.name):
                    for pre_name in _pre_grad_names(o, pre_grad_id):
                        if pre_name not in nodes:
                            nodes.append(pre_name)
            writes.setdefault(mutated[0], []).append({"by": by, "nodes": nodes})
        for target, ws in writes.items():
            entry = buffers[target]
            origin = getattr(graph.name_to_buffer[target], "origin_node", None)
            own = getattr(graph.name_to_buffer[target], "origins", None) or ()
            # Mutated, its origin_node may be the last mutating node (not one
            # of its own origins): its own value is what its origins compute.
            if origin is not None and origin not in own and len(entry["computes"]) == 1:
                entry["nodes"] = list(entry["computes"])
                entry["why"] = None
            entry["writes"] = []
            for w in ws:
                first = len(entry["nodes"])
                entry["nodes"].extend(n for n in w["nodes"])
                entry["writes"].append({"by": w["by"], "first": first, "count": len(w["nodes"])})
        self._fold(graph, buffers, pre_grad_id)
        self._mutated_inputs(graph, buffers)
        self.buffers = buffers
        # In-place outputs whose store fusion removed: the kernel still takes
        # the buffer (in_out_ptr) but never writes its value there.
        self.stale = set(getattr(graph, "inplaced_to_remove", ()) or ())

    def _mutation_nodes(self, computes):
        """Of the exported nodes `computes`, those that update a tensor in place (x.index_put_, x.add_), or,
        in a functional program, whose value is written back into an input (graph_signature's
        user_inputs_to_mutate), in graph order."""
        if self.ep is None:
            return []
        written_back = set()
        try:
            written_back = set(self.ep.graph_signature.user_inputs_to_mutate)
        except Exception:
            pass
        out = []
        for n in self.ep.graph.nodes:
            if n.name not in computes or n.op != "call_function":
                continue
            op = getattr(n.target, "__name__", str(n.target)).split(".")[0]
            if (op.endswith("_") and not op.endswith("__")) or n.name in written_back:
                out.append(n.name)
        return out

    def _input_placeholder(self, graph, name):
        """The exported program's placeholder for Inductor's graph input `name` (arg3_1): the user inputs are
        the last graph inputs, in order; None where shapes disagree or it is not one of them."""
        if self.ep is None:
            return None
        try:
            user = list(self.ep.graph_signature.user_inputs)
            names = list(graph.graph_input_names)
        except Exception:
            return None
        tail = names[-len(user):] if user else []
        if name not in tail:
            return None
        placeholder = user[tail.index(name)]
        node = next((n for n in self.ep.graph.nodes if n.op == "placeholder" and n.name == placeholder), None)
        val = node.meta.get("val") if node is not None else None
        ours = graph.graph_inputs.get(name)
        try:
            if val is None or ours is None or len(val.shape) != len(ours.get_size()):
                return None
        except Exception:
            return None
        return placeholder

    def _mutated_inputs(self, graph, buffers):
        """A graph input updated in place (x.index_put_, x.add_): the buffers writing it are named for
        the input in the generated code, and none is passed under its own name. The input gets an entry:
        the writes' nodes in order (its value after each), all they compute, and the buffers writing it."""
        writers = {}
        for name, buf in graph.name_to_buffer.items():
            try:
                targets = list(buf.get_mutation_names()) if hasattr(buf, "get_mutation_names") else []
            except Exception:
                targets = []
            for t in targets:
                if t not in buffers and t != name:
                    writers.setdefault(t, []).append(name)
        for target, names in writers.items():
            nodes, computes = [], []
            for b in names:
                for n in buffers[b]["nodes"]:
                    if n not in nodes:
                        nodes.append(n)
                for n in buffers[b]["computes"]:
                    if n not in computes:
                        computes.append(n)
            if not nodes:
                nodes = self._mutation_nodes(computes)
            # Before the first write it holds the input as given: that placeholder's value comes first.
            own = self._input_placeholder(graph, target)
            if own and nodes:
                nodes = [own] + [n for n in nodes if n != own]
            buffers[target] = {"nodes": nodes, "origin": None, "computes": computes, "mutated_by": names,
                               "why": None if nodes else "an input updated in place by code no single node maps to"}

    def _fold(self, graph, buffers, pre_grad_id):
        """Freezing folds nodes into constants (a batch norm into the convolution's weights): no generated
        code computes them, and the buffer of the node before them holds the last one's value. A buffer
        mapped to node N whose exported users run through such vanished nodes, one after another, holds
        the value of the last of them: it is mapped there, and computes them all."""
        if self.ep is None or not pre_grad_id:
            return
        present = set()
        post = set()
        for buf in graph.name_to_buffer.values():
            origin = getattr(buf, "origin_node", None)
            if origin is not None and getattr(origin, "graph", None) is not None:
                post.add(origin.graph)
        for g in post:
            for n in g.nodes:
                present.update(_pre_grad_names(n, pre_grad_id))
        exported = {n.name: n for n in self.ep.graph.nodes}
        for entry in buffers.values():
            if len(entry["nodes"]) != 1 or entry["nodes"][0] not in exported:
                continue
            start = cur = exported[entry["nodes"][0]]
            # What freezing folds into weights: a batch norm, or an add/sub/mul/div by a constant, after a
            # convolution or a linear layer (torch/_inductor/fx_passes/binary_folding.py, and the conv-bn fold).
            if _op_name(start) not in FOLDS_INTO:
                continue
            chain = []
            while True:
                users = [u for u in cur.users if u.op != "output"]
                if (len(users) != 1 or len(cur.users) != 1 or users[0].op != "call_function"
                        or users[0].name in present or not _folds(users[0], cur)):
                    break
                cur = users[0]
                chain.append(cur.name)
            if chain:
                entry["nodes"] = [cur.name]
                entry["folded"] = chain
                entry["computes"] = list(entry.get("computes", [])) + [c for c in chain if c not in entry["computes"]]
                self.folded[start.name] = cur.name

    def result(self):
        buffers = {k: dict(v, nodes=list(v["nodes"])) for k, v in self.buffers.items()}
        # `b` written in place into `a`'s storage. A kernel may keep the name
        # `a` (b then never appears): after it, `a` holds b's value (its own
        # node stays first). When fusion removed b's store, the storage keeps
        # a's value under the name b.
        for a, b in self.inplace:
            if a not in buffers or b not in buffers:
                continue
            if b in self.stale:
                buffers[b]["nodes"] = list(self.buffers[a]["nodes"])
                buffers[b]["why"] = None if buffers[b]["nodes"] else (
                    f"fusion removed the store of its value; it keeps {a}'s, which holds no graph node's value")
                continue
            for node in self.buffers[b]["nodes"]:
                if node not in buffers[a]["nodes"]:
                    buffers[a]["nodes"].append(node)
            if buffers[a]["nodes"]:
                buffers[a]["why"] = None
        paired = {b for _, b in self.inplace}
        for b in self.stale:
            if b in buffers and b not in paired:
                buffers[b]["nodes"] = []
                buffers[b]["why"] = "fusion removed the store of its value; its storage holds another value"
        return {"format": 1, "buffers": buffers, "notes": self.notes}


def source_location(node, torch_dir):
    """{file, line, function, code} of the model's own frame in the exported
    node's stack trace (the innermost frame outside torch), or None."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', trace)
    if not frames:
        return None
    own = [f for f in frames if not os.path.abspath(f[0]).startswith(torch_dir + os.sep)]
    path, line, func, code = (own or frames)[-1]
    return {"file": os.path.basename(path), "line": int(line), "function": func, "code": code.strip()[:200]}


def run_node_values(torch, ep, inputs_path, map_path, values_path, info_path, device=None):
    import torch.fx
    import torch.utils._pytree as pytree

    with open(map_path, encoding="utf-8") as f:
        node_map = json.load(f)
    wanted = set()
    described = set()
    for entry in node_map.get("buffers", {}).values():
        wanted.update(entry.get("nodes", []))
        described.update(entry.get("computes", []))
    described |= wanted
    args, kwargs = bind_inputs(torch, torch.load(inputs_path, weights_only=True), ep.call_spec.in_spec)
    ep, args, kwargs = on_device(torch, ep, args, kwargs, device)
    gm = ep.module()
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            if n.name in wanted and isinstance(result, torch.Tensor):
                values[n.name] = result.detach().cpu().clone().contiguous()
            return result

    with torch.no_grad():
        flat_args = pytree.tree_leaves((args, kwargs))
        Recorder(gm).run(*flat_args)

    out = {}
    for buf, entry in node_map.get("buffers", {}).items():
        tensors = [values[n] for n in entry.get("nodes", []) if n in values]
        if tensors and len(tensors) == len(entry.get("nodes", [])):
            out[buf] = tensors
    info = {"nodes": {}}
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    exported_nodes = {n.name: n for n in ep.graph.nodes}
    order = {}
    for n in gm.graph.nodes:
        order[n.name] = len(order)
        if n.name not in described:
            continue
        src = exported_nodes.get(n.name, n)
        val = values.get(n.name)
        info["nodes"][n.name] = {
            "op": str(src.target) if src.op == "call_function" else src.op,
            "source": source_location(src, torch_dir) or source_location(n, torch_dir),
            "shape": list(val.shape) if val is not None else None,
            "dtype": str(val.dtype).replace("torch.", "") if val is not None else None,
            "order": order[n.name],
        }
    tmp = f"{values_path}.tmp-{os.getpid()}"
    torch.save(out, tmp)
    os.replace(tmp, values_path)
    write_json_atomic(info_path, info)


def load_step(torch, args):
    try:
        return load_exported_program(torch, args.exported_program, args.model_name)
    except StepError:
        raise
    except Refused as e:
        raise StepError("unsafe", str(e)) from e
    except Exception as e:
        raise StepError("load", first_useful_line(e)) from e


def run(args):
    result = {"ok": False, "seconds": 0.0, "error": None, "error_kind": None}
    start = time.monotonic()
    try:
        import torch
        import torch._inductor
        import torch.export
    except Exception as e:  # ImportError, or a broken install
        traceback.print_exc()
        result.update(error=first_useful_line(e), error_kind="no_torch")
        result["seconds"] = round(time.monotonic() - start, 3)
        write_json_atomic(args.result, result)
        return EXIT_NO_TORCH
    result["torch_version"] = torch.__version__

    try:
        for library in args.load_library:
            try:
                torch.ops.load_library(library)
            except Exception as e:
                raise StepError("load", f"library '{library}' cannot be loaded: {first_useful_line(e)}") from e
        if args.eager_inputs:
            ep = load_step(torch, args)
            try:
                if args.eager_out:
                    run_eager(torch, ep, args.eager_inputs, args.eager_out, args.eager_device)
                if args.node_values:
                    run_node_values(torch, ep, args.eager_inputs, args.node_map, args.node_values, args.node_info,
                                    args.eager_device)
            except Exception as e:
                raise StepError("eager", first_useful_line(e)) from e
        else:
            with open(args.configs, encoding="utf-8") as f:
                user_configs = json.load(f)
            if not isinstance(user_configs, dict):
                raise StepError("load", f"--configs '{args.configs}' must hold a JSON object")
            kernel_filter = [k.strip() for k in args.filter.split(",") if k.strip()]
            configs = inductor_configs(user_configs, args.level, kernel_filter)
            ep = load_step(torch, args)
            try:
                compile_package(torch, ep, configs, args.out, args.node_map, no_grad=args.no_grad)
            except Exception as e:
                raise StepError("compile", first_useful_line(e)) from e
    except StepError as e:
        traceback.print_exc()
        result.update(error=e.line, error_kind=e.kind)
        result["seconds"] = round(time.monotonic() - start, 3)
        write_json_atomic(args.result, result)
        return EXIT_FAILED

    result.update(ok=True)
    result["seconds"] = round(time.monotonic() - start, 3)
    write_json_atomic(args.result, result)
    return EXIT_OK


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
