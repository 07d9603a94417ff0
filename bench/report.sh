#!/usr/bin/env bash
# Builds bench_report and writes docs/benchmarks.md and docs/benchmarks-speedup.svg: all eight built-in
# models with saturation (greedy and ILP, k_multi 1 and 2) and the sequential baseline, in one process.
# Arguments go to bench_report (--help lists them). Build folder: $TEQ_BUILD_DIR, default build-report/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TEQ_BUILD_DIR:-$root/build-report}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithAsserts -DTEQ_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j "${TEQ_JOBS:-2}" --target bench_report
exec "$build/bin/bench_report" "$@"
