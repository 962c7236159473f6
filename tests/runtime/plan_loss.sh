#!/bin/sh
# Usage: plan_loss.sh LOOM
# A plan records the loss `loom optimize --loss` costed it with; `loom train --plan` and `loom simulate --plan` take that loss
# unless told another, and training with another says so.
set -e
loom=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$loom" optimize --model mlp_fig1 --batch 64 --machine p100 --gpus-per-node 2 --no-baselines --loss mse -q -o "$dir/plan.json"
grep -q '"loss": *"mse"' "$dir/plan.json" || { echo "the plan does not record its loss"; exit 1; }
"$loom" train --plan "$dir/plan.json" --steps 1 --json 2> "$dir/quiet" > "$dir/plan_loss.json"
grep -q '"loss": *"mse"' "$dir/plan_loss.json" || { echo "training did not take the plan's loss"; cat "$dir/plan_loss.json"; exit 1; }
if grep -q "note:" "$dir/quiet"; then echo "training with the plan's own loss said: $(cat "$dir/quiet")"; exit 1; fi
"$loom" train --plan "$dir/plan.json" --steps 1 --loss cross-entropy --json 2> "$dir/told" > "$dir/told.json"
grep -q '"loss": *"cross-entropy"' "$dir/told.json" || { echo "training did not take --loss"; exit 1; }
grep -q "note: training with cross-entropy, while the plan was costed for mse" "$dir/told" || { echo "no note of the other loss"; exit 1; }
"$loom" simulate --plan "$dir/plan.json" -q | grep -q "^loss: mse (the plan's)" || { echo "simulate did not take the plan's loss"; exit 1; }
"$loom" simulate --plan "$dir/plan.json" --loss cross-entropy --json -q | grep -q '"loss": *"cross-entropy"' || { echo "simulate did not take --loss"; exit 1; }
echo "PASS: plan loss"
