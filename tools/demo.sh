#!/usr/bin/env bash
# The main job: installs what is missing, builds, and optimizes a bundled model with eqsat-run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
model=${1:-$root/corpus/models/inception_block.onnx}
if [[ ! -x "$root/build/bin/eqsat-run" ]]; then
  echo "demo: eqsat-run is not built yet in this version of the project" >&2
  exit 1
fi
mkdir -p "$root/out"
"$root/build/bin/eqsat-run" "$model" -o "$root/out/optimized.onnx" \
  --rules "$root/corpus/seed.json" --report "$root/out/report.json" --check
echo "demo: wrote out/optimized.onnx and out/report.json"
