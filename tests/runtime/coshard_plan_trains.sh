#!/bin/sh
# Usage: coshard_plan_trains.sh LOOM DATA-DIR
# On one device too small for any plan to keep its activations or its checkpoints whole, `loom optimize`
# co-shards and recomputes; `loom train` runs that plan with the model's losses, holding at its peak
# the activations `loom simulate` says, and --no-coshard refuses with a message.
set -e
loom=$1
data=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
model="--model mlp -p batch=512 -p in=64 -p hidden=256 -p layers=8"
# shellcheck disable=SC2086 # $model is a list of options
"$loom" optimize $model --machine "$data/machine_one_small_device.json" --mcmc-iterations 3 --mcmc-seconds 0 -q -o "$dir/plan.json" > "$dir/optimize.txt"
grep "found by joint+coshard+recompute" "$dir/optimize.txt"
# shellcheck disable=SC2086
if "$loom" optimize $model --machine "$data/machine_one_small_device.json" --mcmc-iterations 3 --mcmc-seconds 0 -q --no-coshard \
  > /dev/null 2> "$dir/refused.txt"; then
  echo "--no-coshard found a plan"
  exit 1
fi
grep "no plan found fits" "$dir/refused.txt"
simulated=$("$loom" simulate --plan "$dir/plan.json" --json | tr -d ' \n' | sed -n 's/.*"activation_bytes":\([0-9.e+]*\).*/\1/p')
"$loom" train --plan "$dir/plan.json" --steps 2 --json > "$dir/plan_train.json"
# shellcheck disable=SC2086
"$loom" train $model --steps 2 --json > "$dir/model_train.json"
measured=$(sed -e 's/.*"peak_activation_bytes":\[\([^],]*\)\].*/\1/' "$dir/plan_train.json")
losses() { sed -e 's/.*"losses":\[\([^]]*\)\].*/\1/' "$1" | tr ',' '\n'; }
losses "$dir/plan_train.json" > "$dir/plan.losses"
losses "$dir/model_train.json" > "$dir/model.losses"
echo "activations (simulated, measured): $simulated $measured"
paste "$dir/plan.losses" "$dir/model.losses"
awk -v s="$simulated" -v m="$measured" 'BEGIN { d = s - m; if (d < 0) d = -d; exit !(s > 0 && d <= 0.1 * s) }'
paste "$dir/plan.losses" "$dir/model.losses" | awk '
  { d = $1 - $2; if (d < 0) d = -d; if (NF != 2 || d > 1e-9 * ($2 < 0 ? -$2 : $2)) bad = 1; n++ }
  END { exit (bad || n != 2) }'
