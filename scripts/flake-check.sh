#!/usr/bin/env bash
# Flake check, run by a developer before stopping (not part of CI): runs the
# normal stage's end-to-end and cluster tests (`ctest -L e2e`, which includes
# the e2e.cluster.* tests) three times against an existing build:
#   1. plainly;
#   2. with HERALD_IO_THREADS=6 in the environment (herald's --io-threads:
#      more I/O shards than cores, so replies and writes interleave otherwise);
#   3. while a busy loop started here keeps one core busy (killed by its PID
#      at the end).
# Reports every test that failed in any run (name and run) and exits 1 then;
# exits 0 when all three runs pass.
#
# Usage: scripts/flake-check.sh [BUILD_DIR] [ctest args...]
#   BUILD_DIR defaults to ./build (configured with -DHERALD_BUILD_TESTS=ON and
#   built; this script does not build). Further arguments go to each ctest
#   run, e.g. `scripts/flake-check.sh build -R 'e2e\.(ws|sse)$'`.
set -uo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
[[ $# -gt 0 ]] && shift
if [[ ! -f $build/CTestTestfile.cmake ]]; then
  echo "flake-check: no ctest build in '$build': configure and build it first, e.g." >&2
  echo "  cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release -DHERALD_BUILD_TESTS=ON && cmake --build $build -j2" >&2
  exit 2
fi
# The tests run from the source tree the build was configured from.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
src=${src:-.}
if [[ ! -d $src/tests/e2e/node_modules ]]; then
  echo "flake-check: $src/tests/e2e/node_modules is missing: run 'npm ci --prefix $src/tests/e2e' first" >&2
  exit 2
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/herald-flake-check.XXXXXX")
busy_pid=
cleanup() {
  if [[ -n $busy_pid ]]; then
    kill "$busy_pid" 2>/dev/null
    wait "$busy_pid" 2>/dev/null
  fi
}
failures=()
trap cleanup EXIT
trap 'echo "flake-check: interrupted; failed so far:"; printf "  %s\n" "${failures[@]}"; exit 130' INT TERM

# run NAME [env assignments...]: one ctest run; collects its failed tests.
run() {
  local name=$1
  shift
  local log=$logs/$name.log
  echo "flake-check: run '$name' ($*) ..."
  local started=$SECONDS
  (cd "$build" && env "$@" ctest -L e2e --output-on-failure --timeout 300 "${ctest_args[@]}") >"$log" 2>&1
  local rc=$?
  # ctest lists failures as "  <n> - <name> (Failed|Timeout|...)" after
  # "The following tests FAILED:".
  local failed
  failed=$(sed -n '/The following tests FAILED:/,$p' "$log" | sed -n 's/^[[:space:]]*[0-9]\+ - \([^ ]\+\) .*/\1/p')
  if [[ $rc -ne 0 && -z $failed ]]; then
    failed="(ctest exited $rc; see $log)"
  fi
  local t
  while IFS= read -r t; do
    [[ -n $t ]] && failures+=("$t [run: $name]")
  done <<<"$failed"
  echo "flake-check: run '$name' took $((SECONDS - started)) s, ctest exit $rc (log: $log)"
}

ctest_args=("$@")
run plain HERALD_FLAKE_CHECK=plain
run io-threads-6 HERALD_IO_THREADS=6
# A busy loop on one core for the third run (bash: no other tool needed).
bash -c 'while :; do :; done' &
busy_pid=$!
run busy-core HERALD_FLAKE_CHECK=busy-core
kill "$busy_pid" 2>/dev/null
wait "$busy_pid" 2>/dev/null
busy_pid=

if [[ ${#failures[@]} -eq 0 ]]; then
  echo "flake-check: all three runs passed"
  exit 0
fi
echo "flake-check: tests that failed at least once:"
printf '  %s\n' "${failures[@]}"
exit 1
