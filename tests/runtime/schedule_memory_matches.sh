#!/bin/sh
# Usage: [LOOM_LAUNCH="mpirun -np 6"] schedule_memory_matches.sh LOOM SPECS-DIR
# Bundled schedules that recompute, co-shard, split, pipeline or go round their stages (3F1B) (specs/schedules/) are written as plans and trained
# (float, 2 steps; through $LOOM_LAUNCH when set, one process per device). On every device, the activation peak each
# process measures (`loom train --json`, peak_activation_bytes) must be the simulator's activation memory (`loom
# simulate --json`, activation_bytes) within 10 %; the plan recomputing activations must hold less than the same plan
# keeping them, and a 1F1B pipeline's first stage less than GPipe's, in both.
set -e
loom=$1
specs=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
simulated() { "$loom" simulate --plan "$1" --json | tr -d ' \n' | sed -e 's/},{/}\n{/g' | sed -n 's/.*"activation_bytes":\([0-9.e+]*\).*/\1/p'; }
measured() {
  # shellcheck disable=SC2086 # LOOM_LAUNCH is a command line
  ${LOOM_LAUNCH:-} "$loom" train --plan "$1" --steps 2 --json | sed -e 's/.*"peak_activation_bytes":\[\([^]]*\)\].*/\1/' | tr ',' '\n'
}
# FILE NAME: the devices' simulated and measured bytes side by side; fails beyond 10 % on any device.
check() {
  "$loom" schedule check "$specs/schedules/$1" --name "$2" -o "$dir/$2.json" > /dev/null
  simulated "$dir/$2.json" > "$dir/$2.simulated"
  measured "$dir/$2.json" > "$dir/$2.measured"
  echo "$2 (device, simulated, measured):"
  paste "$dir/$2.simulated" "$dir/$2.measured" | awk '
    { d = $1 - $2; if (d < 0) d = -d; printf "  %d %d %d\n", NR - 1, $1, $2; if (NF != 2 || d > 0.1 * $1) bad = 1; n++ }
    END { exit (bad || n != 6) }'
}
check mlp_fig1.loom mlp_fig1_megatron
check mlp_fig1.loom mlp_fig1_fused
check seed_plans.loom swin_coshard
check seed_plans.loom swin_coshard_recompute
check seed_plans.loom bert_recompute
check seed_plans.loom bert_checkpoints
check mlp_fig1.loom mlp_fig1_pipeline
check seed_plans.loom gpt3_1f1b
check seed_plans.loom gpt3_gpipe
check seed_plans.loom alphafold2_3f1b
awk -v s1="$(head -1 "$dir/gpt3_1f1b.simulated")" -v m1="$(head -1 "$dir/gpt3_1f1b.measured")" \
  -v sg="$(head -1 "$dir/gpt3_gpipe.simulated")" -v mg="$(head -1 "$dir/gpt3_gpipe.measured")" 'BEGIN { exit !(s1 < sg && m1 < mg) }'
# The same plan keeping every activation holds more, simulated and measured.
sizes=$(sed -n 's/^schedule bert_checkpoints for \(bert_large<[^>]*>\).*/\1/p' "$specs/schedules/seed_plans.loom")
printf 'schedule bert_kept for %s {\n  assign "*" to 0;\n}\n' "$sizes" > "$dir/kept.loom"
"$loom" schedule check "$dir/kept.loom" -o "$dir/kept.json" > /dev/null
kept_simulated=$(simulated "$dir/kept.json" | head -1)
kept_measured=$(measured "$dir/kept.json" | head -1)
echo "bert_checkpoints keeping its activations (simulated, measured): $kept_simulated $kept_measured"
awk -v s="$kept_simulated" -v m="$kept_measured" -v cs="$(head -1 "$dir/bert_checkpoints.simulated")" \
  -v cm="$(head -1 "$dir/bert_checkpoints.measured")" 'BEGIN { exit !(cs < s && cm < m) }'
