#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the whole test suite with ctest.
# CI runs exactly this (.ci/run). Exit status is ctest's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
start=$(date +%s)
"$root/tools/setup.sh"
if [[ -x "$root/tools/setup-python.sh" ]]; then "$root/tools/setup-python.sh"; fi
"$root/tools/build.sh"
cd "$root/build"
status=0
ctest --output-on-failure -j "${TEQ_JOBS:-$(nproc)}" || status=$?
echo "test.sh: finished in $(( $(date +%s) - start )) s, ctest exit status $status"
exit $status
