#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the whole test suite with ctest, then the
# package check (tools/package-check.sh: cmake --install with a find_package consumer, pip install . into a
# fresh venv with pytest tests/package), then the hardening checks (docs/hardening.md): a 10-second libFuzzer
# smoke run of each fuzz target (tools/fuzz.sh, two at a time) and the AddressSanitizer +
# UndefinedBehaviorSanitizer build of the test subset (tools/sanitize.sh --with-fuzz-build: in the fuzz build,
# whose rules library it shares). CI runs exactly this (.ci/run). Exit status: ctest's, or 1 if the package
# check or a hardening check failed.
# TEQ_HARDENING=0 skips the hardening checks.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
start=$(date +%s)
"$root/tools/setup.sh"
if [[ -x "$root/tools/setup-python.sh" ]]; then "$root/tools/setup-python.sh"; fi
"$root/tools/build.sh"
cd "$root/build"
status=0
ctest --output-on-failure -j "${TEQ_JOBS:-$(nproc)}" || status=$?
echo "test.sh: ctest finished after $(( $(date +%s) - start )) s, exit status $status"
# The packages (docs/install.md): cmake --install + a find_package consumer, pip install . + its pytest.
step=$(date +%s)
package=0
"$root/tools/package-check.sh" || package=1
echo "test.sh: package check took $(( $(date +%s) - step )) s, exit status $package"
hardening=0
if [[ ${TEQ_HARDENING:-1} != 0 ]]; then
  step=$(date +%s)
  TEQ_FUZZ_PARALLEL=2 "$root/tools/fuzz.sh" 10 || hardening=1
  echo "test.sh: fuzz smoke took $(( $(date +%s) - step )) s"
  step=$(date +%s)
  "$root/tools/sanitize.sh" --with-fuzz-build || hardening=1
  echo "test.sh: sanitizer subset took $(( $(date +%s) - step )) s"
fi
if ((status == 0 && (hardening != 0 || package != 0))); then status=1; fi
echo "test.sh: finished in $(( $(date +%s) - start )) s, exit status $status"
exit $status
