#!/usr/bin/env bash
# Creates the Python virtual environment .venv (gitignored) with the packages the ONNX tests and the
# model generator need: onnx, onnxruntime, numpy from PyPI, and Ray (pinned: $ray_pin below), which the
# distributed rulegen (tools/rulegen_ray.py, docs/rulegen.md "Distributed") and its test need. Idempotent: when
# .venv already has them it does nothing. A failed Ray install is a warning, not an error: the distributed
# rulegen's test then skips and says why (tests/programs/rulegen_ray.cmake).
# Usage: tools/setup-python.sh [--with-torch] [--with-peers] [PYTHON]   (default: python3)
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

# Ray 2.60.0 has wheels for CPython 3.10-3.13 on Linux x86_64/aarch64 and macOS; the pin keeps the
# distributed rulegen's behaviour (retries, resources) one version's.
ray_pin=2.60.0
has_ray() { "$venv/bin/python" -c "import ray, sys; sys.exit(ray.__version__ != '$ray_pin')" 2>/dev/null; }
install_ray() {
  if has_ray; then return 0; fi
  echo "setup-python: installing ray==$ray_pin"
  if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "ray==$ray_pin"; then
    echo "setup-python: warning: pip install ray==$ray_pin failed; the distributed rulegen's test will skip" >&2
  fi
}

if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import $imports" 2>/dev/null; then
  install_ray
  echo "setup-python: $venv has ${packages[*]}$(has_ray && echo " ray==$ray_pin")"
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
install_ray
if ((with_torch)); then
  "$venv/bin/python" -c "import torch, transformers, onnxscript; print('setup-python: torch', torch.__version__, '| transformers', transformers.__version__, '| onnxscript', onnxscript.__version__)"
fi
