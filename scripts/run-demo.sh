#!/usr/bin/env bash
# The README's first command: installs what is missing, builds in Release, and
# runs herald on port 8080 (in-process mode) with the demo publisher feeding
# it payment-stream events. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh -DHERALD_BUILD_TESTS=OFF

port="${PORT:-8080}"
# Loopback only: Herald has no authentication yet (issue #4).
./build/bin/herald --host=127.0.0.1 --port="$port" &
herald_pid=$!
publisher_pid=""
cleanup() {
  [ -n "$publisher_pid" ] && kill "$publisher_pid" 2>/dev/null || true
  kill "$herald_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

for _ in $(seq 1 50); do
  curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

channels=$(node demo/publisher.mjs --print-channels)
first_stream=$(echo "$channels" | grep '^stream:' | head -1)
first_user=$(echo "$channels" | grep '^user:' | head -1)
cat <<EOT

Herald is running on http://127.0.0.1:$port (in-process mode), fed by demo/publisher.mjs.
Channels of the demo:
$(echo "$channels" | sed 's/^/  /')

Watch with curl:
  curl -N "http://127.0.0.1:$port/v1/sse?channel=$first_stream&channel=$first_user"
Watch in a browser:
  http://127.0.0.1:$port/demo?channels=$first_stream,$first_user

EOT
node demo/publisher.mjs --url "http://127.0.0.1:$port" --interval-ms 1000 &
publisher_pid=$!
wait "$herald_pid"
