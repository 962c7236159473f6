#!/usr/bin/env bash
# Regenerates and re-proves the bundled library of generated rules, specs/rules/generated.verified.json:
# `loom generate` on its defaults (Unity's op set, three activations and two weights, up to 3
# operators) with --prune-implied and 16 instances per numeric check, then `loom verify` of every
# candidate, without the result cache, over the shapes each rule declares. A rule Z3 does not prove stays in the library with its record
# (refuted or unknown), which `loom optimize` leaves out; the script lists them. The library's spec
# paths are written relative to specs/, so the file does not name this checkout.
#
#   scripts/bundle_rules.sh [BUILD_DIR]      (also: cmake --build BUILD_DIR --target bundled-rules)
set -euo pipefail

build=${1:-build}
root="$(cd "$(dirname "$0")/.." && pwd)"
loom="$build/cli/loom"
[ -x "$loom" ] || { echo "bundle_rules: $loom not found: build first (cmake -S . -B $build && cmake --build $build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Sixteen random instances per numeric check: a widened rule that needs a condition no typing
# states (`a <= n`) is dropped here, and stated again narrower, rather than refuted by Z3 later.
check_instances=16
echo "== generate (Unity op set, up to 3 operators, --prune-implied, --check-instances $check_instances)"
"$loom" generate --max-ops 3 --prune-implied --check-instances "$check_instances" -o "$work/generated.json" --out-spec "$work/generated.loom"
echo "== verify every rule with Z3"
status=0
"$loom" verify "$work/generated.json" -o "$work/generated.verified.json" --no-cache || status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 2 ] || { echo "bundle_rules: loom verify failed (exit $status); the bundled library is left as it was" >&2; exit 1; }
python3 - "$work/generated.verified.json" "$root/specs" "$root/specs/rules/generated.verified.json" <<'PY'
import json, os, sys
source, specs, target = sys.argv[1:4]
library = json.load(open(source))
library["specs"] = [os.path.relpath(p, specs) for p in library["specs"]]
tmp = target + ".tmp"
with open(tmp, "w") as f:
    json.dump(library, f, indent=1, sort_keys=True)
    f.write("\n")
os.replace(tmp, target)
unproved = [r for r in library["rules"] if r["verification"]["status"] != "proved"]
if unproved:
    print("not proved, left out of searches: " + ", ".join(f"{r['id']} ({r['verification']['status']})" for r in unproved))
print(f"{len(library['rules'])} rules written to {target}: {len(library['rules']) - len(unproved)} proved, {len(unproved)} not")
PY
