#!/usr/bin/env bash
# Creates the Python virtual environment .venv (gitignored) with the packages the ONNX tests and the
# model generator need: onnx, onnxruntime, numpy from PyPI. Idempotent: when .venv already has them it
# does nothing. Usage: tools/setup-python.sh [--with-torch] [--with-peers] [PYTHON]   (default: python3)
# --with-torch also installs torch, transformers and onnxscript, which only tools/make_hf_models.py needs (the
# tiny fixtures it makes are committed; CI does not install them).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
# --with-peers also installs onnxsim and onnxslim, which only bench/peers.py needs.
with_torch=0
with_peers=0
while [[ "${1:-}" == --with-* ]]; do
  case $1 in
    --with-torch) with_torch=1 ;;
    --with-peers) with_peers=1 ;;
    *) echo "setup-python: error: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
python=${1:-python3}
packages=(numpy onnx onnxruntime)
imports="numpy, onnx, onnxruntime"
if ((with_torch)); then
  packages+=(torch transformers onnxscript)
  imports+=", torch, transformers, onnxscript"
fi
if ((with_peers)); then
  packages+=(onnxsim onnxslim)
  imports+=", onnxsim, onnxslim"
fi

if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import $imports" 2>/dev/null; then
  echo "setup-python: $venv has ${packages[*]}"
  exit 0
fi

if ! command -v "$python" >/dev/null; then
  echo "setup-python: error: '$python' not found; pass a Python 3 interpreter as the first argument" >&2
  exit 1
fi
if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup-python: creating $venv with $("$python" --version 2>&1)"
  "$python" -m venv "$venv"
fi
echo "setup-python: installing ${packages[*]}"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}"; then
  echo "setup-python: error: pip install failed (is PyPI reachable?)" >&2
  exit 1
fi
"$venv/bin/python" -c "import numpy, onnx, onnxruntime; print('setup-python: numpy', numpy.__version__, '| onnx', onnx.__version__, '| onnxruntime', onnxruntime.__version__)"
if ((with_torch)); then
  "$venv/bin/python" -c "import torch, transformers, onnxscript; print('setup-python: torch', torch.__version__, '| transformers', transformers.__version__, '| onnxscript', onnxscript.__version__)"
fi
