#!/bin/sh
# Usage: LOOM_LAUNCH="mpirun -np 2" trace_plan.sh LOOM MODEL-OPTIONS...
# Optimizes the model for two devices, traces a step of the plan on two processes (`loom train
# --trace`) and simulates the plan (`loom simulate --trace`); both files must be trace-event JSON
# with a row for each process or device, and the measured step's operator task labels must be the
# simulated ones.
set -e
loom=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
plan=$dir/plan.json
"$loom" optimize "$@" --machine p100 --gpus-per-node 2 --json -o "$plan" > /dev/null
# shellcheck disable=SC2086 # LOOM_LAUNCH is a command line
${LOOM_LAUNCH:-} "$loom" train --plan "$plan" --steps 3 --trace "$dir/measured.json" -q | grep -q "wrote the trace of step 3 to $dir/measured.json"
"$loom" simulate --plan "$plan" --trace "$dir/simulated.json" -q | grep -q "wrote the timeline of every task to $dir/simulated.json"
for f in measured:process simulated:device; do
  file=${f%%:*}
  row=${f##*:}
  grep -q '"traceEvents"' "$dir/$file.json" || { echo "FAIL: $file: no traceEvents"; exit 1; }
  for d in 0 1; do
    grep -q "\"args\":{\"name\":\"$row $d\"},\"name\":\"process_name\"" "$dir/$file.json" || { echo "FAIL: $file: no row for $row $d"; exit 1; }
  done
  grep -o '"name":"[A-Za-z_0-9]*#[0-9]*\[[0-9]*\]\( (backward)\)\{0,1\}"' "$dir/$file.json" | sort -u > "$dir/$file.tasks"
done
[ -s "$dir/measured.tasks" ] || { echo "FAIL: the measured step has no operator task"; exit 1; }
differ=$(comm -3 "$dir/measured.tasks" "$dir/simulated.tasks")
[ -z "$differ" ] || { echo "FAIL: operator tasks measured or simulated alone (measured first, simulated indented): $differ"; exit 1; }
echo "PASS: trace plan ($(wc -l < "$dir/measured.tasks") operator tasks in both)"
