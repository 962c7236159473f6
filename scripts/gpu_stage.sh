#!/usr/bin/env bash
# Copies what scripts/gpu_check.sh runs on a GPU machine into DIR: the CUDA tests (one process, and
# several processes under mpirun), the GPU MLP benchmark and the loom command from the build folder
# BUILD (default build), stripped, the non-CUDA shared libraries they need that a bare CUDA machine
# lacks, and OpenMPI's launcher (mpirun, its plugins and their libraries, by their paths here) for a
# machine without MPI.
set -euo pipefail
stage=${1:?usage: gpu_stage.sh DIR [BUILD]}
build=${2:-build}
mkdir -p "$stage/lib"
for binary in tests/runtime_cuda/loom_runtime_cuda_tests tests/runtime_cuda/loom_runtime_cuda_mpi_tests bench/cuda/loom_cuda_mlp_bench cli/loom; do
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

# OpenMPI's launcher as this machine has it, every file under its absolute path.
command -v mpirun >/dev/null || { echo "gpu_stage: no mpirun here: install OpenMPI (scripts/setup.sh)" >&2; exit 1; }
mpirun=$(readlink -f "$(command -v mpirun)")
libmpi=$(find /usr/lib -name libmpi.so.40 -print -quit)
[ -n "$libmpi" ] || { echo "gpu_stage: no libmpi.so.40 under /usr/lib: OpenMPI 4 is expected" >&2; exit 1; }
launcher=("$mpirun" /usr/bin/mpirun "$(dirname "$(readlink -f "$libmpi")")"/libmpi.so.40*)
for path in "$(dirname "$mpirun")/orted" /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi /etc/openmpi; do
  [ -e "$path" ] && launcher+=("$path")
done
plugins=$(find "${launcher[@]}" -name '*.so*' -type f)
libraries=$(for f in "$mpirun" $plugins; do ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'; done | sort -u |
  { grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' || true; })
for lib in $libraries; do launcher+=("$lib" "$(readlink -f "$lib")"); done
tar -cJhf "$stage/openmpi-launcher.tar.xz" --absolute-names "${launcher[@]}"
du -sh "$stage"
