#!/usr/bin/env bash
# Measured latency: every built-in model and every real export the project tests with (corpus/models/torch,
# with seeded weights as initializers: bench/with_weights.py), original and optimized, timed side by side in
# onnxruntime on this machine's CPU (bench/ort_latency.py: one thread, interleaved runs, medians per pass,
# ORT_ENABLE_ALL and ORT_DISABLE_ALL), beside the ratio the cost model predicted. Prints a Markdown table
# (docs/benchmarks-measured.md).
#
# Usage: bench/ort_report.sh [--bare | --cost SPEC | --db FILE] [--runs N] [--passes N] [--min-seconds S] [--extract METHOD] [--time-identical]
#                          [--ort-disable NAMES] [--ort-dim NAME=VALUE ...] [MODEL ...]
#   --bare             eqsat-run MODEL -o OUT with no option at all (its defaults: --target auto, the check),
#                      what a user runs first (issue 46)
#   --cost SPEC        eqsat-run's cost model (default analytical:cpu-ort, the profile fitted to this runtime
#                      by bench/fit_cpu_profile.py)
#   --db FILE          measure first: extend the onnxruntime cost DB FILE (created when missing) with every node
#                      of the model's e-graph it lacks (bench/ort_cost_db.py, same eqsat-run limits), then
#                      optimize with --cost db:FILE
#   --runs N           runs per model per pass (default 15), raised for small models so that a pass times
#                      each model for at least --min-seconds S (default 1); --passes N: interleaved passes
#                      (default 3)
#   --extract METHOD   eqsat-run's extraction (default ilp, eqsat-run's: it sees merges of operators that share
#                      an input, and its node and LP-iteration counts decide; its time limit is a guard that the
#                      report's extraction status names when it stops the search)
#   --time-identical   also time a model whose optimized file is byte-identical to its original (otherwise
#                      its ratio is 1 by construction and the row says so)
#   --ort-disable NAMES  comma-separated onnxruntime graph transformers turned off in both sessions at
#                      ORT_ENABLE_ALL (bench/ort_latency.py --disable-fusions), e.g. SkipLayerNormFusion
#   --ort-dim NAME=VALUE  the value a symbolic dimension is timed at (bench/ort_latency.py --dim; default 1)
#   MODEL              built-in names and/or .onnx files (default: all built-ins and corpus/models/torch/*.onnx)
# The predicted ratios are optimized / original cost of the written file as eqsat-run reports it (read back from
# the export); with a DB, the session.run overhead the DB records (paid once per inference) is added to both.
# ENABLE_ALL: the report's costs (with a DB, the units onnxruntime fuses at load time priced as its fused
# kernels); DISABLE_ALL: every node priced alone (unfused_cost) plus each file's shape arithmetic that the import
# folded (folded_shape_nodes x the DB's shape_node_ms). The error columns are |predicted - measured| in points
# (100 x ratio difference) at each level.
# eqsat-run limits are counts (its defaults, 3 iterations a round, rules both ways, with 10000 e-nodes, 8 rounds),
# so the optimized graph does not depend on the machine's load. Needs build/bin/eqsat-run (tools/build.sh) and .venv
# (tools/setup-python.sh). Work files in $TEQ_WORK (default a temporary folder, removed at the end).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cost=analytical:cpu-ort
db=
runs=15
passes=3
min_seconds=1
extract=ilp
time_identical=0
bare=0
ort_disable=()
ort_dims=()
models=()
while (($#)); do
  case $1 in
    --cost) cost=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    --min-seconds) min_seconds=$2; shift 2 ;;
    --extract) extract=$2; shift 2 ;;
    --time-identical) time_identical=1; shift ;;
    --bare) bare=1; shift ;;
    --ort-dim) ort_dims+=(--dim "$2"); shift 2 ;;
    --ort-disable) ort_disable=(--disable-fusions "$2"); shift 2 ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    -*) echo "ort_report: error: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
eqsat="${TEQ_BUILD_DIR:-$root/build}/bin/eqsat-run"
python="$root/.venv/bin/python"
[[ -x $eqsat ]] || { echo "ort_report: error: $eqsat missing; run tools/build.sh" >&2; exit 2; }
[[ -x $python ]] || { echo "ort_report: error: $python missing; run tools/setup-python.sh" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ && $passes =~ ^[1-9][0-9]*$ ]] || { echo "ort_report: error: --runs and --passes take positive integers" >&2; exit 2; }
if [[ -n $db ]]; then
  db=$(realpath -m "$db")
  cost="db:$db"
fi
if ((${#models[@]} == 0)); then
  mapfile -t models < <("$eqsat" --list-models)
  models+=("$root"/corpus/models/torch/*.onnx)
fi
if [[ -n ${TEQ_WORK:-} ]]; then work=$TEQ_WORK; mkdir -p "$work"; else work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
limits=(--extract "$extract" --node-limit 10000 --rounds 8)
shown_cost=${cost/#db:$root\//db:}
eqsat_options=(--cost "$cost" "${limits[@]}")
if ((bare)); then
  [[ -z $db ]] || { echo "ort_report: error: --bare and --db exclude each other" >&2; exit 2; }
  eqsat_options=()
  shown_cost="(no options)"
fi
echo "| model | cost model | predicted ENABLE_ALL | predicted DISABLE_ALL | kept original | ORT_ENABLE_ALL measured (passes) | ORT_DISABLE_ALL measured (passes) | error, points (ENABLE_ALL) | error, points (DISABLE_ALL) |"
echo "|---|---|---:|---:|---|---|---|---:|---:|"
status=0
for m in "${models[@]}"; do
  name=$(basename "$m" .onnx)
  orig="$work/$name.orig.onnx"
  opt="$work/$name.opt.onnx"
  if [[ $m == *.onnx ]]; then
    [[ -f $m ]] || { echo "| $name | $shown_cost | no such file: $m | | | | |"; status=1; continue; }
    m=$(realpath "$m")
    if [[ $m == "$root"/corpus/models/torch/* ]]; then
      # Exported with export_params=False: seeded weights as initializers, as a user's model has them.
      "$python" "$root/bench/with_weights.py" "$m" "$orig"
      name="$name (export)"
    else
      cp "$m" "$orig"
    fi
  else
    "$eqsat" --model "$m" --export "$orig" 2>/dev/null
    name="$name (built-in)"
  fi
  if [[ -n $db ]] && ! "$python" "$root/bench/ort_cost_db.py" "$db" "$orig" --eqsat "$eqsat" \
      --eqsat-args "${limits[*]}" >"$work/${name%% *}.db.log" 2>&1; then
    echo "| $name | $shown_cost | ort_cost_db failed: $(tail -1 "$work/${name%% *}.db.log") | | | | | | |"
    status=1
    continue
  fi
  log="$work/${name%% *}"
  if ! "$eqsat" "$orig" ${eqsat_options[@]+"${eqsat_options[@]}"} -o "$opt" --report "$log.json" >"$log.log" 2>&1; then
    echo "| $name | $shown_cost | eqsat-run failed: $(tail -1 "$log.log") | | | | | | |"
    status=1
    continue
  fi
  identical=0
  cmp -s "$orig" "$opt" && identical=1
  if ((identical && !time_identical)); then
    echo '{"identical": true}' >"$log.ort.json"
  elif ! "$python" "$root/bench/ort_latency.py" "$orig" "$opt" --runs "$runs" --passes "$passes" --min-seconds "$min_seconds" ${ort_disable[@]+"${ort_disable[@]}"} ${ort_dims[@]+"${ort_dims[@]}"} --json "$log.ort.json" >"$log.ort.log" 2>&1; then
    echo "| $name | $shown_cost | | | | ort_latency failed: $(tail -1 "$log.ort.log") | | | |"
    status=1
    continue
  fi
  "$python" - "$log.json" "$log.ort.json" "$name" "$shown_cost" "${db:-}" <<'EOF'
import json, sys
rep, ort, name, cost, db = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4], sys.argv[5]
facts = json.load(open(db)) if db else {}
overhead = facts.get("session_run_overhead_ms", 0.0) * 1e-3
kept = "yes" if rep.get("kept_original") else "no"
# ENABLE_ALL: the report's costs, fused units priced as the kernels onnxruntime fuses them into. DISABLE_ALL:
# every node priced alone, plus the shape arithmetic of the file that the import folded and onnxruntime runs.
predicted = {"all": (rep["exported_cost"] + overhead) / (rep["original_cost"] + overhead)}
unfused = rep.get("unfused_cost", {"original": rep["original_cost"], "exported": rep["exported_cost"]})
shape_nodes = rep.get("folded_shape_nodes", {"original": 0, "exported": 0})
shape_node = facts.get("shape_node_ms", 0.0) * 1e-3
predicted["disable"] = ((unfused["exported"] + overhead + shape_nodes["exported"] * shape_node) /
                        (unfused["original"] + overhead + shape_nodes["original"] * shape_node))
if ort.get("identical"):
    predicted = {"all": 1.0, "disable": 1.0}
    cells = ["1 (identical file)", "1 (identical file)"]
    measured = {"all": 1.0, "disable": 1.0}
    kept += ", unchanged"
else:
    def cell(level):
        l = ort["levels"][level]
        return f"**{l['median_ratio']:.3f}** ({', '.join(f'{x:.3f}' for x in l['ratios'])})"
    cells = [cell("all"), cell("disable")]
    measured = {level: ort["levels"][level]["median_ratio"] for level in ("all", "disable")}
gap = rep.get("extraction", {}).get("gap", 0)
if rep.get("extraction", {}).get("method") == "ilp" and gap > 1e-6:
    kept += f", ILP gap {gap:.1%}"
error = {level: abs(predicted[level] - measured[level]) * 100 for level in ("all", "disable")}
print(f"| {name} | {cost} | {predicted['all']:.3f} | {predicted['disable']:.3f} | {kept} | {cells[0]} | {cells[1]} | "
      f"{error['all']:.1f} | {error['disable']:.1f} |")
EOF
done
echo
echo "Ratios below 1 are faster. onnxruntime $("$python" -c 'import onnxruntime; print(onnxruntime.__version__)'), CPU execution provider, 1 thread${ort_disable[1]:+, ORT_ENABLE_ALL without ${ort_disable[1]}}, at least $runs runs and ${min_seconds} s per model per pass, $passes interleaved passes, medians; $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)."
exit $status
