#!/usr/bin/env bash
# Runs Loom's libFuzzer targets for as long as asked, each seeded from the repository's own files
# (and ONNX's node tests from libonnx-testdata), and prints for each its executions and whether it
# found a crash (saved as crash-* in the corpus folder, with the input that caused it).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [BUILD_DIR] [TARGET...]   (default: 60 s, build, all)
#
# In the default (gcc) build, clang links the fuzzers against uninstrumented libraries. The
# sanitizer build (scripts/sanitize.sh, folder build-sanitize) instruments every library with ASan,
# UBSan and coverage, which is what long runs should use.
set -uo pipefail

seconds=${1:-60}
build=${2:-build}
shift 2 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(parser json onnx)
onnx_tests=/usr/share/libonnx-testdata/data/node
root="$(cd "$(dirname "$0")/.." && pwd)"
cmake --build "$build" --target $(printf "loom_%s_fuzzer " "${targets[@]}") >/dev/null || {
  echo "fuzz: the fuzzers did not build (is clang++ installed? scripts/setup.sh installs it)" >&2
  exit 1
}
build_dir="$(cd "$build" && pwd)"
work="$build_dir/fuzz-corpora"
mkdir -p "$work/parser" "$work/json" "$work/onnx"
cp -r "$root"/specs/. "$work/parser/"
cp "$root"/tests/data/*.json "$root"/specs/machines/*.json "$work/json/"
for d in "$onnx_tests"/*/; do
  [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$work/onnx/$(basename "$d").onnx"
done

status=0
for target in "${targets[@]}"; do
  log="$work/$target.log"
  (cd "$work/$target" && "$build_dir/tests/loom_${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -max_len=8192 \
      -print_final_stats=1 . >"$log" 2>&1)
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  if [ "$rc" -eq 0 ]; then
    echo "$target: $execs executions in $seconds s, no crash"
  else
    echo "$target: CRASH after $execs executions (exit $rc); see $log and $work/$target/crash-*"
    status=1
  fi
done
exit $status
