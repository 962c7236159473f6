#!/usr/bin/env bash
# Runs Loom's libFuzzer targets (built with clang when it is installed) for as long as asked, each
# seeded from the repository's own files, and prints for each its executions and whether it found
# a crash (saved as crash-* in the corpus folder, with the input that caused it).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [BUILD_DIR]      (default: 60 s, build)
set -uo pipefail

seconds=${1:-60}
build=${2:-build}
root="$(cd "$(dirname "$0")/.." && pwd)"
cmake --build "$build" --target loom_parser_fuzzer loom_json_fuzzer >/dev/null || {
  echo "fuzz: the fuzzers did not build (is clang++ installed? scripts/setup.sh installs it)" >&2
  exit 1
}
build_dir="$(cd "$build" && pwd)"
work="$build_dir/fuzz-corpora"
mkdir -p "$work/parser" "$work/json"
cp -r "$root"/specs/. "$work/parser/"
cp "$root"/tests/data/*.json "$root"/specs/machines/*.json "$work/json/"

status=0
for target in parser json; do
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
