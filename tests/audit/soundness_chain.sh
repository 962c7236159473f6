#!/usr/bin/env bash
# The soundness chain end to end, with planted faults: each fault is refused with its message and a
# non-zero exit, and nothing is trained; a sound plan audits and trains.
#
#   soundness_chain.sh LOOM MPIEXEC CASE
#
# CASE: sound_plan, false_rule, tampered_library, tampered_plan, stale_proof, untypable_rule,
# sides_differ. Each case works in a scratch directory with its own verification cache.
set -uo pipefail
loom=$1
mpiexec=$2
case_name=$3
specs=$(cd "$(dirname "$0")/../../specs" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME="$work/cache"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
model=(--model mlp_fig1 --batch 64 -p hidden=256 --machine summit --gpus-per-node 4)

fail() { echo "FAIL: $*"; exit 1; }

# run EXPECTED_EXIT PATTERN COMMAND...: the command's exit status and combined output.
run() {
  local expected=$1 pattern=$2
  shift 2
  local output status
  output=$("$@" 2>&1)
  status=$?
  echo "\$ ${*}"
  echo "$output" | head -c 4000
  echo "[exit $status]"
  [ "$status" -eq "$expected" ] || fail "expected exit $expected, got $status"
  [ -z "$pattern" ] || [[ "$output" =~ $pattern ]] || fail "expected output matching: $pattern"
}

# A plan made with the bundled verified library (it applies the proved fusion of matmul and relu).
good_plan() {
  run 0 "fuse_matmul_relu \(algebraic, proved\)" "$loom" optimize "${model[@]}" -q -o "$work/plan.json"
}

# The operators a rule file written for `loom check` (which reads only the files it is given) uses.
imports() { printf 'import "%s/ops/core.loom";\nimport "%s/ops/shape.loom";\nimport "%s/ops/parallel.loom";\n' "$specs" "$specs" "$specs"; }

# refused_everywhere RULE PATTERN: a rules file holding RULE is refused, with PATTERN, by every
# command that loads rules.
refused_everywhere() {
  { imports; echo "$1"; } > "$work/rules.loom"
  run 1 "$2" "$loom" check -q "$work/rules.loom"
  run 1 "$2" "$loom" verify -q "$work/rules.loom"
  run 1 "$2" "$loom" optimize "${model[@]}" --rules "$work/rules.loom" --include-unverified
  run 1 "$2" "$loom" apply --model mlp_fig1 --rules "$work/rules.loom"
}

untrained() { [ ! -e "$work/ckpt" ] || fail "a checkpoint was written: the plan was trained"; }

case "$case_name" in
  sound_plan)
    good_plan
    run 0 "chain holds: 1 substitution, all proved; replayed from the source graph" "$loom" verify "$work/plan.json"
    run 0 '"holds": true' "$loom" verify --json "$work/plan.json"
    run 0 "soundness chain holds" "$loom" simulate --plan "$work/plan.json"
    run 0 "chain holds.*
.*2 steps" "$loom" train --plan "$work/plan.json" --steps 2 --checkpoint "$work/ckpt"
    [ -e "$work/ckpt" ] || fail "the sound plan was not trained"
    run 0 "2 steps" "$mpiexec" -np 4 "$loom" train --plan "$work/plan.json" --steps 2 -q
    ;;
  false_rule)
    cat > "$work/false.loom" <<'RULES'
rule relu_merge: forall x: [m, n], y: [m, n]. ewadd(relu(x), relu(y)) => relu(ewadd(x, y));
rule relu_drop: forall x: [m, n]. relu(x) => x;
RULES
    run 2 "rule relu_merge: .*
refuted" "$loom" verify -q "$work/false.loom"
    run 1 "refusing rules without a valid proof:
  [^ ]*false.loom: rule relu_merge is unverified" "$loom" optimize "${model[@]}" --rules "$work/false.loom" -o "$work/plan.json"
    [ ! -e "$work/plan.json" ] || fail "a plan was written with unproved rules"
    run 0 "relu_drop \(algebraic, unverified\)" "$loom" optimize "${model[@]}" --rules "$work/false.loom" --include-unverified -o "$work/plan.json"
    grep -q '"include_unverified": true' "$work/plan.json" || fail "the plan does not record --include-unverified"
    run 2 "chain broken: substitution 1 \(rule relu_drop\) is refuted: the sides differ on x = " "$loom" verify "$work/plan.json"
    run 1 "refusing to train: substitution 1 \(rule relu_drop\) is refuted" \
      "$loom" train --plan "$work/plan.json" --steps 2 --checkpoint "$work/ckpt"
    untrained
    # A forged record, bound to the rule's very hash, does not make it proved: the audit proves again.
    python3 - "$work/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
step = plan["substitutions"][0]
rule = next(r for r in plan["rules"] if r["id"] == step["rule"])
rule["verification"] = {"status": "proved", "core": [], "rule_hash": step["rule_hash"], "loom_version": "0.1.0", "seconds": 0}
step["status"] = "proved"
json.dump(plan, open(sys.argv[1], "w"))
PY
    run 2 "chain broken: substitution 1 \(rule relu_drop\) is refuted" "$loom" verify "$work/plan.json"
    # Each rank writes to its own file, so the check does not depend on how their lines interleave.
    # mpiexec stops the job when the first rank exits, so only that one is sure to have printed.
    run 1 "" "$mpiexec" -np 4 --output-filename "$work/ranks" \
      "$loom" train --plan "$work/plan.json" --steps 2 --checkpoint "$work/ckpt"
    grep -qs "^rank [0-3] of 4: .*refusing to train: substitution 1 (rule relu_drop) is refuted" \
      "$work"/ranks/*/rank.*/stderr || fail "no rank refused the plan"
    untrained
    run 0 "warning: .*--trust-plan" "$loom" train --plan "$work/plan.json" --steps 1 --trust-plan -q
    ;;
  tampered_library)
    python3 - "$specs/rules/unity.verified.json" "$work/tampered.json" <<'PY'
import json, sys
library = json.load(open(sys.argv[1]))
rule = next(r for r in library["rules"] if r["id"] == "fuse_matmul_relu")
assert rule["verification"]["status"] == "proved"
rule["text"] = "rule fuse_matmul_relu: matmul(x, w) => matmul_relu(x, w)"
json.dump(library, open(sys.argv[2], "w"))
PY
    run 1 "tampered.json: rule fuse_matmul_relu is stale: the rule has changed since it was proved" \
      "$loom" optimize "${model[@]}" --rules "$work/tampered.json" -o "$work/plan.json"
    [ ! -e "$work/plan.json" ] || fail "a plan was written from a tampered library"
    ;;
  tampered_plan)
    good_plan
    python3 - "$work/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
node = next(n for n in plan["graph"]["nodes"] if n["op"] == "matmul")
node["op"] = "matmul_relu"
json.dump(plan, open(sys.argv[1], "w"))
PY
    run 2 "chain broken: replay mismatch: node [0-9]+ \"fc2.matmul\" \(op matmul_relu\) computes a value that no operator of the replayed graph computes" \
      "$loom" verify "$work/plan.json"
    run 1 "refusing to train: replay mismatch" "$loom" train --plan "$work/plan.json" --steps 2 --checkpoint "$work/ckpt"
    untrained
    run 0 "chain broken: replay mismatch" "$loom" simulate --plan "$work/plan.json"
    ;;
  stale_proof)
    good_plan
    cp -r "$specs" "$work/specs"
    # The axiom the fusion's proof used, edited (its variables renamed: still sound): the proofs
    # made with it are stale.
    edit_axiom() {
      python3 - "$work/specs/axioms" "$1" <<'PY'
import pathlib, re, sys
for path in pathlib.Path(sys.argv[1]).glob("*.loom"):
    text = path.read_text()
    match = re.search(r"axiom matmul_relu_fused:[^;]*;", text)
    if match:
        old = match.group(0)
        new = re.sub(r"\bw\b", "v", old) if sys.argv[2] == "edit" else old.replace("matmul_relu_fused:", "matmul_relu_fused_again:")
        assert new != old
        path.write_text(text.replace(old, new))
        break
else:
    sys.exit("no axiom matmul_relu_fused")
PY
    }
    edit_axiom edit
    run 1 "rule fuse_matmul_relu is stale: axiom matmul_relu_fused, which the proof used, has changed since" \
      env LOOM_SPECS="$work/specs" "$loom" optimize "${model[@]}" -o "$work/plan2.json"
    edit_axiom rename
    run 1 "rule fuse_matmul_relu is stale: axiom matmul_relu_fused, which the proof used, is no longer in the library" \
      env LOOM_SPECS="$work/specs" "$loom" optimize "${model[@]}" -o "$work/plan2.json"
    # The plan's proof is stale under the edited specs, and proved again from them.
    run 0 "1. fuse_matmul_relu \(algebraic\): re-proved" env LOOM_SPECS="$work/specs" "$loom" verify "$work/plan.json"
    # Without any axiom that gives the fusion, it cannot be proved again: training is refused.
    python3 - "$work/specs/axioms" <<'PY'
import pathlib, re, sys
for path in pathlib.Path(sys.argv[1]).glob("*.loom"):
    text = path.read_text()
    cut = re.sub(r"axiom matmul_relu_fused_again:[^;]*;", "", text)
    if cut != text:
        path.write_text(cut)
PY
    run 1 "refusing to train: substitution 1 \(rule fuse_matmul_relu\) is stale: not proved: its proof record is stale \(axiom matmul_relu_fused, which the proof used, is no longer in the library\), and proving it again gave unknown" \
      env LOOM_SPECS="$work/specs" "$loom" train --plan "$work/plan.json" --steps 2 --checkpoint "$work/ckpt"
    untrained
    ;;
  untypable_rule)
    refused_everywhere 'rule copies_summed: forall x: [m, n]. relu(x) => reduce<2>(replicate<2>(relu(x)));' \
      "rules.loom:4:6: rule copies_summed: cannot be typed: .*the right-hand side"
    ;;
  sides_differ)
    refused_everywhere 'rule shrink: forall x: [m, n]. relu(x) => split<1, 2>(relu(x)).0;' \
      "rules.loom:4:6: rule shrink: the sides differ in shape: the left-hand side gives \[8, 8\], the right-hand side \[8, 2\]"
    ;;
  *)
    fail "unknown case $case_name"
    ;;
esac
echo "PASS: $case_name"
