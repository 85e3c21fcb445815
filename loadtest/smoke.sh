#!/usr/bin/env bash
# loadtest.smoke (ctest): starts herald on a free loopback port and runs
# herald-loadtest against it with ~1,000 connections (SSE and WebSocket
# mixed, 2 worker processes, 2 source addresses): fanout, spread and a small
# reconnect storm, a few seconds each at a low rate; then small reconnect
# storms over Centrifugo's protocol in JSON (also with delta "fossil", whose
# deltas the generator applies) and in Protobuf, and one over WebSocket with
# permessage-deflate. herald-loadtest exits
# non-zero on any loss, duplicate, reordering, gap notice or connect
# failure, which fails this test. herald is stopped by its PID.
#
# usage: smoke.sh path/to/herald path/to/herald-loadtest
set -euo pipefail

herald=${1:?usage: smoke.sh HERALD LOADTEST}
loadtest=${2:?usage: smoke.sh HERALD LOADTEST}
work=$(mktemp -d)
log=$work/herald.log
pid=

cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$herald" --port=0 --host=127.0.0.1 --insecure >"$log" 2>&1 &
pid=$!

port=
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
  [[ -n $port ]] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "smoke: herald exited before listening:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
if [[ -z $port ]]; then
  echo "smoke: herald did not log 'listening on 127.0.0.1:<port>' within 10 s" >&2
  cat "$log" >&2
  exit 1
fi
echo "smoke: herald pid $pid on 127.0.0.1:$port"

common=(--target "127.0.0.1:$port" --server-pids "$pid" --transport mix --workers 2
        --source-addrs 127.0.0.1,127.0.0.2 --ramp-rate 2000 --duration 60 --quiet)
run() {
  local name=$1
  shift
  echo "smoke: $name"
  if ! "$loadtest" "${common[@]}" --channel-prefix "smoke-$name" "$@"; then
    echo "smoke: $name FAILED" >&2
    echo "--- herald log (tail) ---" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
}

run fanout --scenario fanout --connections 1000 --publications 60 --rate 20
run spread --scenario spread --connections 1000 --channels 100 --publications 300 --rate 100
run storm --scenario reconnect-storm --connections 400 --channels 10 --publications 200 --rate 100
run centrifugo --scenario reconnect-storm --transport centrifugo --connections 200 --channels 10 --publications 100 --rate 100
run centrifugo-delta --scenario reconnect-storm --transport centrifugo --centrifugo-delta --connections 200 --channels 10 --publications 100 --rate 100 --payload-bytes 1024
run ws-deflate --scenario reconnect-storm --transport ws --ws-deflate --connections 200 --channels 10 --publications 100 --rate 100 --payload-bytes 1024
run centrifugo-protobuf --scenario reconnect-storm --transport centrifugo-protobuf --connections 200 --channels 10 --publications 100 --rate 100

if ! kill -0 "$pid" 2>/dev/null; then
  echo "smoke: herald died during the run" >&2
  cat "$log" >&2
  exit 1
fi
echo "smoke: 5 passed, 0 failed"
