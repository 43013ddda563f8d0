#!/usr/bin/env bash
# ctest device_check_dry: scripts/device-check --dry-run --no-build with this
# build's binaries (the bundle unpacked, the runner's --versions, the example
# script's --check, the summary with the device runs skipped), and its one-line
# refusals. Skipped (77) without a bundle (scripts/device-bundle).
#
#   tests/device_check_dry.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src="$1" build="$2"
[ -f "$src/.device-bundle/MANIFEST" ] || { echo "no .device-bundle (run scripts/device-bundle): skipped"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# No bundle: exit 1, one line.
AOTI_BISECT_BUILD_DIR="$build" "$src/scripts/device-check" "$work/none" --bundle "$work/no-bundle" --dry-run \
  >"$work/none.out" 2>"$work/none.err"
rc=$?
[ $rc = 1 ] || fail "without a bundle: exit $rc, not 1"
[ "$(wc -l <"$work/none.err")" = 1 ] && grep -q "error: no device bundle in" "$work/none.err" ||
  fail "without a bundle: $(cat "$work/none.err")"

# Not a dry run, on a machine without a device: exit 1, one line.
if ! python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  AOTI_BISECT_BUILD_DIR="$build" "$src/scripts/device-check" "$work/nodev" >"$work/nodev.out" 2>"$work/nodev.err"
  rc=$?
  [ $rc = 1 ] || fail "without a device: exit $rc, not 1"
  [ "$(wc -l <"$work/nodev.err")" = 1 ] && grep -qE "error: (no nvcc|torch .* sees no CUDA device)" "$work/nodev.err" ||
    fail "without a device: $(cat "$work/nodev.err")"
fi

# The dry run itself.
AOTI_BISECT_BUILD_DIR="$build" "$src/scripts/device-check" "$work/dry" --dry-run --no-build --deadline 300 \
  >"$work/dry.out" 2>&1
rc=$?
cat "$work/dry.out"
[ $rc = 0 ] || fail "dry run: exit $rc"
[ -f "$work/dry/summary.md" ] || fail "no summary.md"
python3 - "$work/dry/summary.json" <<'PY' || exit 1
import json, sys
s = json.load(open(sys.argv[1]))
problems = []
if s["mode"] != "dry-run" or not s["finished"]:
    problems.append(f"mode {s['mode']}, finished {s['finished']}")
steps = {x["step"]: x["status"] for x in s["steps_other"]}
for step in ("bundle", "smoke", "plan", "examples"):
    if steps.get(step) != "ok":
        problems.append(f"step {step}: {steps.get(step)}")
# The CUDA variants it would run, each with when it runs and its tool.
plan = next((x.get("note") or "" for x in s["steps_other"] if x["step"] == "plan"), "")
for expected in ("check_inputs (every job)", "coredump (after a fault", "initcheck (after a failure",
                 "memcheck (after a fault"):
    if expected not in plan:
        problems.append(f"plan lacks {expected!r}: {plan}")
entries = s["entries"]
if len(entries) != 20 or any(e["status"] != "skipped" for e in entries):
    problems.append(f"{len(entries)} run entries: {[(e['example'], e['source'], e['status']) for e in entries]}")
if {e["source"] for e in entries} != {"package", "interpose", "rewrite", "exported_program"}:
    problems.append("sources: " + str({e["source"] for e in entries}))
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY
echo "device-check --dry-run: ok"
