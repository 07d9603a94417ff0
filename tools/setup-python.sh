#!/usr/bin/env bash
# Creates the Python virtual environment .venv (gitignored) with the packages the ONNX tests and the
# model generator need: onnx, onnxruntime, numpy from PyPI. Idempotent: when .venv already has them it
# does nothing. Usage: tools/setup-python.sh [PYTHON]   (default: python3)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
python=${1:-python3}
packages=(numpy onnx onnxruntime)

if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import numpy, onnx, onnxruntime" 2>/dev/null; then
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
