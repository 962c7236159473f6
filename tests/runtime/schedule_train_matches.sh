#!/bin/sh
# Usage: [LOOM_LAUNCH="mpirun -np 6"] schedule_train_matches.sh LOOM SPECS-DIR DATA-DIR
# Every bundled schedule of Unity's figure-1 MLP is checked and written as a plan, then trained (double, 3 steps; through
# $LOOM_LAUNCH when set, one process per device): its losses must equal the single-process run of the model to 1e-9 relative.
# A schedule that orders against the data is refused, non-zero, naming the cycle at its line.
set -e
loom=$1
specs=$2
data=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
losses() { sed -e 's/.*"losses":\[\([^]]*\)\].*/\1/' | tr ',' '\n'; }
"$loom" train --model "$specs/models/zoo.loom:mlp_fig1" --steps 3 --dtype double --json | losses > "$dir/model"
for name in mlp_fig1_megatron mlp_fig1_pipeline; do
  "$loom" schedule check "$specs/schedules/mlp_fig1.loom" --name "$name" -o "$dir/$name.json"
  # shellcheck disable=SC2086 # LOOM_LAUNCH is a command line
  ${LOOM_LAUNCH:-} "$loom" train --plan "$dir/$name.json" --steps 3 --dtype double --json | losses > "$dir/$name"
  paste "$dir/model" "$dir/$name"
  paste "$dir/model" "$dir/$name" | awk '
    { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; if (NF != 2 || d > 1e-9 * m) bad = 1; n++ }
    END { exit (bad || n != 3) }'
done
if "$loom" schedule check "$data/schedule_deadlock.loom" 2> "$dir/err"; then
  echo "a deadlocked schedule was accepted"
  exit 1
fi
cat "$dir/err"
grep -q "schedule_deadlock.loom:6:3: deadlock: .*'fc1' -> 'h' (reads its output) -> 'y' (reads its output) -> 'fc1' (ordered at" "$dir/err"
