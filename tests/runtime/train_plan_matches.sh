#!/bin/sh
# Usage: [LOOM_LAUNCH="mpirun -np 2"] train_plan_matches.sh LOOM MODEL-OPTIONS...
# Optimizes the model for two devices (the plan must hold parallel operators), trains it with and without the plan (double, 3 steps;
# the plan's run started through $LOOM_LAUNCH when set, one process per device) and checks that the losses agree to 1e-9 relative.
set -e
loom=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$loom" optimize "$@" --machine p100 --gpus-per-node 2 --json -o "$dir/plan.json" > /dev/null
losses() { sed -e 's/.*"losses":\[\([^]]*\)\].*/\1/' | tr ',' '\n'; }
"$loom" train "$@" --steps 3 --dtype double --json | losses > "$dir/model"
# shellcheck disable=SC2086 # LOOM_LAUNCH is a command line
${LOOM_LAUNCH:-} "$loom" train "$@" --plan "$dir/plan.json" --steps 3 --dtype double --json | losses > "$dir/plan"
grep -q '"op": *"partition"\|"op": *"replicate"' "$dir/plan.json" || { echo "the plan has no parallel operator"; exit 1; }
paste "$dir/model" "$dir/plan"
paste "$dir/model" "$dir/plan" | awk '
  { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; if (NF != 2 || d > 1e-9 * m) bad = 1; n++ }
  END { exit (bad || n != 3) }'
