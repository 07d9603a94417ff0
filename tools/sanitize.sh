#!/usr/bin/env bash
# Builds tests under AddressSanitizer + UndefinedBehaviorSanitizer (the "sanitize" preset, build-sanitize/)
# and runs them; any sanitizer report (or failing test) fails the run.
#   tools/sanitize.sh           the CI subset (docs/hardening.md says what and why): the rules and verify
#                               unit tests but their two slowest, the parser replays, and ruleverify's program
#                               and bad-input tests but the whole-corpus run
#   tools/sanitize.sh --full    every target and the whole ctest suite (an hour and more on 2 cores)
#   tools/sanitize.sh --with-fuzz-build
#                               the CI subset, built with clang in the fuzz targets' build folder (build-fuzz/,
#                               the "fuzz" preset plus the tests: ASan + UBSan as here, and libFuzzer's
#                               coverage instrumentation), so that the rules library tools/fuzz.sh compiled
#                               there is not compiled a second time (the test command runs this after fuzz.sh)
# Environment: TEQ_JOBS build and test jobs (default: all cores); TEQ_SANITIZE_DIR build folder (default
# build-sanitize, the preset's).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${TEQ_JOBS:-$(nproc)}
cd "$root"
start=$(date +%s)
# halt_on_error: the first report fails the process; detect_leaks: leaks are reports too.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

dir=${TEQ_SANITIZE_DIR:-build-sanitize}
if [[ ${1:-} == --with-fuzz-build ]]; then
  dir=build-fuzz
  cmake --preset fuzz -DTEQ_BUILD_TESTS=ON >/dev/null
else
  cmake --preset sanitize -B "$dir" >/dev/null
fi
if [[ ${1:-} == --full ]]; then
  cmake --build "$dir" -j "$jobs"
  echo "sanitize.sh: built everything in $(($(date +%s) - start)) s"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
  echo "sanitize.sh: full suite passed in $(($(date +%s) - start)) s"
  exit 0
fi

# The subset: what reads untrusted input (parsers, importers, corpus loader) and the core the rest stands on.
targets=(test_rules test_verify replay_sexpr replay_corpus_json replay_tensat_text replay_taso_pb ruleverify)
cmake --build "$dir" -j "$jobs" --target "${targets[@]}" >"$dir/subset-build.log" 2>&1 || {
  tail -30 "$dir/subset-build.log" >&2
  echo "sanitize.sh: the sanitizer build failed ($dir/subset-build.log)" >&2
  exit 1
}
built=$(date +%s)
echo "sanitize.sh: built ${#targets[@]} targets in $((built - start)) s"
# gtest_discover_tests registers the unit tests under their GoogleTest names; the test binaries are run
# directly instead (one process each), so that ctest needs no list of names.
# Left out: the two slowest unit tests (12 and 15 s unsanitized, whole-corpus loops that the run of tools/sanitize.sh
# --full covers), ruleverify.seed_corpus (33 s unsanitized, the same proofs as test_verify's) and
# ruleverify.corpus (80 s unsanitized, minutes sanitized: the same code on 634 more rules) and
# ruleverify.tensat_predefined_merge (6 s unsanitized, 58 s sanitized: Z3 searches on grouped convolutions; the
# grouped-conv code path stays in the subset through ruleverify.tensat_predefined_multi_grouped), and the shape
# facts' random-shape cases (10 s unsanitized, 48 Z3 contexts; ShapeFactsCheck keeps the code in the subset).
slow=TasoImport.GeneratedSetsReportEveryRule:Mutation.CorpusMutantsAreDecidedAndCounterexamplesReplay:EveryOperatorWithFacts/ShapeFacts.*
status=0
# Each binary in $jobs shards (GoogleTest's GTEST_TOTAL_SHARDS), all at once: run one after the other they
# took 38 s and 113 s of one core each.
shards=$(( jobs > 1 ? jobs : 1 ))
pids=() logs=()
for t in test_rules test_verify; do
  for ((i = 0; i < shards; ++i)); do
    log="$dir/$t.shard$i.log"
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$dir/bin/$t" --gtest_brief=1 --gtest_filter="-$slow" >"$log" 2>&1 &
    pids+=($!) logs+=("$log")
  done
done
for k in "${!pids[@]}"; do
  if ! wait "${pids[$k]}"; then
    echo "sanitize.sh: ${logs[$k]} FAILED:" >&2
    grep -E "ERROR: |SUMMARY: |runtime error|FAILED" "${logs[$k]}" | head -10 >&2 || true
    status=1
  fi
done
ctest --test-dir "$dir" --output-on-failure -j "$jobs" -E '^ruleverify\.((seed_)?corpus|tensat_predefined_merge)$' \
  -R '^(fuzz_replay\.(sexpr|corpus_json|tensat_text|taso_pb)|ruleverify\..*|errors\.ruleverify_.*)$' || status=1
echo "sanitize.sh: subset $([[ $status == 0 ]] && echo passed || echo FAILED) in $(($(date +%s) - start)) s" \
  "(build $((built - start)) s, run $(($(date +%s) - built)) s)"
exit $status
