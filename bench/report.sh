#!/usr/bin/env bash
# Builds bench_report and writes docs/benchmarks.md and docs/benchmarks-speedup.svg: all eight built-in
# models with saturation (greedy and ILP, k_multi 1 and 2) and the sequential baseline, in one process; then
# appends the real PyTorch exports beside their built-in twins (bench/real_exports.sh, same rules and cost
# model; needs build/bin/eqsat-run and the .venv of tools/setup-python.sh, left out with a note otherwise).
# Arguments go to bench_report (--help lists them). Build folder: $TEQ_BUILD_DIR, default build-report/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TEQ_BUILD_DIR:-$root/build-report}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithAsserts -DTEQ_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j "${TEQ_JOBS:-2}" --target bench_report eqsat-run
"$build/bin/bench_report" "$@"
out=$root/docs/benchmarks.md rules=() cost=()
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  case ${args[i]} in
    --out) out=${args[i + 1]} ;;
    --rules) rules=(--rules "${args[i + 1]}") ;;
    --cost) cost=(--cost "${args[i + 1]}") ;;
  esac
done
if [[ -x $root/.venv/bin/python ]]; then
  { echo; TEQ_BUILD_DIR=$build "$root/bench/real_exports.sh" "${rules[@]}" "${cost[@]}"; } >> "$out"
else
  printf '\n(The real exports were left out: no .venv, run tools/setup-python.sh.)\n' >> "$out"
fi
