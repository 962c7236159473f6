#!/bin/sh
# Usage: [LOOM_LAUNCH="mpirun -np 6"] schedule_train_matches.sh LOOM SPECS-DIR DATA-DIR
# Every bundled schedule (specs/schedules/), and one of DATA-DIR whose pipeline goes round its stages, is checked and
# written as a plan, then trained (double, 3 steps; through $LOOM_LAUNCH when set, one process per device): its losses
# must equal the single-process run of its model at the schedule's sizes to 1e-9 relative. A schedule that orders against the data is refused, non-zero, naming the cycle at its line.
set -e
loom=$1
specs=$2
data=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
losses() { sed -e 's/.*"losses":\[\([^]]*\)\].*/\1/' | tr ',' '\n'; }
# FILE NAME MODEL-OPTIONS...: the schedule, and its model as `loom train --model` takes it.
check() {
  file=$1 name=$2
  shift 2
  "$loom" train "$@" --steps 3 --dtype double --json | losses > "$dir/model"
  case $file in
    /*) path=$file ;;
    *) path=$specs/schedules/$file ;;
  esac
  "$loom" schedule check "$path" --name "$name" -o "$dir/$name.json"
  # shellcheck disable=SC2086 # LOOM_LAUNCH is a command line
  ${LOOM_LAUNCH:-} "$loom" train --plan "$dir/$name.json" --steps 3 --dtype double --json | losses > "$dir/$name"
  paste "$dir/model" "$dir/$name"
  paste "$dir/model" "$dir/$name" | awk '
    { d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; if (NF != 2 || d > 1e-9 * m) bad = 1; n++ }
    END { exit (bad || n != 3) }'
}
check mlp_fig1.loom mlp_fig1_megatron --model "$specs/models/zoo.loom:mlp_fig1"
check mlp_fig1.loom mlp_fig1_pipeline --model "$specs/models/zoo.loom:mlp_fig1"
# A proved rule applied by the schedule: the plan's soundness chain holds, and `train` audits it before training.
check mlp_fig1.loom mlp_fig1_fused --model "$specs/models/zoo.loom:mlp_fig1"
"$loom" verify "$dir/mlp_fig1_fused.json" | grep -q "chain holds: 1 substitution, all proved"
# What the plan holds besides its graph: the pipeline, its order and the operators recomputed.
"$loom" schedule check "$specs/schedules/mlp_fig1.loom" --name mlp_fig1_pipeline --json > "$dir/summary.json"
grep -q '"recompute": 1' "$dir/summary.json"
grep -q '"microbatches": 4' "$dir/summary.json"
grep -q '"stages": 2' "$dir/summary.json"
gpt3="--model gpt3 -p batch=8 -p seq=16 -p hidden=64 -p heads=4 -p layers=4"
# shellcheck disable=SC2086 # the model's options
check seed_plans.loom gpt3_1f1b $gpt3
# shellcheck disable=SC2086
check seed_plans.loom gpt3_gpipe $gpt3
check seed_plans.loom swin_coshard --model swin -p batch=2 -p resolution=32 -p window=4 -p hidden=32 -p heads=4 -p layers=2
check seed_plans.loom swin_coshard_recompute --model swin -p batch=2 -p resolution=32 -p window=4 -p hidden=32 -p heads=4 -p layers=2
check seed_plans.loom bert_recompute --model bert_large -p batch=2 -p seq=16 -p layers=2 -p hidden=64 -p heads=4 -p vocab=100 \
  -p max_positions=16
check seed_plans.loom bert_checkpoints --model bert_large -p batch=2 -p seq=16 -p layers=2 -p hidden=64 -p heads=4 -p vocab=100 \
  -p max_positions=16
check seed_plans.loom mbart_interlaced --model mbart -p batch=4 -p seq=8 -p layers=2 -p vocab=96 -p hidden=32 -p heads=4
check seed_plans.loom alphafold2_3f1b --model alphafold2 -p batch=4 -p sequences=3 -p residues=4 -p hidden=8 -p heads=2 -p opm=2 \
  -p layers=2 -p recycles=2
# 3F1B goes round the two stages three times, and simulates as it runs.
"$loom" schedule check "$specs/schedules/seed_plans.loom" --name alphafold2_3f1b --json > "$dir/3f1b.json"
grep -q '"laps": 3' "$dir/3f1b.json"
grep -q '"one_order": false' "$dir/3f1b.json"
"$loom" simulate --plan "$dir/alphafold2_3f1b.json" > /dev/null
# Blocks alternating between two stages: the gradient goes back round the laps too, and every
# process runs the first stage's order.
# shellcheck disable=SC2086
check "$data/schedule_loop.loom" gpt3_alternating $gpt3
"$loom" schedule check "$data/schedule_loop.loom" | grep -q "2 laps round the stages; every stage runs the first stage's order"
if "$loom" schedule check "$data/schedule_deadlock.loom" 2> "$dir/err"; then
  echo "a deadlocked schedule was accepted"
  exit 1
fi
cat "$dir/err"
grep -q "schedule_deadlock.loom:6:3: deadlock: .*'fc1' -> 'h' (reads its output) -> 'y' (reads its output) -> 'fc1' (ordered at" "$dir/err"
