#!/usr/bin/env bash
# Two builds of eqsat-run on the same inputs: the eight built-in models (under analytical:h200 and flops) and
# every bundled model and PyTorch export in corpus/models/, with the seed corpus and limits that are counts
# only (30 iterations, 10000 e-nodes, 8 rounds, greedy extraction), so the results depend on the code alone.
# Prints one line per run (original cost, optimized cost, operators, rules used or whether the original was
# kept) for each build and says whether they are identical: a refactoring must leave them so.
#
# Usage: bench/compare_builds.sh OLD_EQSAT_RUN NEW_EQSAT_RUN
# Exit status: 0 identical, 1 different, 2 bad usage. Needs python3.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,9p' "$0"; exit 0; fi
if (($# != 2)); then echo "compare_builds: expected OLD_EQSAT_RUN NEW_EQSAT_RUN (see --help)" >&2; exit 2; fi
for exe in "$1" "$2"; do
  [[ -x $exe ]] || { echo "compare_builds: $exe is not an executable" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
limits=(--rules "$root/tests/data/seed.json" --time-limit 100000 --iter-limit 30 --node-limit 10000 --rounds 8
        --extract greedy -q)

summary() {  # report.json label -> one line
  python3 - "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
used = r["rules_used"]
used = sorted(used.items()) if isinstance(used, dict) else used
print(sys.argv[2], r["original_cost"], r["optimized_cost"], r["operators"]["original"], r["operators"]["optimized"],
      "kept" if r.get("kept_original") else "", used)
EOF
}

run_all() {  # exe out
  local exe=$1 out=$2 m f
  : >"$out"
  for m in bert nasrnn nasneta resnet50 resnext50 squeezenet inceptionv3 vgg19; do
    for cost in analytical:h200 flops; do
      "$exe" --model "$m" --cost "$cost" "${limits[@]}" --report "$work/r.json" >/dev/null
      summary "$work/r.json" "$m $cost" >>"$out"
    done
  done
  for f in "$root"/corpus/models/*.onnx "$root"/corpus/models/torch/*.onnx; do
    "$exe" "$f" "${limits[@]}" --report "$work/r.json" >/dev/null
    summary "$work/r.json" "${f#"$root"/}" >>"$out"
  done
}

run_all "$1" "$work/old.txt"
run_all "$2" "$work/new.txt"
cat "$work/new.txt"
if diff "$work/old.txt" "$work/new.txt" >"$work/diff.txt"; then
  echo "compare_builds: $(wc -l <"$work/new.txt") runs, identical"
else
  cat "$work/diff.txt"
  echo "compare_builds: the two builds differ (above: < old, > new)"
  exit 1
fi
