#!/usr/bin/env python3
"""ctest svg_render: report.svg of a real run, rendered by a real headless
browser (Debian's chromium).

Runs `aoti-bisect run` on the nan_midway example (the package alone), checks
report.svg (well-formed, one cell per call site of report.json, the culprit's
cell marked) and report.md's link to it, screenshots it with chromium, and
decodes the PNG: not blank, the culprit mark's colour inside the culprit
cell's outline and nowhere near another cell, the culprit cell's kind colour
at its centre.

    tests/svg_render.py AOTI_BISECT AOTI_BISECT_RUNNER EXAMPLES_DIR

Exit 77 (skipped) only when no chromium is installed and neither CI nor
AOTI_BISECT_REQUIRE_CHROMIUM is set (scripts/test sets it: there it fails).
Standard library only.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SVG_NS = "{http://www.w3.org/2000/svg}"
CULPRIT_COLOUR = (0xFF, 0x00, 0xFF)  # k_svg_culprit_colour (lib/report/sink_svg.hpp)
KIND_COLOURS = {"cpp": (0x4E, 0x79, 0xA7), "triton": (0xF2, 0x8E, 0x2B), "extern": (0xB0, 0x7A, 0xA1)}


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB/RGBA PNG."""
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            check(depth == 8 and colour in (2, 6) and interlace == 0,
                  f"unexpected PNG format: depth {depth}, colour type {colour}, interlace {interlace}")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def near(pixel, colour, tol=40):
    return all(abs(p - c) <= tol for p, c in zip(pixel, colour))


def count_in(rows, box, colour, tol=40):
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    n = 0
    for y in range(max(y0, 0), min(y1, len(rows))):
        for x in range(max(x0, 0), min(x1, len(rows[0]))):
            n += near(rows[y][x], colour, tol)
    return n


def box_of(elem, pad=0.0):
    x, y = float(elem.get("x")), float(elem.get("y"))
    w, h = float(elem.get("width")), float(elem.get("height"))
    return (x - pad, y - pad, x + w + pad, y + h + pad)


def run_bisect(tool, runner, examples, work):
    out = os.path.join(work, "out")
    cmd = [tool, "run", os.path.join(examples, "nan_midway.pt2"), "--inputs",
           os.path.join(examples, "nan_midway.inputs.pt"), "--repeats", "1",
           "--cache-dir", os.path.join(work, "build-cache"), "--out", out]
    env = dict(os.environ, AOTI_BISECT_RUNNER=runner,
               TORCHINDUCTOR_CACHE_DIR=os.path.expanduser("~/.cache/aoti-bisect/inductor-tests"))
    proc = subprocess.run(cmd, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=900)
    check(proc.returncode == 1, f"aoti-bisect run exited {proc.returncode}, not 1 (isolated): {proc.stderr[-2000:]}")
    return out


def check_svg(out):
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    culprit = report["culprit"]
    check(report["verdict"] == "isolated" and culprit, f"verdict {report['verdict']}, culprit {culprit}")
    sites = report["bisection"]["sites"]
    check(len(sites) >= 3, f"bisection.sites has {len(sites)} entries")
    check([s["index"] for s in sites] == list(range(1, len(sites) + 1)), "bisection.sites not 1..N in order")
    k = culprit["call_index"]
    check(sites[k - 1]["kernel"] == culprit["kernel"], f"site {k} is {sites[k - 1]}, culprit {culprit['kernel']}")
    with open(os.path.join(out, "report.md")) as f:
        check("](report.svg)" in f.read(), "report.md does not link report.svg")
    svg_path = os.path.join(out, "report.svg")
    root = ET.parse(svg_path).getroot()  # well-formed, or this raises
    check(root.tag == SVG_NS + "svg", f"root element {root.tag}")
    by_id = {e.get("id"): e for e in root.iter() if e.get("id")}
    cells = [i for i in by_id if i.startswith("site-")]
    check(len(cells) == len(sites), f"{len(cells)} cells for {len(sites)} call sites")
    mark = by_id.get("culprit")
    check(mark is not None, "no culprit mark")
    outline = mark.find(SVG_NS + "rect")
    culprit_cell = by_id[f"site-{k}"]
    other_cell = by_id[f"site-{1 if k > 1 else 2}"]
    return (svg_path, float(root.get("width")), float(root.get("height")), box_of(outline),
            box_of(culprit_cell), box_of(other_cell), KIND_COLOURS[culprit["kind"]])


def screenshot(chromium, svg_path, width, height, work):
    png = os.path.join(work, "report.png")
    w, h = int(width) + 40, int(height) + 40
    # The new headless mode (the only one left in Chromium 132 and later);
    # --no-sandbox: the tests may run as root.
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--force-device-scale-factor=1", f"--user-data-dir={os.path.join(work, 'profile')}",
           f"--window-size={w},{h}", f"--screenshot={png}", "file://" + os.path.abspath(svg_path)]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    check(proc.returncode == 0 and os.path.exists(png),
          f"chromium exited {proc.returncode} without a screenshot: {proc.stderr[-2000:]}")
    with open(png, "rb") as f:
        return decode_png(f.read())


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    tool, runner, examples = sys.argv[1:]
    chromium = find_chromium()
    if not chromium:
        if os.environ.get("CI") or os.environ.get("AOTI_BISECT_REQUIRE_CHROMIUM"):
            print("FAIL: no chromium on PATH (scripts/install-deps installs it)")
            return 1
        print("skipped: no chromium on PATH (scripts/install-deps installs it; apt-get install chromium)")
        return 77
    work = tempfile.mkdtemp(prefix="aoti-bisect-svg-render-")
    try:
        out = run_bisect(tool, runner, examples, work)
        svg_path, width, height, outline, cell, other, kind_colour = check_svg(out)
        png_w, png_h, rows = screenshot(chromium, svg_path, width, height, work)
        check(png_w >= width and png_h >= height, f"screenshot {png_w}x{png_h} smaller than the SVG")
        # Not blank: many colours, a fair share of non-white pixels.
        inside = [rows[y][x] for y in range(int(height)) for x in range(int(width))]
        colours = set(inside)
        ink = sum(p != (255, 255, 255) for p in inside)
        check(len(colours) >= 8, f"the screenshot has {len(colours)} colours: blank?")
        check(ink > 0.01 * len(inside), f"only {ink} of {len(inside)} pixels are not white")
        # The mark: the culprit colour on the outline around the culprit's
        # cell, none on another cell; the cell itself in its kind's colour.
        marked = count_in(rows, (outline[0] - 2, outline[1] - 2, outline[2] + 2, outline[3] + 2), CULPRIT_COLOUR)
        check(marked >= 20, f"{marked} pixels of the culprit colour around the culprit's cell {outline}")
        stray = count_in(rows, other, CULPRIT_COLOUR)
        check(stray == 0, f"{stray} pixels of the culprit colour on another cell {other}")
        cx, cy = int((cell[0] + cell[2]) / 2), int((cell[1] + cell[3]) / 2)
        check(near(rows[cy][cx], kind_colour, 12), f"culprit cell centre ({cx}, {cy}) is {rows[cy][cx]}, "
              f"not its kind's colour {kind_colour}")
        print(f"ok: {svg_path} rendered {png_w}x{png_h} by {chromium}; {marked} culprit-mark pixels at {outline}")
        shutil.rmtree(work, ignore_errors=True)
        return 0
    except (Failed, subprocess.TimeoutExpired, ET.ParseError, OSError, KeyError, ValueError) as e:
        print(f"FAIL: {e} (files kept in {work})")
        return 1


if __name__ == "__main__":
    sys.exit(main())
