# Sourced (not run) by the other scripts: which torch they build and test with.
#
# AOTI_BISECT_TORCH_VERSION unset, or the version python3 already has: python3
#   on PATH, build/ (or $AOTI_BISECT_BUILD_DIR) and the shared examples cache,
#   as ever.
# Set to another version V: a virtual environment
#   ~/.cache/aoti-bisect/venv-V holds torch==V from pip (scripts/install-deps
#   creates it); its bin/ goes first on PATH and AOTI_BISECT_PYTHON names its
#   python, so every python3 (the example builder, the instrumented-build
#   helper, the end-to-end tests) has the torch the runner's LibTorch comes
#   from. Builds go to build-torch-V and the examples to
#   ~/.cache/aoti-bisect/examples-torch-V (unless AOTI_BISECT_BUILD_DIR or
#   AOTI_BISECT_EXAMPLES_DIR say otherwise).
#
# Sets aoti_torch_venv (the venv folder, "" when python3 is used) and
# aoti_base_python (python3 as found before the venv went on PATH). Sourcing it
# again (a script calling another) changes nothing.

aoti_cache="${XDG_CACHE_HOME:-$HOME/.cache}/aoti-bisect"
aoti_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The installed torch's version without importing it ("2.13.0+cpu" -> "2.13.0").
aoti_python_torch_version() {
  "$1" -c 'import importlib.metadata as m; print(m.version("torch").split("+")[0])' 2>/dev/null || true
}

aoti_torch_venv=""
aoti_base_python="$(command -v python3 || echo python3)"
if [ -z "${AOTI_BISECT_TORCH_VERSION:-}" ]; then
  :  # as ever: nothing to set
elif [ "${AOTI_BISECT_TORCH_ENV:-}" = "$AOTI_BISECT_TORCH_VERSION" ]; then
  aoti_torch_venv="${AOTI_BISECT_TORCH_VENV:-}"
  aoti_base_python="${AOTI_BISECT_BASE_PYTHON:-$aoti_base_python}"
  # Wrappers such as pyenv's shims (ctest, cmake) put their own python first
  # on PATH again: the venv's goes back in front.
  if [ -n "$aoti_torch_venv" ] && [ "${PATH%%:*}" != "$aoti_torch_venv/bin" ]; then
    export PATH="$aoti_torch_venv/bin:$PATH"
  fi
else
  if [ "$(aoti_python_torch_version "$aoti_base_python")" != "${AOTI_BISECT_TORCH_VERSION%%+*}" ]; then
    aoti_torch_venv="$aoti_cache/venv-$AOTI_BISECT_TORCH_VERSION"
    export PATH="$aoti_torch_venv/bin:$PATH"
    export AOTI_BISECT_PYTHON="$aoti_torch_venv/bin/python3"
    export AOTI_BISECT_BUILD_DIR="${AOTI_BISECT_BUILD_DIR:-$aoti_root/build-torch-$AOTI_BISECT_TORCH_VERSION}"
    export AOTI_BISECT_EXAMPLES_DIR="${AOTI_BISECT_EXAMPLES_DIR:-$aoti_cache/examples-torch-$AOTI_BISECT_TORCH_VERSION}"
  fi
  export AOTI_BISECT_TORCH_ENV="$AOTI_BISECT_TORCH_VERSION"
  export AOTI_BISECT_TORCH_VENV="$aoti_torch_venv"
  export AOTI_BISECT_BASE_PYTHON="$aoti_base_python"
fi
