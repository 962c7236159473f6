#!/usr/bin/env bash
# Regenerates and re-proves the bundled libraries of generated rules:
# - specs/rules/generated.verified.json: `loom generate` on its defaults (Unity's op set, three
#   activations and two weights, up to 3 operators);
# - specs/rules/feature_maps.verified.json: ReLU, addition and concatenation over feature maps
#   (rank 4, three activations of one shape, up to 3 operators; ids f0001, ...), the laws of
#   convolutional networks' branch concatenations;
# each with --prune-implied and 16 instances per numeric check, then `loom verify` of every
# candidate, without the result cache, over the shapes each rule declares. A rule Z3 does not
# prove stays in its library with its record (refuted or unknown), which `loom optimize` leaves
# out; the script lists them. The libraries' spec paths are written relative to specs/, so the
# files do not name this checkout.
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

# bundle NAME DESCRIPTION GENERATE-OPTIONS...: generates, proves and writes specs/rules/NAME.verified.json.
bundle() {
  local name=$1 description=$2
  shift 2
  echo "== generate $name ($description, --prune-implied, --check-instances $check_instances)"
  "$loom" generate --max-ops 3 --prune-implied --check-instances "$check_instances" "$@" -o "$work/$name.json" --out-spec "$work/$name.loom"
  echo "== verify every rule of $name with Z3"
  local status=0
  "$loom" verify "$work/$name.json" -o "$work/$name.verified.json" --no-cache || status=$?
  [ "$status" -eq 0 ] || [ "$status" -eq 2 ] || { echo "bundle_rules: loom verify failed (exit $status); specs/rules/$name.verified.json is left as it was" >&2; exit 1; }
  python3 - "$work/$name.verified.json" "$root/specs" "$root/specs/rules/$name.verified.json" <<'PY'
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
}

bundle generated "Unity op set, up to 3 operators"
bundle feature_maps "relu, ewadd, concat over rank-4 maps, up to 3 operators" \
  --ops relu,ewadd,concat --parallel none --id-prefix f --inputs 'x: [2, 4, 3, 5], y: [2, 4, 3, 5], u: [2, 4, 3, 5]'
