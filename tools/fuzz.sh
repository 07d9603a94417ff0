#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan: the "fuzz" preset) and runs each for SECONDS
# (default 30) on its seeds. Crashing inputs are written to build-fuzz/crashes/<target>/; copy each into
# fuzz/regressions/<target>/ after fixing it, so ctest replays it forever.
#   tools/fuzz.sh [SECONDS] [TARGET...]      e.g. tools/fuzz.sh 600 sexpr onnx_import
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-30}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=()
  for f in "$root"/fuzz/fuzz_*.cpp; do n=$(basename "$f" .cpp); targets+=("${n#fuzz_}"); done
fi
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; the fuzz targets need clang (libFuzzer)" >&2
  exit 1
fi
cd "$root"
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j "${TEQ_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"
status=0
for t in "${targets[@]}"; do
  work="build-fuzz/work/$t" crashes="build-fuzz/crashes/$t"
  mkdir -p "$work" "$crashes"
  cp -r "fuzz/corpus/$t/." "$work/" 2>/dev/null || true
  echo "fuzz.sh: $t for ${seconds} s"
  if ! ASAN_OPTIONS=detect_leaks=1 "build-fuzz/bin/fuzz_$t" "$work" -max_total_time="$seconds" -timeout=20 \
      -rss_limit_mb=4096 -max_len=65536 -artifact_prefix="$crashes/" -print_final_stats=1 \
      >"build-fuzz/$t.log" 2>&1; then
    echo "fuzz.sh: $t FAILED: see build-fuzz/$t.log and $crashes/" >&2
    grep -E "ERROR|SUMMARY|deadly signal|timeout" "build-fuzz/$t.log" | head -5 >&2 || true
    status=1
  else
    grep -E "stat::number_of_executed_units" "build-fuzz/$t.log" | sed "s/^/  $t: /" || true
  fi
done
exit $status
