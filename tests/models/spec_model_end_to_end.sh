#!/bin/sh
# Usage: spec_model_end_to_end.sh LOOM FILE.loom MODEL
# A model of the spec language with a user-written operator, as docs/language.md walks through it: `loom check` accepts
# the file and counts its model, `loom optimize` plans it for two devices, and `loom train` trains the model and the
# plan. Their losses must agree to 1e-9 relative at every step, and change over the steps.
set -e
loom=$1
file=$2
model=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$loom" check "$file" > "$dir/check"
grep -q "1 models, 0 errors" "$dir/check" || { echo "loom check: $(cat "$dir/check")"; exit 1; }
"$loom" optimize --model "$file:$model" -p batch=8 -p hidden=16 --machine p100 --gpus-per-node 2 -o "$dir/plan.json" > /dev/null 2>&1
losses() { sed -e 's/.*"losses":\[\([^]]*\)\].*/\1/' | tr ',' '\n'; }
"$loom" train --model "$file:$model" -p batch=8 -p hidden=16 --steps 4 --json 2> /dev/null | losses > "$dir/model"
"$loom" train --plan "$dir/plan.json" --steps 4 --json 2> /dev/null | losses > "$dir/plan"
paste "$dir/model" "$dir/plan" | awk '
  { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; if (NF != 2 || d > 1e-9 * (1 + m)) bad = 1; if (n == 0) first = $1; last = $1; n++ }
  END { if (bad) print "the plan trains to other losses"; if (n != 4) print n " losses, not 4"; if (first == last) print "the loss did not change";
        exit (bad || n != 4 || first == last) }'
