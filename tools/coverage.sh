#!/usr/bin/env bash
# Coverage of a rule corpus against TASO's and Tensat's rule sets (issue 5's acceptance) and the hand-written
# seed (tests/data/seed.json): runs `rulegen derive --using CORPUS` on each set and prints one line per set, plus
# the share of the TASO-generated rules that TASO's own verifier proves (verify_generated_619.tsv). The full
# outputs (each rule not derived, with the reason) are kept in OUT_DIR.
#   tools/coverage.sh [CORPUS] [OUT_DIR]      defaults: corpus/rules.json, build/coverage
# Environment: TEQ_BUILD_DIR (default build/, must hold bin/rulegen), TEQ_THREADS (default: all cores),
# TEQ_COVERAGE_SETS (default: all of "tensat-single tensat-multi taso-shipped taso-generated seed").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corpus=${1:-$root/corpus/rules.json}
out=${2:-$root/build/coverage}
rulegen=${TEQ_BUILD_DIR:-$root/build}/bin/rulegen
threads=${TEQ_THREADS:-$(nproc)}
anchors=$root/corpus/anchors
[[ -x $rulegen ]] || { echo "coverage.sh: $rulegen not built (cmake --build build --target rulegen)" >&2; exit 2; }
[[ -f $corpus ]] || { echo "coverage.sh: no corpus at $corpus" >&2; exit 2; }
mkdir -p "$out"

declare -A targets=(
  [tensat-single]=$anchors/tensat/converted.txt
  [tensat-multi]=$anchors/tensat/converted_multi.txt
  [taso-shipped]=$anchors/taso/graph_subst.pb
  [taso-generated]=$anchors/taso/generated_graph_subst_f11782c.pb
  [seed]=$root/tests/data/seed.json
)
sets=${TEQ_COVERAGE_SETS:-tensat-single tensat-multi taso-shipped taso-generated seed}
echo "coverage of $corpus ($(grep -c '"lhs"' "$corpus") rules)"
for name in $sets; do
  [[ -n ${targets[$name]:-} ]] || { echo "coverage.sh: unknown set $name" >&2; exit 2; }
  start=$(date +%s)
  "$rulegen" derive --using "$corpus" --target "${targets[$name]}" --threads "$threads" >"$out/$name.txt" 2>&1 || {
    tail -5 "$out/$name.txt" >&2
    echo "coverage.sh: rulegen derive failed on $name" >&2
    exit 1
  }
  echo "$name: $(grep '^derived' "$out/$name.txt") [$(($(date +%s) - start)) s]"
done

# Of the generated rules TASO's verifier proves, how many are derived (rules are named taso-<row>).
[[ -f $out/taso-generated.txt && " $sets " == *" taso-generated "* ]] || { echo "per-rule results: $out/"; exit 0; }
tsv=$anchors/taso/verify_generated_619.tsv
proved=$(awk -F'\t' 'NR > 1 && $2 == "proved" { n++ } END { print n }' "$tsv")
missed=$(grep -o '^not derived: taso-[0-9]*' "$out/taso-generated.txt" | sed 's/.*taso-//' |
  awk -F'\t' 'NR == FNR { if (FNR > 1 && $2 == "proved") ok[$1] = 1; next } ok[$1] { n++ } END { print n + 0 }' "$tsv" -)
echo "taso-generated, of the $proved that TASO proves: $((proved - missed))/$proved" \
  "($(awk -v a=$((proved - missed)) -v b="$proved" 'BEGIN { printf "%.1f", 100 * a / b }')%)"
echo "per-rule results: $out/"
