#!/usr/bin/env bash
# ctest pip_install: the pip path as a user takes it (README, "Install").
#
#   tests/pip_install.sh SOURCE_DIR EXAMPLES_DIR WORK_DIR
#
# 1. The wheel, as `pip install .` builds it, repaired by auditwheel
#    (scripts/wheel --cached: rebuilt only when the sources changed).
# 2. A fresh venv with only torch, the wheel installed into it; and the
#    wheel installed by pipx, in a venv of its own without torch.
# 3. In a mount namespace where every file of the build's -dev packages
#    (scripts/install-deps) and the system's libzip read as empty:
#    - the driver's libraries: libzip and what it needs from the wheel,
#      nothing from the system but libc, libm and libz;
#    - nan_midway to its culprit: exit 1, the culprit of its metadata, the
#      runner built on this first use against the venv's torch, into the
#      cache given, with progress; a runner that needs no zip or crypto
#      library and points at no aoti-bisect install;
#    - again: the runner found in the cache;
#    - pipx's install with --python naming the venv's Python;
#    - with the package's torch folder hidden and no torch on PATH's
#      python3: exit 4, one line that names --python.
# Skipped (77) only where no mount namespace can be made (unshare -m).
set -uo pipefail
root="$1"
examples="$2"
work="$3"
torch_version="${AOTI_BISECT_TORCH_VERSION:-2.13.0}"
say() { echo "pip_install: $*"; }
fail() {
  echo "pip_install: FAIL: $*"
  exit 1
}
if ! unshare -m true 2>/dev/null; then
  say "skipped: no mount namespace (unshare -m) to hide the -dev packages in"
  exit 77
fi
for f in nan_midway.pt2 nan_midway.inputs.pt nan_midway.json; do
  [ -f "$examples/$f" ] || fail "the example $examples/$f is missing (ctest examples_build makes it)"
done
rm -rf "$work"
mkdir -p "$work"

t=$SECONDS
wheel="$("$root/scripts/wheel" --cached --out "$work/dist" | tail -1)"
[ -f "$wheel" ] || fail "scripts/wheel gave no wheel"
say "wheel: $(basename "$wheel") ($((SECONDS - t)) s)"
case "$(basename "$wheel")" in
  *manylinux*) ;;
  *) fail "the wheel has no manylinux tag: $(basename "$wheel")" ;;
esac

t=$SECONDS
venv="$work/venv"
python3 -m venv "$venv" || fail "cannot make a venv"
"$venv/bin/pip" install -q "torch==$torch_version" || fail "cannot install torch $torch_version into $venv"
t_torch=$((SECONDS - t))
t=$SECONDS
"$venv/bin/pip" install -q "$wheel" || fail "cannot install $wheel into $venv"
say "fresh venv: torch $torch_version installed in $t_torch s, then the wheel in $((SECONDS - t)) s"
[ -x "$venv/bin/aoti-bisect" ] || fail "the wheel installed no aoti-bisect console script"
"$venv/bin/python" -c 'import cmake, ninja' || fail "the wheel's dependencies cmake and ninja are not installed"
capture_lib="$(find "$venv" -name libaoti-bisect-capture.so -path '*aoti_bisect/bin/*' | head -1)"
[ -n "$capture_lib" ] || fail "the wheel holds no bin/libaoti-bisect-capture.so beside the driver (capture preloads it)"

tools="${AOTI_BISECT_CACHE:-$HOME/.cache/aoti-bisect}/pip-tools"
"$tools/bin/python" -m pipx --version >/dev/null 2>&1 || "$tools/bin/pip" install -q pipx || fail "cannot install pipx"
t=$SECONDS
PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx/bin" "$tools/bin/python" -m pipx install -q "$wheel" >/dev/null ||
  fail "pipx install of the wheel failed"
say "pipx install: $((SECONDS - t)) s"

# The files to hide: every file of the build's -dev packages, and the
# system's libzip (which the wheel must carry).
deps="$(sed -n 's/^for p in \(.*\); do$/\1/p' "$root/scripts/install-deps" | head -1)"
[ -n "$deps" ] || fail "cannot read the -dev packages from scripts/install-deps"
hide="$work/hidden-files.txt"
: >"$hide"
for p in $deps $(dpkg -S "$(readlink -f /usr/lib/x86_64-linux-gnu/libzip.so.4 2>/dev/null || echo /nonexistent)" 2>/dev/null | cut -d: -f1); do
  dpkg -L "$p" 2>/dev/null | while read -r f; do
    if [ -f "$f" ] && [ ! -L "$f" ]; then echo "$f"; fi
  done >>"$hide"
done
[ -s "$hide" ] || fail "no files of the -dev packages found to hide"
say "hiding $(wc -l <"$hide") files of: $deps (and the system's libzip)"

package_torch="$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))' 2>/dev/null || true)"

cat >"$work/inner.sh" <<EOF
set -uo pipefail
fail() { echo "pip_install: FAIL: \$*"; exit 1; }
while read -r f; do mount --bind /dev/null "\$f" || fail "cannot hide \$f"; done <"$hide"
[ ! -s /usr/include/fmt/format.h ] && [ ! -s /usr/include/nlohmann/json.hpp ] || fail "the -dev headers are not hidden"

driver="\$(ls "$venv"/lib/python3*/site-packages/aoti_bisect/bin/aoti-bisect)"
ldd "\$driver" >"$work/ldd.txt" 2>&1
cat "$work/ldd.txt"
grep -q "not found" "$work/ldd.txt" && fail "the driver misses a library"
grep -q "aoti_bisect.libs/libzip" "$work/ldd.txt" || fail "libzip does not come from the wheel"
system="\$(grep '=>' "$work/ldd.txt" | grep -v aoti_bisect.libs | awk '{print \$1}' | sed 's/\.so.*//' | sort -u | tr '\n' ' ')"
[ "\$system" = "libc libm libz " ] || fail "the driver takes from the system: \$system(expected libc libm libz)"

cd "$work"
run() {  # NAME ARGS...: one job, its console kept in NAME.txt, its time in NAME.seconds
  local name="\$1"; shift
  local t0=\$EPOCHREALTIME
  "\$@" >"$work/\$name.txt" 2>&1
  local rc=\$?
  awk -v a="\$t0" -v b="\$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }' >"$work/\$name.seconds"
  return \$rc
}
culprit="\$("$venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["culprit"]["kernel"])' "$examples/nan_midway.json")"
check_report() {  # DIR
  "$venv/bin/python" - "\$1/report.json" "\$culprit" <<'PY' || fail "report \$1/report.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "isolated", r["verdict"]
assert r["culprit"]["kernel"] == sys.argv[2], (r["culprit"]["kernel"], sys.argv[2])
PY
}

run first "$venv/bin/aoti-bisect" run "$examples/nan_midway.pt2" --inputs "$examples/nan_midway.inputs.pt" \
  --out "$work/out-first" --cache-dir "$work/cache"
rc=\$?
cat "$work/first.txt"
[ \$rc = 1 ] || fail "the first run exited \$rc, not 1 (isolated)"
check_report "$work/out-first"
grep -q "building a runner against torch $torch_version" "$work/first.txt" || fail "no line saying the runner is built"
grep -q "it is kept in .*cache/runners/" "$work/first.txt" || fail "the runner is not kept in the cache given"
grep -q "runner build: step [0-9]*/[0-9]* after" "$work/first.txt" || fail "no progress while the runner builds"
grep -q "runner: against torch $torch_version[^ ]* (the torch of the Python aoti-bisect is installed in (.*venv/bin/python3*)), built in [0-9]* s" "$work/first.txt" ||
  fail "the runner line does not say it was built against the venv's torch"
runner="\$(ls "$work"/cache/runners/*/aoti-bisect-runner)"
readelf -d "\$runner" >"$work/runner-dynamic.txt"
grep -E "NEEDED.*(libzip|libcrypto|libssl)" "$work/runner-dynamic.txt" && fail "the runner needs a zip or crypto library"
grep -E "R(UN)?PATH" "$work/runner-dynamic.txt" | grep -q "aoti_bisect" && fail "the runner points at the aoti-bisect install"

run later "$venv/bin/aoti-bisect" run "$examples/nan_midway.pt2" --inputs "$examples/nan_midway.inputs.pt" \
  --out "$work/out-later" --cache-dir "$work/cache"
rc=\$?
[ \$rc = 1 ] || { cat "$work/later.txt"; fail "the later run exited \$rc, not 1"; }
check_report "$work/out-later"
grep -q "runner: against torch $torch_version[^ ]* (.*), found in the cache" "$work/later.txt" ||
  { cat "$work/later.txt"; fail "the later run did not find the runner in the cache"; }

run pipx "$work/pipx/bin/aoti-bisect" run "$examples/nan_midway.pt2" --inputs "$examples/nan_midway.inputs.pt" \
  --out "$work/out-pipx" --cache-dir "$work/cache" --python "$venv/bin/python"
rc=\$?
[ \$rc = 1 ] || { cat "$work/pipx.txt"; fail "pipx's aoti-bisect with --python exited \$rc, not 1"; }
check_report "$work/out-pipx"
grep -q "runner: against torch $torch_version[^ ]* (the torch of the Python given (--python or AOTI_BISECT_PYTHON)), found in the cache" "$work/pipx.txt" ||
  { cat "$work/pipx.txt"; fail "pipx's run did not take --python's torch"; }

if [ -n "$package_torch" ] && [ -d "$package_torch" ]; then
  mount -t tmpfs none "$package_torch" || fail "cannot hide $package_torch"
fi
run notorch env PATH="$work/pipx/venvs/aoti-bisect/bin:/usr/bin:/bin" "$work/pipx/bin/aoti-bisect" run \
  "$examples/nan_midway.pt2" --inputs "$examples/nan_midway.inputs.pt" --out "$work/out-notorch" --cache-dir "$work/cache"
rc=\$?
cat "$work/notorch.txt"
[ \$rc = 4 ] || fail "with no torch anywhere the run exited \$rc, not 4"
grep -q "no torch found to run the package (.*); give --python PATH" "$work/notorch.txt" || fail "the no-torch line does not name --python"
exit 0
EOF

unshare -m bash "$work/inner.sh"
rc=$?
[ $rc = 0 ] || exit $rc
say "first run (runner build): $(cat "$work/first.seconds") s; later run: $(cat "$work/later.seconds") s; pipx run: $(cat "$work/pipx.seconds") s"
say "ok"
