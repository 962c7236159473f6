#!/usr/bin/env bash
# Builds Loom with clang, AddressSanitizer and UndefinedBehaviorSanitizer in a folder of its own and
# runs the whole test suite there. Any memory error, undefined behaviour or leak in Loom's code fails
# the test that hit it. The same build holds fuzzers that see into the instrumented libraries:
# scripts/fuzz.sh SECONDS build-sanitize runs them.
#
#   scripts/sanitize.sh [BUILD_DIR] [-- CTEST_ARGS...]      (default: build-sanitize)
#
# It takes about an hour on two cores, so CI does not run it.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build=build-sanitize
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build="$1"; shift; fi
[ "${1:-}" = "--" ] && shift

command -v clang++ >/dev/null || { echo "sanitize: clang++ is needed (scripts/setup.sh installs it)" >&2; exit 1; }
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DLOOM_SANITIZE=ON -DLOOM_CUDA=OFF >/dev/null
start=$(date +%s)
cmake --build "$build" -j"$(nproc)"
echo "sanitize: built in $(( $(date +%s) - start )) s"

# Leaks inside Qt, Graphviz and the system libraries they load are theirs (scripts/lsan.supp);
# Loom's own are reported. Tests that start MPI processes (label mpi) run without leak
# detection: MPI's plugins are unloaded before the leaks they leave could be attributed.
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
checks="abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
start=$(date +%s)
status=0
(cd "$build" && ASAN_OPTIONS="detect_leaks=1:$checks" ctest -j"$(nproc)" --timeout 1800 --output-on-failure -LE mpi "$@") || status=$?
(cd "$build" && ASAN_OPTIONS="detect_leaks=0:$checks" ctest -j"$(nproc)" --timeout 1800 --output-on-failure -L mpi "$@") || status=$?
echo "sanitize: tests ran in $(( $(date +%s) - start )) s"
exit $status
