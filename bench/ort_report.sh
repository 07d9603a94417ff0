#!/usr/bin/env bash
# Measured latency: every built-in model and every real export the project tests with (corpus/models/torch),
# original and optimized, timed side by side in onnxruntime on this machine's CPU (bench/ort_latency.py:
# one thread, interleaved runs, medians per pass, ORT_ENABLE_ALL and ORT_DISABLE_ALL), beside the speedup
# the cost model predicted. Prints a Markdown table (docs/benchmarks.md, "Measured in onnxruntime").
#
# Usage: bench/ort_report.sh [--cost SPEC] [--runs N] [--passes N] [MODEL ...]
#   --cost SPEC   eqsat-run's cost model (default analytical:cpu-ort, the profile fitted to this runtime by
#                 bench/fit_cpu_profile.py)
#   MODEL         built-in names and/or .onnx files (default: all built-ins and corpus/models/torch/*.onnx)
# Needs build/bin/eqsat-run (tools/build.sh) and .venv (tools/setup-python.sh). Work files in $TEQ_WORK
# (default a temporary folder).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cost=analytical:cpu-ort
runs=15
passes=3
models=()
while (($#)); do
  case $1 in
    --cost) cost=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "ort_report: error: unknown option $1" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
eqsat="$root/build/bin/eqsat-run"
python="$root/.venv/bin/python"
[[ -x $eqsat ]] || { echo "ort_report: error: $eqsat missing; run tools/build.sh" >&2; exit 2; }
[[ -x $python ]] || { echo "ort_report: error: $python missing; run tools/setup-python.sh" >&2; exit 2; }
if ((${#models[@]} == 0)); then
  mapfile -t models < <("$eqsat" --list-models)
  models+=("$root"/corpus/models/torch/*.onnx)
fi
work=${TEQ_WORK:-$(mktemp -d)}
mkdir -p "$work"
echo "| model | cost model | predicted speedup | kept original | ORT_ENABLE_ALL optimized/original (passes) | ORT_DISABLE_ALL optimized/original (passes) |"
echo "|---|---|---:|---|---|---|"
status=0
for m in "${models[@]}"; do
  name=$(basename "$m" .onnx)
  orig="$work/$name.orig.onnx"
  opt="$work/$name.opt.onnx"
  if [[ $m == *.onnx ]]; then
    src=("$m")
    # PyTorch exports made with export_params=False: the same seeded weights for both (ort_latency.py).
    cp "$m" "$orig"
  else
    src=(--model "$m")
    "$eqsat" "${src[@]}" --export "$orig" 2>/dev/null
  fi
  if ! "$eqsat" "${src[@]}" --cost "$cost" -o "$opt" --report "$work/$name.json" >"$work/$name.log" 2>&1; then
    echo "| $name | $cost | eqsat-run failed: $(tail -1 "$work/$name.log") | | | |"
    status=1
    continue
  fi
  predicted=$("$python" -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['speedup']:.3f}x\", 'yes' if r.get('kept_original') else 'no')" "$work/$name.json")
  if ! "$python" "$root/bench/ort_latency.py" "$orig" "$opt" --runs "$runs" --passes "$passes" --json "$work/$name.ort.json" >"$work/$name.ort.log" 2>&1; then
    echo "| $name | $cost | ${predicted% *} | ${predicted#* } | ort_latency failed: $(tail -1 "$work/$name.ort.log") | |"
    status=1
    continue
  fi
  "$python" - "$work/$name.ort.json" "$name" "$cost" "$predicted" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
name, cost, predicted = sys.argv[2], sys.argv[3], sys.argv[4].split()
def cell(level):
    l = r["levels"][level]
    return f"**{l['median_ratio']:.3f}** ({', '.join(f'{x:.3f}' for x in l['ratios'])})"
print(f"| {name} | {cost} | {predicted[0]} | {predicted[1]} | {cell('all')} | {cell('disable')} |")
EOF
done
echo
echo "Ratios below 1 are faster. onnxruntime $("$python" -c 'import onnxruntime; print(onnxruntime.__version__)'), CPU execution provider, 1 thread, $runs runs per model per pass, $passes interleaved passes; work files in $work."
exit $status
