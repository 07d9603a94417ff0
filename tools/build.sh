#!/usr/bin/env bash
# Configures and builds tensor-eqsat into build/ (programs in build/bin/). Extra arguments go to cmake.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${TEQ_JOBS:-$(nproc)}
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithAsserts "$@" >/dev/null
cmake --build "$root/build" -j "$jobs"
