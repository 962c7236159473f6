#!/bin/sh
# Usage: [LOOM_LAUNCH="mpirun -np 2"] run_plan_matches.sh LOOM INPUT.npy MODEL-OPTIONS...
# Optimizes the model for two of this host's CPU ranks (cpu_host, on the roofline; the plan must hold parallel operators), runs its forward pass on INPUT with and without
# the plan (double; the plan's started through $LOOM_LAUNCH when set, one process per device) and checks that the outputs agree
# to 1e-9 relative, and that -o writes the file. The model must have one output.
set -e
loom=$1
input=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$loom" optimize "$@" --machine cpu_host --gpus-per-node 2 --no-measure --json -o "$dir/plan.json" > /dev/null
grep -q '"op": *"partition"\|"op": *"replicate"' "$dir/plan.json" || { echo "the plan has no parallel operator"; exit 1; }
values() { sed -e 's/.*"values":\[\([^]]*\)\].*/\1/' | tr ',' '\n'; }
"$loom" run "$@" "$input" --dtype double --json | values > "$dir/model"
# shellcheck disable=SC2086 # LOOM_LAUNCH is a command line
${LOOM_LAUNCH:-} "$loom" run "$@" --plan "$dir/plan.json" "$input" --dtype double --json | values > "$dir/plan"
${LOOM_LAUNCH:-} "$loom" run "$@" --plan "$dir/plan.json" "$input" -o "$dir/y.npy" -q
test -s "$dir/y.npy" || { echo "-o wrote no file"; exit 1; }
paste "$dir/model" "$dir/plan" | awk '
  { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; if (NF != 2 || d > 1e-9 * (1 + m)) bad = 1; n++ }
  END { exit (bad || n < 100) }'
