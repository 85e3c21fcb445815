#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with Debian's clang into
# ./build-fuzz and runs each for a while from its checked-in seeds.
#   scripts/fuzz.sh            the ctest smoke run: HERALD_FUZZ_SECONDS (15) per target
#   scripts/fuzz.sh 120        120 s per target
#   scripts/fuzz.sh 60 ws_command sse_cursor   only these targets
# A crash or sanitizer finding fails the run and leaves the input as
# build-fuzz/tests/fuzz/work/<target>/crash-*: add it to the target's
# regression test in tests/net (see tests/fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${HERALD_FUZZ_SECONDS:-15}}
shift || true
cxx=${HERALD_FUZZ_CXX:-clang++}
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DHERALD_BUILD_FUZZ=ON -DHERALD_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build build-fuzz -j2
cd build-fuzz
if [ $# -gt 0 ]; then
  regex="^fuzz\.($(IFS='|'; echo "$*"))\$"
  ctest --output-on-failure -j2 -R "$regex"
else
  ctest --output-on-failure -j2 -L fuzz
fi
