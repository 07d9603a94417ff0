#!/usr/bin/env bash
# Installs every Debian package tensor-eqsat needs that is missing. Idempotent:
# when everything is present it does nothing (no apt-get update, no root needed).
set -euo pipefail

packages=(
  cmake g++ pkg-config
  libz3-dev nlohmann-json3-dev libonnx-dev libprotobuf-dev protobuf-compiler
  coinor-libcbc-dev libopenblas-dev googletest libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  clang libclang-rt-14-dev   # the libFuzzer targets (tools/fuzz.sh); the runtime is only a Recommends of clang
  python3-dev python3-venv   # the Python package's extension module and the fresh venv of tools/package-check.sh
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then sudo_cmd=(sudo); else
    echo "setup: error: not root and no sudo; install these packages by hand: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get update -qq; then
  echo "setup: error: apt-get update failed (no network or no package mirror?)" >&2
  exit 1
fi
if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "setup: error: apt-get install failed for: ${missing[*]}" >&2
  exit 1
fi
echo "setup: done"
