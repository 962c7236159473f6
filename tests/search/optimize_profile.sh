#!/bin/sh
# Usage: optimize_profile.sh LOOM
# `loom optimize --profile` costs the tasks a profile holds as measured: a profile recorded by
# `loom train --profile` on cpu_host, with every time made 1000 times longer, must make the
# simulated single-device step of the same model on cpu_host at least 100 times longer than the
# roofline's, and the command must say which costs it used.
set -e
loom=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$loom" train --model mlp_fig1 --batch 32 --steps 2 -q --profile "$dir/measured.json" --profile-machine cpu_host > /dev/null
python3 - "$dir/measured.json" "$dir/slow.json" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
for e in db["entries"]:
    for k in ("measured_seconds", "backward_seconds"):
        if e.get(k) is not None:
            e[k] *= 1000
json.dump(db, open(sys.argv[2], "w"))
PY
single() { sed -n 's/.*"single_device_seconds": *\([0-9.e+-]*\).*/\1/p'; }
roofline=$("$loom" optimize --model mlp_fig1 --batch 32 --machine cpu_host --json --no-baselines --no-pipeline --no-measure 2> /dev/null | single)
slow=$("$loom" optimize --model mlp_fig1 --batch 32 --machine cpu_host --json --no-baselines --no-pipeline --profile "$dir/slow.json" 2> /dev/null | single)
awk -v r="$roofline" -v s="$slow" 'BEGIN { if (r == "" || s == "" || s < 100 * r) { print "roofline " r " s, with the slow profile " s " s"; exit 1 } }'
"$loom" optimize --model mlp_fig1 --batch 32 --machine cpu_host --no-baselines --no-pipeline --profile "$dir/slow.json" 2> /dev/null |
  grep -q "costs: *measured where .*slow.json has the task" || { echo "the text output does not say the profile was used"; exit 1; }
