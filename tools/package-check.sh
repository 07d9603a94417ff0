#!/usr/bin/env bash
# The packages, as users get them (issue 46; docs/install.md, docs/python.md), checked on the tree
# tools/build.sh built:
#   1. `cmake --install build --prefix build/install`, then the consumer project tests/consumer, configured
#      against that prefix alone (find_package(tensor_eqsat), tensor_eqsat::optimizer), built and run;
#   2. a fresh virtual environment build/package-venv, `pip install .` into it, then pytest tests/package
#      (the Python API and the console scripts). So as not to compile the libraries twice, pip is pointed at
#      the installed tree (TEQ_PREBUILT_PREFIX: the module alone is compiled, against find_package's
#      targets); a plain `pip install .` compiles everything itself.
# Exit status 0 when every step passed. Needs PyPI (the venv's packages: onnx, onnxruntime, numpy, pytest,
# and pip's build requirements scikit-build-core, nanobind).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
prefix=$build/install
python=${TEQ_PYTHON:-python3}
start=$(date +%s)
step() { echo "package-check: $* ($(( $(date +%s) - start )) s)"; }

rm -rf "$prefix" "$build/consumer"
cmake --install "$build" --prefix "$prefix" >/dev/null
step "installed into $prefix"
cmake -S "$root/tests/consumer" -B "$build/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build/consumer" -j "${TEQ_JOBS:-$(nproc)}" >/dev/null
(cd "$build/consumer" && ./consumer "$build/consumer/optimized.onnx")
step "consumer project built against the installed tree and ran"

venv=$build/package-venv
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check numpy onnx onnxruntime pytest
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root" \
  -Ccmake.define.TEQ_PREBUILT_PREFIX="$prefix"
step "pip install . into a fresh virtual environment"
# From outside the source tree, so that the installed package is what is imported.
(cd "$build" && "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/package")
step "pytest tests/package passed"
