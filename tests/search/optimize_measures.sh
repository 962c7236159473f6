#!/bin/sh
# Usage: optimize_measures.sh LOOM
# `loom optimize` and `loom simulate` measure the operator tasks they cost on this host's kind of
# device (cpu_host) the first time, keep them in the user's profile database, and measure nothing
# the next time; --no-measure and machines of other device kinds measure nothing.
set -e
loom=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export XDG_CACHE_HOME="$dir/cache"
fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c "import json, sys; print(json.load(sys.stdin)[sys.argv[1]])" "$1"; }
model="--model mlp_fig1 --batch 32 --no-baselines --no-pipeline"
db="$dir/cache/loom/profiles/cpu_host.json"

first=$("$loom" optimize $model --machine cpu_host --json -o "$dir/plan.json")
[ "$(echo "$first" | field measured_tasks)" -gt 0 ] || fail "the first run measured nothing"
[ "$(echo "$first" | field profile)" = "$db" ] || fail "the measurements were not kept in $db"
python3 - "$db" <<'PY' || fail "the database does not hold the measured tasks"
import json, sys
db = json.load(open(sys.argv[1]))
entries = [e for e in db["entries"] if e["device"] == "cpu"]
assert entries and all(e["measured_seconds"] > 0 for e in entries), entries
# Operator tasks keep the roofline beside them; a layout change's piece has none of its own.
changes = [e for e in entries if e["op"] == "layout_change"]
assert changes, "no layout change was measured"
assert all(e.get("simulated_seconds") for e in entries if e["op"] != "layout_change"), entries
PY
second=$("$loom" optimize $model --machine cpu_host --json)
[ "$(echo "$second" | field measured_tasks)" -eq 0 ] || fail "the second run measured again"
[ "$(echo "$second" | field best_seconds)" = "$(echo "$first" | field best_seconds)" ] || fail "the same figures gave another plan"

"$loom" simulate --plan "$dir/plan.json" | grep -q "^costs: measured where $db has the task ([0-9]* entries, 0 of them measured on this host now" ||
  fail "simulate does not say it used the measured figures"

echo "not a database" > "$db"
none=$("$loom" optimize $model --machine cpu_host --json --no-measure) || fail "--no-measure read this user's database"
[ "$(echo "$none" | field measured_tasks)" -eq 0 ] || fail "--no-measure measured"
[ "$(echo "$none" | field profile_entries)" -eq 0 ] || fail "--no-measure used a database"
[ "$(cat "$db")" = "not a database" ] || fail "--no-measure wrote the database"
rm "$db"
summit=$("$loom" optimize $model --machine summit --json)
[ "$(echo "$summit" | field measured_tasks)" -eq 0 ] || fail "summit's V100 tasks were measured on this host"

if "$loom" optimize $model --machine summit --profile "$dir/missing.json" > "$dir/out" 2>&1; then fail "a missing --profile was accepted"; fi
grep -q "missing.json: no such file" "$dir/out" || fail "the missing profile is not named: $(cat "$dir/out")"
echo "PASS: optimize measures"
