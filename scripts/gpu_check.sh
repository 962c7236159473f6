#!/usr/bin/env bash
# Runs the CUDA backend's tests and the GPU benchmarks on a machine with a GPU, from binaries built
# elsewhere (this machine needs only the GPU driver, the CUDA libraries and PyTorch):
#
#   scripts/gpu_stage.sh DIR        # on the build machine: stripped binaries and the libraries they need
#   scripts/gpu_check.sh DIR [OUT]  # on the GPU machine: tests, benchmarks, a table of figures last
#
# cuBLAS, cuDNN and NCCL are taken from the GPU machine (the CUDA toolkit or PyTorch's wheels).
# Logs and the tests' XML report go to OUT (default: DIR/out).
set -uo pipefail
stage=$(cd "${1:?usage: gpu_check.sh STAGED_DIR [OUT]}" && pwd)
out=${2:-$stage/out}
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)

# The directories that hold the CUDA libraries the binaries were linked against.
libdirs="$stage/lib"
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
  found=$(find /usr/local/cuda/ /usr/local/cuda/lib64 /opt /usr/lib -name "$so" 2>/dev/null | head -1)
  if [ -z "$found" ]; then echo "gpu_check: $so not found on this machine" >&2; continue; fi
  libdirs="$libdirs:$(dirname "$found")"
done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"

status=0
echo "== CUDA tests"
"$stage/loom_runtime_cuda_tests" --gtest_output="xml:$out/cuda_tests.xml" >"$out/cuda_tests.log" 2>&1 || status=1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|tests ran' "$out/cuda_tests.log"

echo "== MLP benchmark (Loom's cuBLAS iteration)"
bench=()
for variant in "" "--unfused-sgd" "--tf32"; do
  # shellcheck disable=SC2086
  "$stage/loom_cuda_mlp_bench" $variant --warmup 5 --iters 20 >"$out/bench$variant.log" 2>&1 || status=1
  bench+=("${variant:-fp32 fused}: $(grep -E '^training iteration|of plain SGEMM' "$out/bench$variant.log" | tr '\n' ' ')")
done
echo "== MLP in PyTorch"
torch=()
for variant in "" "--tf32"; do
  # shellcheck disable=SC2086
  python3 "$here/bench/cuda/torch_mlp.py" $variant --warmup 5 --iters 20 >"$out/torch$variant.log" 2>&1 || status=1
  torch+=("${variant:-fp32}: $(grep '^training iteration' "$out/torch$variant.log")")
done

echo "== AlexNet and a BERT layer in PyTorch"
for model in "alexnet --batch 64" "bert_layer"; do
  # shellcheck disable=SC2086
  python3 "$here/bench/cuda/torch_models.py" $model >"$out/torch_${model%% *}.log" 2>&1 || status=1
  torch+=("$model: $(grep '^training step' "$out/torch_${model%% *}.log")")
done

echo "== loom train, CUDA backend against the CPU backend ($(nproc) cores)"
export LOOM_SPECS="$here/specs"
train=()
# Unity's MLP and the BERT layer on the CPU backend would take minutes per step: they run on CUDA alone.
for model in "mlp" "alexnet --batch 64" "bert_large -p layers=1 --loss mse" "mlp_fig1 --batch 256"; do
  backends="cuda cpu"
  case "$model" in mlp | bert_large*) backends=cuda ;; esac
  for backend in $backends; do
    log="$out/train_${model%% *}_$backend.log"
    profile=()
    [ "$backend" = cuda ] && profile=(--profile "$out/gpu.profile" --profile-machine dgx_h100)
    # shellcheck disable=SC2086
    timeout 90 "$stage/loom" train --model $model --steps 4 --backend "$backend" --json -q "${profile[@]}" >"$log" 2>&1 || status=1
    train+=("loom train --model $model --backend $backend: $(grep -o '"seconds_per_step":[0-9.e-]*' "$log" || tail -1 "$log")")
  done
done

echo "== summary"
grep -E 'tests ran|PASSED|FAILED' "$out/cuda_tests.log" | tail -3
printf '%s\n' "${bench[@]}" "${torch[@]}" "${train[@]}"
exit $status
