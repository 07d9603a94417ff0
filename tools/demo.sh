#!/usr/bin/env bash
# The main job: installs what is missing, builds, and optimizes a bundled model with eqsat-run.
# Default model: corpus/models/encoder.onnx, the 2-layer PyTorch transformer encoder of corpus/models/torch/
# with seeded weights as initializers, optimized for onnxruntime on a CPU (--cost analytical:cpu-ort) and
# checked (--check). When the .venv of tools/setup-python.sh is there, both files are then timed side by side
# in onnxruntime (bench/ort_latency.py: interleaved runs, medians; docs/benchmarks-measured.md).
# Usage: tools/demo.sh [MODEL.onnx [eqsat-run options...]]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
model=${1:-$root/corpus/models/encoder.onnx}
shift || true
options=("$@")
((${#options[@]})) || options=(--cost analytical:cpu-ort)
if [[ ! -x "$root/build/bin/eqsat-run" ]]; then
  echo "demo: eqsat-run is not built yet in this version of the project" >&2
  exit 1
fi
mkdir -p "$root/out"
"$root/build/bin/eqsat-run" "$model" -o "$root/out/optimized.onnx" \
  --report "$root/out/report.json" --check "${options[@]}"
echo "demo: wrote out/optimized.onnx and out/report.json"
if [[ -x $root/.venv/bin/python ]]; then
  echo "demo: timing the original and the optimized model in onnxruntime (CPU, 1 thread, 3 interleaved passes; a ratio below 1 is faster)"
  "$root/.venv/bin/python" "$root/bench/ort_latency.py" "$model" "$root/out/optimized.onnx" --runs 30 --passes 3 \
    --levels all | tail -1
else
  echo "demo: run tools/setup-python.sh to time both files in onnxruntime as well"
fi
