#!/usr/bin/env bash
# The main job: installs what is missing (the Debian packages, and the project's .venv with onnxruntime),
# builds, optimizes a bundled model with eqsat-run and times both files in onnxruntime.
# Default model: corpus/models/encoder.onnx, the 2-layer PyTorch transformer encoder of corpus/models/torch/
# with seeded weights as initializers, optimized with no options: for the machine it runs on (`--target auto`:
# onnxruntime on this CPU without a GPU), checked numerically. Then both files are timed side by side in
# onnxruntime (bench/ort_latency.py: interleaved runs, medians; docs/benchmarks-measured.md), and the measured
# ratio is printed next to the cost model's prediction.
# Usage: tools/demo.sh [MODEL.onnx [eqsat-run options...]]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/setup-python.sh"
"$root/tools/build.sh"
model=${1:-$root/corpus/models/encoder.onnx}
shift || true
options=("$@")
mkdir -p "$root/out"
"$root/build/bin/eqsat-run" "$model" -o "$root/out/optimized.onnx" --report "$root/out/report.json" ${options[@]+"${options[@]}"}
echo "demo: wrote out/optimized.onnx and out/report.json"
predicted=$("$root/.venv/bin/python" -c 'import json, sys; r = json.load(open(sys.argv[1])); print("%.3f" % (1 / r["speedup"]) if r["written"] == "export" else "1 (the input was written unchanged)")' "$root/out/report.json")
echo "demo: timing the original and the optimized model in onnxruntime (CPU, 1 thread, 3 interleaved passes; a ratio below 1 is faster)"
"$root/.venv/bin/python" "$root/bench/ort_latency.py" "$model" "$root/out/optimized.onnx" --runs 30 --passes 3 \
  --levels all | tail -1
echo "demo: predicted ratio optimized/original by the cost model: $predicted"
