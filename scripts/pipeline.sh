#!/usr/bin/env bash
# Loom's main job, end to end on its default: check the bundled specs, generate candidate rules
# and prove them with Z3, optimize a model for a simulated cluster with the proved rules, audit the
# plan's soundness chain, then train the plan a few steps on CPU ranks under mpirun (each rank
# audits it again before any step) and compare with the single-process run.
#
#   scripts/pipeline.sh [BUILD_DIR] [OUT_DIR]
#
# Environment: LOOM_PIPELINE_MODEL (default candle_uno, whose feature towers are concatenated, so
# that rules generated here apply), LOOM_PIPELINE_SIZES (its size options, default a small
# CANDLE-Uno that trains in seconds), LOOM_PIPELINE_LOSS (default mse: its output is one number per
# sample), LOOM_PIPELINE_DEVICES (default 4), LOOM_PIPELINE_STEPS (default 5). Every artifact stays
# in OUT_DIR (default pipeline-out/).
set -euo pipefail

build=${1:-build}
out=${2:-pipeline-out}
model=${LOOM_PIPELINE_MODEL:-candle_uno}
read -r -a sizes <<< "${LOOM_PIPELINE_SIZES---batch 256 -p dense_width=256 -p feature_width=256 -p feature_layers=2 -p dense_layers=2}"
loss=${LOOM_PIPELINE_LOSS:-mse}
devices=${LOOM_PIPELINE_DEVICES:-4}
steps=${LOOM_PIPELINE_STEPS:-5}
loom="$build/cli/loom"
[ -x "$loom" ] || { echo "pipeline: $loom not found: build first (cmake -S . -B $build && cmake --build $build)" >&2; exit 1; }
mpirun=$(command -v mpirun || command -v mpiexec || true)
[ -n "$mpirun" ] || { echo "pipeline: mpirun not found: install openmpi-bin (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$out"
# OpenMPI refuses root unless told; containers and CI run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

stage() { printf '\n== %s\n' "$*"; }

stage "1/6 check the bundled specs (parse, types, axioms on random instances)"
"$loom" check

stage "2/6 generate candidate substitutions (matmul, relu, ewadd, concat with partition/combine/replicate/reduce, up to 3 ops)"
"$loom" generate --ops matmul,relu,ewadd,concat --max-ops 3 --prune-implied -o "$out/generated.json"

stage "3/6 prove them with Z3"
# Exit 2 means some rules stayed unproved; only proved rules are used below.
status=0
"$loom" verify "$out/generated.json" -o "$out/verified.json" --no-cache || status=$?
[ "$status" -le 2 ] || exit "$status"

stage "4/6 optimize $model ${sizes[*]} for $devices simulated GPUs (summit) with the rules just proved and the bundled hand-written ones"
"$loom" optimize --model "$model" "${sizes[@]}" --machine summit --gpus-per-node "$devices" \
  --rules "$out/verified.json" "$(dirname "$0")/../specs/rules/unity.verified.json" -o "$out/plan.json"
python3 - "$out/plan.json" "$out/verified.json" <<'EOF'
import json, sys
plan, generated = (json.load(open(p)) for p in sys.argv[1:3])
ours = {r["id"]: r["text"] for r in generated["rules"]}
applied = [s["rule"] for s in plan["substitutions"] if s["rule"] in ours]
print(f"{len(applied)} of the plan's {len(plan['substitutions'])} substitutions apply rules generated and proved in stages 2 and 3:")
for rule in sorted(set(applied)):
    print(f"  {applied.count(rule)} x {ours[rule]}")
EOF

stage "5/6 audit the plan's soundness chain (every substitution's proof, the replay from the model's graph)"
"$loom" verify "$out/plan.json"

stage "6/6 train the plan $steps steps on $devices CPU ranks (mpirun -np $devices), and the model in one process"
"$mpirun" --oversubscribe -np "$devices" "$loom" train --plan "$out/plan.json" --steps "$steps" --loss "$loss" --dtype double --json \
  | tail -n 1 > "$out/train_plan.json"
"$loom" train --model "$model" "${sizes[@]}" --steps "$steps" --loss "$loss" --dtype double --json | tail -n 1 > "$out/train_model.json"
python3 - "$out/train_plan.json" "$out/train_model.json" <<'EOF'
import json, sys
plan, model = (json.load(open(p)) for p in sys.argv[1:3])
worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(plan["losses"], model["losses"]))
print(f"losses on {plan['processes']} ranks: " + ", ".join(f"{l:.6f}" for l in plan["losses"]))
print(f"largest relative difference from the single-process run: {worst:.2e}")
sys.exit(0 if worst < 1e-9 and len(plan["losses"]) == len(model["losses"]) else 1)
EOF
printf '\nartifacts in %s/: generated.json, verified.json, plan.json, train_plan.json, train_model.json\n' "$out"
