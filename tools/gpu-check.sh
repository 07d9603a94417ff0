#!/usr/bin/env bash
# One prepared GPU check (docs/gpu.md): builds with CUDA, runs the GPU tests, measures the built-in models
# (cost DB + end-to-end latency of original vs optimized) and writes everything into one folder.
# Designed for an H200 in under 8 minutes; every stage has its own time limit and a failing stage does
# not stop the later ones. Exit status: 0 when every stage passed, 1 otherwise.
#   tools/gpu-check.sh [OUT_DIR]          (default: build-gpu/gpu-results/, beside the build)
# Environment: TEQ_JOBS (build jobs, default nproc), TEQ_GPU_BUILD (build dir, default build-gpu),
#   TEQ_GPU_MODELS (space-separated model names; default: all built-ins), TEQ_GPU_MODEL_TIMEOUT (s, 75),
#   TEQ_GPU_DEADLINE (s after start when no further model is started, 360),
#   TEQ_GPU_OPT_LIMIT (saturation and ILP seconds per model, 20).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TEQ_GPU_BUILD:-$root/build-gpu}
out=$(mkdir -p "${1:-$build/gpu-results}" && cd "${1:-$build/gpu-results}" && pwd)
jobs=${TEQ_JOBS:-$(nproc)}
model_timeout=${TEQ_GPU_MODEL_TIMEOUT:-75}
deadline=${TEQ_GPU_DEADLINE:-360}
opt_limit=${TEQ_GPU_OPT_LIMIT:-20}
start=$(date +%s)
status=0
log() { echo "[gpu-check $(( $(date +%s) - start ))s] $*" | tee -a "$out/summary.txt"; }
fail() { log "FAIL: $*"; status=1; }
: >"$out/summary.txt"

# --- 0. the machine -------------------------------------------------------------------------------
{ nvidia-smi 2>&1 || echo "nvidia-smi not available"; } >"$out/nvidia-smi.txt"
log "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo unknown)"
log "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"

# --- 1. build with CUDA (only what the check needs) ------------------------------------------------
log "configure + build in $build with $jobs jobs"
if ! cmake -S "$root" -B "$build" -DTEQ_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DTEQ_BUILD_BENCH=OFF \
      >"$out/build.log" 2>&1; then
  fail "configure (see build.log)"; exit 1
fi
targets=(test_optimizer)
[[ -f $root/tools/eqsat_run.cpp ]] && targets+=(eqsat-run)
if ! timeout 300 cmake --build "$build" -j "$jobs" --target "${targets[@]}" >>"$out/build.log" 2>&1; then
  fail "build of ${targets[*]} (see build.log)"; exit 1
fi
bin=$build/bin
log "built ${targets[*]}"

# --- 2. GPU tests ----------------------------------------------------------------------------------
# GTEST_SKIP would hide a missing GPU: treat "skipped" as a failure here, the point is to run them.
timeout 240 "$bin/test_optimizer" --gtest_filter='Gpu*' --gtest_output="json:$out/gpu-tests.json" \
  >"$out/gpu-tests.log" 2>&1
rc=$?
skipped=$(grep -c '\[  SKIPPED \]' "$out/gpu-tests.log" || true)
if [[ $rc -ne 0 ]]; then fail "GPU tests (exit $rc, see gpu-tests.log)"
elif [[ $skipped -gt 0 ]]; then fail "GPU tests: $skipped skipped: $(grep -m1 'no GPU' "$out/gpu-tests.log")"
else log "GPU tests passed ($(grep -m1 'PASSED' "$out/gpu-tests.log"))"; fi

# --- 3. built-in models: measured costs and end-to-end latency ------------------------------------
if [[ ! -x $bin/eqsat-run ]]; then
  fail "no eqsat-run in this build: models not measured"
else
  help=$("$bin/eqsat-run" --help 2>&1)
  has() { grep -q -- "$1" <<<"$help"; }
  # Without built-in models (--model), the ONNX examples in corpus/models stand in for them.
  if ! has '--model'; then
    fail "eqsat-run has no --model option: measuring the ONNX examples in corpus/models instead"
    models=$(ls "$root"/corpus/models/*.onnx 2>/dev/null | tr '\n' ' ')
  else
    models=${TEQ_GPU_MODELS:-}
    if [[ -z $models ]]; then
      models=""
      if has '--list-models'; then models=$("$bin/eqsat-run" --list-models 2>/dev/null | tr -s ' \n' ' ') || models=""; fi
      [[ $models =~ ^[a-z0-9_\ -]+$ ]] || models="bert nasrnn nasneta resnext50 resnet50 inceptionv3 vgg19 squeezenet"
    fi
  fi
  if [[ -n ${models:-} ]]; then
    # One shared cost DB across models, so a node measured for one model is reused by the next.
    cost=measured
    has 'measured:FILE' && cost="measured:$out/costs.json"
    extra=()
    if has '--measure'; then extra+=(--measure); else fail "eqsat-run has no --measure: no end-to-end latency"; fi
    has '--time-limit' && extra+=(--time-limit "$opt_limit")
    has '--ilp-time-limit' && extra+=(--ilp-time-limit "$opt_limit")
    for m in $models; do
      if (( $(date +%s) - start > deadline )); then fail "deadline reached: $m and later models not measured"; continue; fi
      if [[ $m == *.onnx ]]; then src=("$m"); m=$(basename "$m" .onnx); else src=(--model "$m"); fi
      log "model $m"
      timeout "$model_timeout" "$bin/eqsat-run" "${src[@]}" --cost "$cost" "${extra[@]}" \
        --report "$out/$m.report.json" -o "$out/$m.opt.onnx" >"$out/$m.log" 2>&1
      rc=$?
      if [[ $rc -ne 0 ]]; then fail "$m: eqsat-run exit $rc (see $m.log)"; else log "$m done"; fi
    done
    # With --cost measured the DB lies beside the reports; a plain "measured" spec writes none.
    [[ -f $out/costs.json ]] && log "cost DB: $(grep -c '|' "$out/costs.json") entries in costs.json"
  fi
fi

# --- 4. one table -----------------------------------------------------------------------------------
if command -v python3 >/dev/null && ls "$out"/*.report.json >/dev/null 2>&1; then
  python3 - "$out" <<'PY' | tee "$out/results.md"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| model | predicted speedup | measured original ms | measured optimized ms | measured speedup | cost lookups (hits/measured/misses) |")
print("|---|---|---|---|---|---|")
for f in sorted(out.glob("*.report.json")):
    r = json.loads(f.read_text())
    lat = r.get("latency") or r.get("measure") or {}
    o, p = lat.get("original", {}), lat.get("optimized", {})
    c = r.get("cost_stats") or r.get("cost_db") or {}
    fmt = lambda v: f"{v:.4g}" if isinstance(v, (int, float)) else "-"
    print(f"| {f.name.split('.')[0]} | {fmt(r.get('speedup'))} | {fmt(o.get('median_ms'))} | {fmt(p.get('median_ms'))} "
          f"| {fmt(lat.get('speedup'))} | {c.get('hits','-')}/{c.get('measured','-')}/{c.get('misses','-')} |")
PY
fi
if command -v python3 >/dev/null && [[ -f $out/costs.json ]]; then
  python3 - "$out/costs.json" <<'PY' >"$out/costs.md"
import collections, json, sys
db = json.load(open(sys.argv[1]))
e = db["entries"]
print(f"# Measured operator costs on {db.get('device')} ({db.get('precision')}), {len(e)} entries, median ms\n")
per_op = collections.defaultdict(list)
for k, ms in e.items(): per_op[k.split("|")[0]].append(ms)
print("| operator | entries | total ms | max ms |\n|---|---|---|---|")
for op, v in sorted(per_op.items(), key=lambda kv: -sum(kv[1])):
    print(f"| {op} | {len(v)} | {sum(v):.4g} | {max(v):.4g} |")
print("\n| most expensive entries | ms |\n|---|---|")
for k, ms in sorted(e.items(), key=lambda kv: -kv[1])[:30]: print(f"| `{k.replace('|', chr(92) + '|')}` | {ms:.4g} |")
PY
fi
log "finished with status $status in $(( $(date +%s) - start )) s; results in $out"
exit $status
