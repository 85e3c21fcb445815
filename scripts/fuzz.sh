#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with Debian's clang into
# ./build-fuzz and runs each for a while from its checked-in seeds.
#   scripts/fuzz.sh            the ctest smoke run: HERALD_FUZZ_SECONDS (15) per target
#   scripts/fuzz.sh 120        120 s per target
#   scripts/fuzz.sh 60 ws_command sse_cursor   only these targets
#   HERALD_FUZZ_KEEP=1 scripts/fuzz.sh 600     10 minutes per target, then keep what it
#       found as seeds: inputs that add coverage are merged (libFuzzer -merge=1) into
#       tests/fuzz/corpus/<target>/, crash inputs copied there (commit them with the fix);
#       loadtest/run-benchmarks.sh runs this (FUZZ_SECONDS)
# A crash or sanitizer finding fails the run and leaves the input as
# build-fuzz/tests/fuzz/work/<target>/crash-*: add it to the target's
# regression test in tests/wire or tests/net/http (see tests/fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${HERALD_FUZZ_SECONDS:-15}}
shift || true
cxx=${HERALD_FUZZ_CXX:-clang++}
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DHERALD_BUILD_FUZZ=ON -DHERALD_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build build-fuzz -j2
cd build-fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(http_request ws_command ws_frame channel_name sse_cursor publish_body json_depth centrifugo_command centrifugo_protobuf ws_upgrade fossil_delta ws_inflate tags_filter)
fi
status=0
regex="^fuzz\.($(IFS='|'; echo "${targets[*]}"))\$"
ctest --output-on-failure -j2 --timeout $((seconds + 120)) -R "$regex" || status=$?
if [ "${HERALD_FUZZ_KEEP:-0}" = 1 ]; then
  for t in "${targets[@]}"; do
    seeds=../tests/fuzz/corpus/$t
    work=tests/fuzz/work/$t
    before=$(ls "$seeds" | wc -l)
    tests/fuzz/fuzz-"$t" -merge=1 -rss_limit_mb=2048 -max_len=16384 "$seeds" "$work/corpus" \
      >"$work/merge.log" 2>&1 || echo "fuzz.sh: merge of $t failed (see build-fuzz/$work/merge.log)" >&2
    for crash in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
      [ -e "$crash" ] && cp "$crash" "$seeds/"
    done
    echo "fuzz.sh: $t: $before -> $(ls "$seeds" | wc -l) seeds"
  done
fi
exit $status
