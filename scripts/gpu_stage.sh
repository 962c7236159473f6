#!/usr/bin/env bash
# Copies what scripts/gpu_check.sh runs on a GPU machine into DIR: the CUDA tests, the GPU MLP
# benchmark and the loom command from the build folder BUILD (default build), stripped, and the
# non-CUDA shared libraries they need that a bare CUDA machine lacks.
set -euo pipefail
stage=${1:?usage: gpu_stage.sh DIR [BUILD]}
build=${2:-build}
mkdir -p "$stage/lib"
for binary in tests/runtime_cuda/loom_runtime_cuda_tests bench/cuda/loom_cuda_mlp_bench cli/loom; do
  if [ ! -x "$build/$binary" ]; then
    echo "gpu_stage: $build/$binary is missing: build it first (cmake --build $build --target $(basename "$binary"))" >&2
    exit 1
  fi
  strip -o "$stage/$(basename "$binary")" "$build/$binary"
  # Everything but the C library, the compiler's runtime and CUDA's own libraries.
  ldd "$build/$binary" | awk '$3 ~ /^\// {print $3}' |
    { grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|/libcu|/libnccl' || true; } |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
done
du -sh "$stage"
