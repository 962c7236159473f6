#!/usr/bin/env bash
# Distributed training over the whole zoo: for every zoo model, at small sizes, optimize a plan for
# 4 simulated GPUs, train the plan on 4 CPU ranks (mpirun --oversubscribe -np 4), train the model
# in one process, and check that both runs give the same losses in double precision.
#
#   scripts/zoo_train_check.sh [BUILD_DIR] [OUT_DIR]
#
# Environment: LOOM_ZOO_STEPS (default 100) training steps; LOOM_ZOO_MODELS (default: every model
# of the table below) a space-separated subset; LOOM_ZOO_TIMEOUT (default 300) seconds allowed for
# each optimize or train command. Prints one line per model and exits non-zero if any model fails
# (an error, a time-out, or a loss differing by 1e-9 or more, relative). Every artifact stays in
# OUT_DIR (default zoo-check-out/): MODEL.plan.json, MODEL.optimize.json, MODEL.train_plan.json,
# MODEL.train_model.json and the stderr of each command (MODEL.*.log).
set -euo pipefail

build=${1:-build}
out=${2:-zoo-check-out}
steps=${LOOM_ZOO_STEPS:-100}
limit=${LOOM_ZOO_TIMEOUT:-300}
devices=4
loom="$build/cli/loom"
[ -x "$loom" ] || { echo "zoo_train_check: $loom not found: build first (cmake -S . -B $build && cmake --build $build --target loom)" >&2; exit 1; }
mpirun=$(command -v mpirun || command -v mpiexec || true)
[ -n "$mpirun" ] || { echo "zoo_train_check: mpirun not found: install openmpi-bin (scripts/setup.sh)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "zoo_train_check: python3 not found" >&2; exit 1; }
mkdir -p "$out"
# OpenMPI refuses root unless told; containers and CI run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Model -> size options (`loom show --model NAME` lists them). The sizes keep 100 steps on 4 ranks
# of a 2-core machine to a few seconds: tiny widths, one or two layers, batch 4-8 (divisible by the
# 4 devices), small images, few rows per embedding table.
#  - resnext50, resnet101, inception_v3 have no depth option: their full depth stays (16 and 33
#    bottlenecks, all Inception blocks); width_div=16 shrinks every channel count and the images are small.
#    Their optimize takes 20-40 s, the bulk of this script's time, and they are the slowest to
#    train on 4 ranks (inception_v3 4-40 s for 100 steps, depending on the 2-core machine's load).
#  - resnext50: groups=2, since the 3x3 convolutions' channels (128/16 = 8 in the first stage)
#    must divide by the groups; the default 32 does not at width_div=16.
#  - inception_v3: 75x75 is the smallest image its stride-2 stem and reductions accept (at 74 a
#    Mixed_7a convolution gets an input smaller than its kernel), and
#    width_div=16 the largest divisor of every channel count (32 does not divide 80).
#  - alexnet: 64x64 images; at 32x32 its last max pool gets a 1x1 input and is rejected.
#  - dlrm: the bottom (13-512-256-64) and top (512-256-1) MLP widths are fixed by the model; only
#    the dense features, tables, rows and embedding size shrink.
#  - alphafold2: one Evoformer block, 4 MSA sequences of 8 residues.
models=(
  "resnext50     --batch 4 -p image=32 -p classes=10 -p width_div=16 -p groups=2"
  "inception_v3  --batch 4 -p image=75 -p classes=10 -p width_div=16"
  "bert_large    --batch 4 -p seq=8 -p layers=1 -p hidden=16 -p heads=2 -p vocab=32 -p max_positions=8"
  "dlrm          --batch 8 -p dim=4 -p dense_features=4 -p tables=2 -p rows=16"
  "xdl           --batch 8 -p dim=4 -p tables=2 -p rows=16 -p hidden=8"
  "candle_uno    --batch 8 -p feature_layers=1 -p feature_width=8 -p dense_layers=1 -p dense_width=8"
  "mlp           --batch 8 -p in=8 -p hidden=16 -p layers=1"
  "mlp_fig1      --batch 8 -p in=16 -p hidden=16 -p out=4"
  "alexnet       --batch 4 -p image=64 -p classes=10 -p width_div=16"
  "resnet101     --batch 4 -p image=32 -p classes=10 -p width_div=16"
  "rnntc         --batch 4 -p steps=4 -p layers=1 -p hidden=8 -p vocab=32 -p classes=2"
  "rnnlm         --batch 4 -p steps=4 -p layers=1 -p hidden=8 -p vocab=32"
  "nmt           --batch 4 -p steps=4 -p layers=1 -p hidden=8 -p vocab=32"
  "swin          --batch 4 -p resolution=32 -p patch=4 -p window=4 -p layers=2 -p hidden=16 -p heads=2"
  "gpt3          --batch 4 -p seq=8 -p layers=1 -p embeddings=1 -p vocab=32 -p hidden=16 -p heads=2"
  "mbart         --batch 4 -p seq=8 -p layers=2 -p vocab=32 -p hidden=16 -p heads=2"
  "alphafold2    --batch 4 -p sequences=4 -p residues=8 -p layers=1 -p opm=4 -p hidden=16 -p heads=2"
)

# Every zoo model must have a row, so a model added to the zoo is not silently skipped.
listed=$("$loom" show --list | grep -E '^[a-z0-9_]+$' || true)
for name in $listed; do
  found=0
  for row in "${models[@]}"; do [ "${row%% *}" = "$name" ] && found=1; done
  [ "$found" = 1 ] || { echo "zoo_train_check: zoo model $name has no row in the size table of $0" >&2; exit 1; }
done

selected=${LOOM_ZOO_MODELS:-}
# Writes the table line for one model from its artifacts; exit status 0 only on a match.
summarize() {
  python3 - "$@" <<'EOF'
import collections, json, math, sys
name, optimize, plan, train_plan, train_model, steps = sys.argv[1:7]
parallel_ops = ("partition", "combine", "replicate", "reduce", "pipeline", "batch",
                "allreduce", "reduce_scatter", "all_gather", "all_to_all")
chosen = json.load(open(optimize))["chosen"]
nodes = json.load(open(plan))["graph"]["nodes"]
used = {d for n in nodes for d in n["view"]["devices"]}
counts = collections.Counter(n["op"] for n in nodes if n["op"] in parallel_ops)
ops = ",".join(f"{op}:{counts[op]}" for op in parallel_ops if counts[op]) or "none"
summary = f"{chosen} {len(used)}dev {ops}"
a, b = json.load(open(train_plan)), json.load(open(train_model))
la, lb = a["losses"], b["losses"]
ok = len(la) == len(lb) == int(steps) and all(math.isfinite(x) for x in la + lb)
# As scripts/pipeline.sh: relative to the loss, absolute below 1.
diffs = [abs(x - y) / max(1.0, abs(y)) for x, y in zip(la, lb)]
worst = max(diffs) if diffs else math.inf
ok = ok and worst < 1e-9
verdict = "PASS" if ok else "FAIL"
if diffs and worst >= 1e-9:
    first = next(i for i, d in enumerate(diffs) if d >= 1e-9)
    verdict += f" (first differing step {first}: {la[first]!r} vs {lb[first]!r})"
elif not ok:
    verdict += f" ({len(la)} and {len(lb)} losses for {steps} steps, or a non-finite loss)"
print(f"{name:<13} {summary:<66} {a['seconds_per_step'] * 1e3:>9.3f} {b['seconds_per_step'] * 1e3:>9.3f} "
      f"{worst:>9.2e}  {verdict}")
sys.exit(0 if ok else 1)
EOF
}

printf '%-13s %-66s %9s %9s %9s  %s\n' model "plan (found by, devices used, parallel ops)" \
  "ms/4rk" "ms/1proc" "rel.diff" result
failed=()
# Records a failure of the current model ($name): the cause and the log that tells more.
fail() { printf '%-13s FAIL: %s (see %s)\n' "$name" "$1" "$2"; failed+=("$name"); }
# Runs a command under the time limit; on failure `why` says how it ended.
why=
limited() {
  local status=0
  timeout "$limit" "$@" || status=$?
  case $status in
    0) return 0 ;;
    124) why="took more than ${limit}s (LOOM_ZOO_TIMEOUT)" ;;
    *) why="exited with status $status" ;;
  esac
  return 1
}
for row in "${models[@]}"; do
  read -r name options <<<"$row"
  if [ -n "$selected" ] && [[ " $selected " != *" $name "* ]]; then continue; fi
  read -ra opts <<<"$options"
  base="$out/$name"

  if ! limited "$loom" optimize --model "$name" "${opts[@]}" --machine summit \
      --gpus-per-node "$devices" -o "$base.plan.json" --json -q >"$base.optimize.json" 2>"$base.optimize.log"; then
    fail "optimize $why" "$base.optimize.log"; continue
  fi
  if ! limited "$mpirun" --oversubscribe -np "$devices" "$loom" train --plan "$base.plan.json" \
      --steps "$steps" --dtype double --json -q >"$base.train_plan.out" 2>"$base.train_plan.log"; then
    fail "training the plan on $devices ranks $why" "$base.train_plan.log"; continue
  fi
  grep '^{' "$base.train_plan.out" | tail -n 1 >"$base.train_plan.json" || true
  if ! limited "$loom" train --model "$name" "${opts[@]}" --steps "$steps" --dtype double \
      --json -q >"$base.train_model.out" 2>"$base.train_model.log"; then
    fail "training the model in one process $why" "$base.train_model.log"; continue
  fi
  grep '^{' "$base.train_model.out" | tail -n 1 >"$base.train_model.json" || true
  summarize "$name" "$base.optimize.json" "$base.plan.json" "$base.train_plan.json" \
    "$base.train_model.json" "$steps" 2>"$base.compare.log" || {
    [ -s "$base.compare.log" ] && printf '%-13s FAIL: comparing the losses failed (see %s)\n' "$name" "$base.compare.log"
    failed+=("$name")
  }
done

if [ "${#failed[@]}" -gt 0 ]; then
  printf '\nzoo_train_check: %d model(s) failed: %s; artifacts in %s/\n' "${#failed[@]}" "${failed[*]}" "$out" >&2
  exit 1
fi
printf '\nzoo_train_check: every model trained on %d ranks as in one process; artifacts in %s/\n' "$devices" "$out"
