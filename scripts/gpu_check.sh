#!/usr/bin/env bash
# Runs the CUDA backend's tests and the GPU benchmarks on a machine with a GPU, from binaries built
# elsewhere (this machine needs only the GPU driver, the CUDA libraries and PyTorch; where it has no
# mpirun, the OpenMPI launcher staged beside the binaries is unpacked into /, adding files and
# replacing none):
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
export LOOM_SPECS="$here/specs"

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"

status=0
echo "== CUDA tests"
"$stage/loom_runtime_cuda_tests" --gtest_color=no --gtest_output="xml:$out/cuda_tests.xml" >"$out/cuda_tests.log" 2>&1 || status=1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|tests ran' "$out/cuda_tests.log"

echo "== several processes on one GPU (values through MPI)"
if ! command -v mpirun >/dev/null && [ -f "$stage/openmpi-launcher.tar.xz" ]; then
  tar -xJf "$stage/openmpi-launcher.tar.xz" --absolute-names --skip-old-files 2>"$out/openmpi_unpack.log" || status=1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mca_base_component_show_load_errors=0
shared=()
for np in 2 4; do
  log="$out/cuda_mpi_np$np.log"
  timeout 300 mpirun --oversubscribe -np "$np" "$stage/loom_runtime_cuda_mpi_tests" --gtest_color=no >"$log" 2>&1 || status=1
  shared+=("$np processes, training suite: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$log" | sort -u | tr '\n' ' ')")
done
# loom train with a two- and four-device plan of Unity's figure-1 MLP: the processes on the GPU give
# the single process's losses (double).
losses() { sed -n 's/.*"losses":\[\([^]]*\)\].*/\1/p' | tr ',' '\n'; }
for np in 2 4; do
  plan="$out/mlp_fig1_$np.json"
  "$stage/loom" optimize --model mlp_fig1 --machine p100 --gpus-per-node "$np" --json -q -o "$plan" >/dev/null 2>&1 || status=1
  timeout 120 "$stage/loom" train --model mlp_fig1 --plan "$plan" --backend cuda --steps 3 --dtype double --json -q 2>"$out/train_np1_$np.err" |
    losses >"$out/losses_np1_$np"
  timeout 120 mpirun --oversubscribe -np "$np" "$stage/loom" train --model mlp_fig1 --plan "$plan" --backend cuda --steps 3 --dtype double \
    --json -q 2>"$out/train_np$np.err" | losses >"$out/losses_np$np"
  if paste "$out/losses_np1_$np" "$out/losses_np$np" | awk '
      { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; if (NF != 2 || d > 1e-9 * m) bad = 1; n++ }
      END { exit (bad || n != 3) }'; then
    shared+=("loom train mlp_fig1, $np processes on the GPU: losses equal the single process's ($(tr '\n' ' ' <"$out/losses_np$np")); $(head -1 "$out/train_np$np.err")")
  else
    status=1
    shared+=("loom train mlp_fig1, $np processes on the GPU: losses DIFFER: $(paste "$out/losses_np1_$np" "$out/losses_np$np" | tr '\n\t' '; ') $(tail -2 "$out/train_np$np.err")")
  fi
done

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

# A step's time split between the operators' tasks (forward, backward), the optimizer's updates
# of the weights, and the rest (the loss, the executor), from a run whose kernels are made to
# finish one at a time (CUDA_LAUNCH_BLOCKING=1): queued kernels would leave their time to
# whatever next waits for the device.
step_shares() {
  python3 - "$1" <<'PY' 2>&1 | tail -1
import json, sys
run = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")][-1]
steps = max(run["timed_steps"], 1)
def total(entries, seconds, tasks):
    return sum(p[seconds] * p[tasks] for p in entries) / steps
updates = [p for p in run["profile"] if p["op"].endswith("_update")]
tasks = [p for p in run["profile"] if not p["op"].endswith("_update")]
forward, backward = total(tasks, "measured_seconds", "tasks"), total(tasks, "backward_seconds", "backward_tasks")
update = total(updates, "measured_seconds", "tasks")
rest = run["seconds_per_step"] - forward - backward - update
print(f"per step: forward {forward:.4f} s, backward {backward:.4f} s, weight updates {update:.4f} s, the rest {rest:.4f} s")
PY
}

echo "== loom train, CUDA backend against the CPU backend ($(nproc) cores)"
train=()
# The large models would take seconds to minutes per step on the CPU backend: only the small MLP runs on both.
for model in "mlp" "alexnet --batch 64" "bert_large -p layers=1 --loss mse" "mlp_fig1 --batch 256"; do
  backends=cuda
  case "$model" in mlp_fig1*) backends="cuda cpu" ;; esac
  for backend in $backends; do
    log="$out/train_${model%% *}_$backend.log"
    # shellcheck disable=SC2086
    timeout 90 "$stage/loom" train --model $model --steps 12 --warmup 2 --backend "$backend" --json -q >"$log" 2>&1 || status=1
    train+=("loom train --model $model --backend $backend: $(grep -o '"seconds_per_step":[0-9.e-]*' "$log" || tail -1 "$log")")
    if [ "$backend" = cuda ]; then
      split="$out/train_${model%% *}_split.log"
      # shellcheck disable=SC2086
      CUDA_LAUNCH_BLOCKING=1 timeout 90 "$stage/loom" train --model $model --steps 6 --warmup 2 --backend cuda --json -q \
        --profile "$out/gpu.profile" --profile-machine dgx_h100 >"$split" 2>&1 || status=1
      train+=("  kernels one at a time, $(step_shares "$split")")
    fi
  done
done

echo "== summary"
grep -E 'tests ran|PASSED|FAILED' "$out/cuda_tests.log" | tail -3
printf '%s\n' "${shared[@]}" "${bench[@]}" "${torch[@]}" "${train[@]}"
exit $status
