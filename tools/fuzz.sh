#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan: the "fuzz" preset, build-fuzz/) and runs each for
# SECONDS (default 30) on its committed seeds and regression inputs. Any crash, hang (one input over 20 s),
# leak, out-of-memory or sanitizer report fails the run (exit 1). Crashing inputs are written to
# build-fuzz/crashes/<target>/; after fixing the bug, copy each into fuzz/regressions/<target>/ so that ctest
# (fuzz_replay.<target>) replays it forever. docs/hardening.md has the recorded runs.
#   tools/fuzz.sh [SECONDS] [TARGET...]      e.g. tools/fuzz.sh 600 sexpr onnx_import
# Environment: TEQ_FUZZ_PARALLEL targets at a time (default 1; the test command uses 2),
#              TEQ_JOBS build jobs (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-30}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=()
  for f in "$root"/fuzz/fuzz_*.cpp; do n=$(basename "$f" .cpp); targets+=("${n#fuzz_}"); done
fi
parallel=${TEQ_FUZZ_PARALLEL:-1}
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; the fuzz targets need clang with libFuzzer (tools/setup.sh installs it)" >&2
  exit 1
fi
cd "$root"
start=$(date +%s)
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j "${TEQ_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}" >build-fuzz/build.log 2>&1 || {
  tail -30 build-fuzz/build.log >&2
  echo "fuzz.sh: building the fuzz targets failed (build-fuzz/build.log)" >&2
  exit 1
}
echo "fuzz.sh: built ${#targets[@]} fuzz targets in $(($(date +%s) - start)) s"

# run_one TARGET: one libFuzzer run; its log is build-fuzz/<target>.log.
run_one() {
  local t=$1 work="build-fuzz/work/$1" crashes="build-fuzz/crashes/$1" log="build-fuzz/$1.log"
  mkdir -p "$work" "$crashes"
  cp -r "fuzz/corpus/$t/." "$work/" 2>/dev/null || true
  # Regression inputs seed the run too (the .keep placeholders are harmless empty inputs).
  cp -r "fuzz/regressions/$t/." "$work/" 2>/dev/null || true
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "build-fuzz/bin/fuzz_$t" "$work" \
      -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=65536 -artifact_prefix="$crashes/" \
      -print_final_stats=1 >"$log" 2>&1; then
    local runs cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1)
    echo "fuzz.sh: $t: ok, ${seconds} s, ${runs:-?} inputs, ${cov:-no coverage line}"
  else
    echo "fuzz.sh: $t FAILED: see $log and $crashes/" >&2
    grep -E "ERROR|SUMMARY|deadly signal|Test unit written|runtime error" "$log" | head -8 >&2 || true
    return 1
  fi
}

status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
echo "fuzz.sh: finished in $(($(date +%s) - start)) s, $([[ $status == 0 ]] && echo "no crashes" || echo "FAILURES")"
exit $status
