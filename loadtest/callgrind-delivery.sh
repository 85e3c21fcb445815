#!/usr/bin/env bash
# User-space instructions per delivery (docs/tuning.md "How it was measured"):
# valgrind's callgrind counts instructions, which does not depend on what else
# the machine is doing. For each transport, two fresh servers under callgrind
# (--scheduler.max-threads=1 --io-threads=1) get CONNECTIONS subscribers of
# one channel and LOW, then HIGH publications; the difference of the totals
# divided by the extra deliveries is the cost of one delivery (start-up,
# connecting, publishing over HTTP and shutdown cancel out).
#
# usage: loadtest/callgrind-delivery.sh HERALD [LOADTEST] [TRANSPORTS]
#   HERALD     the server binary to measure (e.g. build/bin/herald, or an older build)
#   LOADTEST   herald-loadtest (default: build/bin/herald-loadtest next to this tree)
#   TRANSPORTS "sse ws" (default)
#   env: CONNECTIONS (500), LOW (10), HIGH (40); LOADTEST_ARGS, more loadtest
#        options (e.g. "--ws-deflate --payload-bytes 2048"); HERALD_ARGS, more
#        server options (e.g. "--ws-deflate-min-bytes=0"); KEEP, a folder that
#        receives each run's callgrind output (TRANSPORT-PUBLICATIONS.out), to
#        compare with callgrind_annotate --inclusive=yes
# needs: valgrind. Prints one line per transport.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
herald=${1:?usage: callgrind-delivery.sh HERALD [LOADTEST] [TRANSPORTS]}
loadtest=${2:-$root/build/bin/herald-loadtest}
transports=${3:-sse ws}
N=${CONNECTIONS:-500}
LOW=${LOW:-10}
HIGH=${HIGH:-40}
work=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# run TRANSPORT PUBLICATIONS: prints the total instructions of one server run.
run() {
  local transport=$1 pubs=$2 log=$work/herald.log out=$work/callgrind.out
  : >"$log"
  rm -f "$out"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$herald" --port=0 --host=127.0.0.1 \
    --insecure --max-connections-per-ip=0 --scheduler.max-threads=1 --io-threads=1 \
    ${HERALD_ARGS:-} >"$log" 2>&1 &
  pid=$!
  local port=
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
    [[ -n $port ]] && break
    sleep 0.1
  done
  [[ -n $port ]] || { echo "callgrind-delivery: server did not start" >&2; cat "$log" >&2; exit 1; }
  "$loadtest" --target "127.0.0.1:$port" --scenario fanout --transport "$transport" \
    --connections "$N" --publications "$pubs" --rate 20 --quiet --drain-seconds 10 \
    --connect-timeout 60 ${LOADTEST_ARGS:-} >"$work/loadtest.txt" 2>&1 ||
    { echo "callgrind-delivery: loadtest failed" >&2; cat "$work/loadtest.txt" >&2; }
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
  if [[ -n ${KEEP:-} ]]; then mkdir -p "$KEEP" && cp "$out" "$KEEP/$transport-$pubs.out"; fi
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out" | head -n1
}

for t in $transports; do
  low=$(run "$t" "$LOW")
  high=$(run "$t" "$HIGH")
  extra=$(( (HIGH - LOW) * N ))
  echo "$t: $(( (high - low) / extra )) instructions per delivery" \
       "(totals $low with $LOW, $high with $HIGH publications, $N subscribers; $herald" \
       "${HERALD_ARGS:-}${LOADTEST_ARGS:+; loadtest $LOADTEST_ARGS})"
done
