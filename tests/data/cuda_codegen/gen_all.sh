#!/bin/bash
# Regenerates the torch 2.11 (or 2.15) AOTI CUDA packages behind
# tests/data/cuda211_* (cuda215_*) on a machine without a GPU (README.md here).
#   PYTHON=VENV/bin/python gen_all.sh OUT [NAMES]     plain packages
#   GEN_TORCH_VERSION=2.15.0 gen_all.sh OUT [NAMES]   ~/.cache/aoti-bisect/venv-2.15.0 (default 2.11.0)
#   GEN_CACHE=/tmp/torchinductor_cg_OUT GEN_EXTRA_CONFIGS='{"aot_inductor.debug_intermediate_value_printer": "1"}' \
#     PYTHON=... gen_all.sh OUT_L1 cuda_nan_triton,cuda_cond,cuda_fp16_overflow   (level 1, same cubin paths as OUT)
# Each OUT gets a fresh Inductor cache unless GEN_CACHE names one (a reused
# cache appends the Compile/Link cmd comments a second time).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(realpath -m "${1:?usage: gen_all.sh OUT [NAMES]}")"
python="${PYTHON:-$HOME/.cache/aoti-bisect/venv-${GEN_TORCH_VERSION:-2.11.0}/bin/python3}"
stub="$(mktemp -d)"
trap 'rm -rf "$stub"' EXIT
cc -shared -fPIC -o "$stub/libcuda.so" "$here/cuda_stub.c"   # only so that the link step succeeds
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" LIBRARY_PATH="$stub"
if [ -n "${GEN_CACHE:-}" ]; then
  export TORCHINDUCTOR_CACHE_DIR="$GEN_CACHE"
else
  export TORCHINDUCTOR_CACHE_DIR="/tmp/torchinductor_cg_$(basename "$out")"
  rm -rf "$TORCHINDUCTOR_CACHE_DIR"
fi
"$python" "$here/gen.py" "$out" "${2:-cuda_gather_oob,cuda_gather_assert,cuda_nan_triton,cuda_fp16_overflow,cuda_relu_accuracy,cuda_cond}"
