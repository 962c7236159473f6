#!/usr/bin/env bash
# Installs every Debian package Loom's build, tests and GUI need. Idempotent; quiet when all is present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang clang-format
  antlr4 libantlr4-runtime-dev
  libz3-dev z3
  libeigen3-dev
  qt6-base-dev
  graphviz libgraphviz-dev
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  python3
  libonnx-dev protobuf-compiler libprotobuf-dev libonnx-testdata
  libxtensor-dev
  libabsl-dev libmimalloc-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
